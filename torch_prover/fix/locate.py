"""Where each schema's tags are written: schema blocks -> their ``.Input``/``.Output`` calls,
directly or through the generator functions the block fills itself from.

ONNX declares a schema as ``ONNX_OPERATOR_SET_SCHEMA(Op, version, OpSchema()...)``; many
take their inputs from a shared generator (``.FillUsing(MathDocGenerator("addition"))``,
a function returning a lambda over ``OpSchema& schema``), so one call site can declare a
parameter of several (op, version) pairs. ``read_tree`` finds every block, follows its
generators (a call, a lambda, a helper that is handed the schema), and records for each
formal parameter the call that declares it, or why it cannot say (``Unlocated``): a
declaration is never guessed.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from ..inputs import Bound, InputError, read_text
from ..vocab import Tag
from .cpp_source import CppFile, CppSyntaxError, Kind, Span
from .scope import applies, bind, in_loop, schema_lambdas, schema_param, schema_vars

DEFS = Path("onnx") / "defs"

MACROS = {"ONNX_OPERATOR_SET_SCHEMA": "", "ONNX_ML_OPERATOR_SET_SCHEMA": "ai.onnx.ml",
          "ONNX_TRAINING_OPERATOR_SET_SCHEMA": "ai.onnx.training",
          "ONNX_PREVIEW_OPERATOR_SET_SCHEMA": "ai.onnx.preview",
          "ONNX_PREVIEW_TRAINING_OPERATOR_SET_SCHEMA": "ai.onnx.preview.training"}
"""Schema macros (name, version, impl) and the domain each registers in (schema.h)."""
EX_DOMAINS = {"ONNX_DOMAIN": "", "AI_ONNX_ML_DOMAIN": "ai.onnx.ml",
              "AI_ONNX_TRAINING_DOMAIN": "ai.onnx.training",
              "AI_ONNX_PREVIEW_DOMAIN": "ai.onnx.preview",
              "AI_ONNX_PREVIEW_TRAINING_DOMAIN": "ai.onnx.preview.training"}
"""``ONNX_OPERATOR_SET_SCHEMA_EX(name, domain, domain_str, ver, dbg, impl)``: domain_str."""
TAGS = {"OpSchema::Differentiable": Tag.DIFF, "OpSchema::NonDifferentiable": Tag.NONDIFF,
        "OpSchema::Unknown": Tag.UNKNOWN}
TAG_TEXT = {Tag.DIFF: "OpSchema::Differentiable", Tag.NONDIFF: "OpSchema::NonDifferentiable"}
TAG_ARG = 7
"""Input/Output(n, name, description, type_str, param_option = Single, is_homogeneous =
true, min_arity = 1, differentiation_category = Unknown): the tag is argument 7."""
DEFAULTS = ("OpSchema::Single", "true", "1")
MAX_DEPTH = 8


class Unlocated(Enum):
    """Why a parameter's declaration cannot be pointed at (reported, never guessed)."""
    NO_BLOCK = "no schema block"
    NO_CALL = "no call declares it"
    IN_LOOP = "generated in a loop"
    RUNTIME_INDEX = "index is a runtime expression"
    TAG_EXPRESSION = "tag argument is an expression"
    UNRESOLVED_GENERATOR = "generator not found"
    AMBIGUOUS = "declared by several calls"
    CONDITIONAL = "declared under a condition the reader cannot evaluate"
    NAME_MISMATCH = "the call names another parameter"
    UNPARSABLE = "the source cannot be parsed"


@dataclass(frozen=True)
class CallSite:
    """One ``.Input(...)``/``.Output(...)`` call: the token of its name in its file."""
    path: str      # relative to the repository root: onnx/defs/math/defs.cc
    token: int     # index of the Input/Output identifier in the file's tokens
    line: int


@dataclass(frozen=True)
class Declaration:
    io: str                   # "input" / "output"
    index: int
    name: str | None          # the name literal, None when it is an expression
    tag: Tag | None           # None: the tag argument is an expression (see problem)
    site: CallSite
    generator: str | None     # the generator function it is in; None: in the block itself
    problem: Unlocated | None = None
    variadic: bool = False    # OpSchema::Variadic: node inputs from here on are all this one


@dataclass(frozen=True)
class Block:
    op: str
    domain: str
    version: int
    path: str
    line: int
    declarations: tuple[Declaration, ...]
    problems: tuple[tuple[Unlocated, str], ...] = ()   # scope-wide: a runtime index, ...

    def find(self, io: str, index: int) -> tuple[Declaration | None, Unlocated | None, str]:
        """The one declaration of ``io index``, or why there is none."""
        found = [d for d in self.declarations if d.io == io and d.index == index]
        if not found:   # a later instance of a variadic parameter: the last formal
            last = max((d for d in self.declarations if d.io == io), default=None,
                       key=lambda d: d.index)
            found = [last] if last is not None and last.variadic and last.index < index else []
        where = f"{self.op}-{self.version} ({self.path}:{self.line})"
        if len(found) > 1:
            lines = ", ".join(f"{d.site.path}:{d.site.line}" for d in found)
            return None, Unlocated.AMBIGUOUS, f"{where}: {io} {index} declared at {lines}"
        if found and found[0].problem is not None:
            d = found[0]
            return None, d.problem, f"{where}: {io} {index} at {d.site.path}:{d.site.line}"
        if found:
            return found[0], None, ""
        for problem, detail in self.problems:
            return None, problem, f"{where}: {detail}"
        return None, Unlocated.NO_CALL, f"{where}: no .{io.capitalize()}({index}, ...) call"


@dataclass
class SourceTree:
    """Every ``.cc`` under onnx/defs, its schema blocks and its function definitions."""
    root: Path
    files: dict[str, CppFile] = field(default_factory=dict)
    functions: dict[str, list[tuple[CppFile, int, int, int]]] = field(default_factory=dict)
    prototypes: dict[str, list[tuple[CppFile, int]]] = field(default_factory=dict)
    blocks: list[Block] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def block(self, op: str, domain: str, version: int) -> Block | None:
        return next((b for b in self.blocks if (b.op, b.domain, b.version)
                     == (op, domain, version)), None)

    def users(self, site: CallSite) -> list[tuple[Block, Declaration]]:
        """Every (block, declaration) whose parameter ``site`` declares."""
        return [(b, d) for b in self.blocks for d in b.declarations if d.site == site]


def not_ours_to_read(directory: str, names: list[str]) -> set[str]:
    """The entries of ``directory`` the reader skips: symlinks (never followed out of the
    tree) and anything neither a directory nor a regular file (a FIFO would block the read).
    Also ``shutil.copytree``'s ``ignore``, so the patch check copies what was read."""
    skipped = set()
    for name in names:
        try:
            mode = os.lstat(os.path.join(directory, name)).st_mode
        except OSError:
            skipped.add(name)
            continue
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            skipped.add(name)
    return skipped


def source_files(root: Path) -> tuple[list[Path], list[str]]:
    """(the .cc/.h files under ``root``/onnx/defs, what was skipped and why), walked
    without following a symlink."""
    found, skipped = [], []
    for directory, dirs, files in os.walk(root / DEFS):
        skip = not_ours_to_read(directory, dirs + files)
        for name in sorted(skip):
            where = Path(directory, name)
            if where.suffix in (".cc", ".h") or name in dirs:
                mode = os.lstat(where).st_mode
                kind = "a symlink, not followed" if stat.S_ISLNK(mode) else "not a regular file"
                skipped.append(f"{where.relative_to(root).as_posix()}: {kind}")
        dirs[:] = sorted(d for d in dirs if d not in skip)
        found += [Path(directory, f) for f in files
                  if f not in skip and Path(f).suffix in (".cc", ".h")]
    return sorted(found), skipped


def read_tree(root: str | Path) -> SourceTree:
    """Read a checkout (the repository root, holding onnx/defs)."""
    tree = SourceTree(Path(root))
    paths, tree.errors = source_files(tree.root)
    for path in paths:
        rel = path.relative_to(tree.root).as_posix()
        try:
            tree.files[rel] = CppFile(rel, read_text(path, Bound.CPP))
        except CppSyntaxError as exc:
            tree.errors.append(str(exc))
        except InputError as exc:
            tree.errors.append(f"{rel}: {exc.problem}")
    for f in tree.files.values():
        _index_functions(tree, f)
    for f in tree.files.values():
        if f.path.endswith(".cc"):
            _read_blocks(tree, f)
    return tree


# ----------------------------------------------------------------------------- functions
_NOT_FUNCTIONS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype"}


def _index_functions(tree: SourceTree, f: CppFile) -> None:
    """Function definitions ``name(params) [const] {body}`` and lambda variables
    ``name = [..](params) {body}`` outside any function body: name -> (file, params-open,
    body-open, name token)."""
    toks, k = f.tokens, 0
    while k < len(toks):
        tok = toks[k]
        if tok.kind is Kind.IDENT and tok.text not in _NOT_FUNCTIONS and f.is_punct(k + 1, "(") \
                and not (f.is_punct(k - 1, ".") or f.is_punct(k - 1, "->")):
            after = f.pairs[k + 1] + 1
            while f.is_ident(after, "const") or f.is_ident(after, "noexcept"):
                after += 1
            if f.is_punct(after, "{"):
                tree.functions.setdefault(tok.text, []).append((f, k + 1, after, k))
                k = f.pairs[after] + 1
                continue
            if f.is_punct(after, ";"):   # a prototype: where defaults are written
                tree.prototypes.setdefault(tok.text, []).append((f, k + 1))
        if tok.kind is Kind.IDENT and f.is_punct(k + 1, "=") and f.is_punct(k + 2, "["):
            params = f.pairs[k + 2] + 1
            if f.is_punct(params, "(") and f.is_punct(f.pairs[params] + 1, "{"):
                body = f.pairs[params] + 1
                tree.functions.setdefault(tok.text, []).append((f, params, body, k))
                k = f.pairs[body] + 1
                continue
        if tok.kind is Kind.PUNCT and tok.text == "{" and not _opens_scope(f, k):
            k = f.pairs[k] + 1   # an initializer or class body: no definitions we follow
            continue
        k += 1


def _opens_scope(f: CppFile, k: int) -> bool:
    """A ``{`` of ``namespace X {`` or ``extern "C" {``: definitions continue inside."""
    j = k - 1
    while f.is_ident(j) or f.is_punct(j, "::"):
        if f.is_ident(j, "namespace"):
            return True
        j -= 1
    return f.tokens[j].kind is Kind.STRING and f.is_ident(j - 1, "extern")


def _resolve(tree: SourceTree, f: CppFile, name: str) -> tuple[CppFile, int, int, int] | None:
    """The definition of ``name``: in the same file, else the same directory, else the one
    definition anywhere; None when there is none or the choice would be a guess."""
    found = tree.functions.get(name, [])
    for pick in ([d for d in found if d[0] is f],
                 [d for d in found if Path(d[0].path).parent == Path(f.path).parent], found):
        if len(pick) == 1:
            return pick[0]
        if pick:
            return None
    return None


# ----------------------------------------------------------------------------- blocks
def _read_blocks(tree: SourceTree, f: CppFile) -> None:
    toks = f.tokens
    for k, tok in enumerate(toks):
        if tok.kind is not Kind.IDENT or not f.is_punct(k + 1, "("):
            continue
        if tok.text in MACROS:
            args = f.arguments(k + 1)
            if len(args) != 3:
                continue
            name, ver, impl, domain = args[0], args[1], args[2], MACROS[tok.text]
        elif tok.text == "ONNX_OPERATOR_SET_SCHEMA_EX":
            args = f.arguments(k + 1)
            if len(args) != 6 or f.source(args[2]) not in EX_DOMAINS:
                continue
            name, ver, impl, domain = args[0], args[3], args[5], EX_DOMAINS[f.source(args[2])]
        else:
            continue
        version = f.int_literal(ver)
        if version is None or name.first != name.last:
            continue
        walk = _Walk(tree)
        walk.scan(f, impl, None, {}, 0, frozenset())
        tree.blocks.append(Block(f.source(name), domain, version, f.path, f.line(k),
                                 tuple(walk.found), tuple(walk.problems)))


@dataclass
class _Walk:
    """One block's walk through its impl and generators, collecting declarations.

    ``env`` binds a generator's parameters to the literal arguments of the call that
    entered it (``ReduceOpGenerator("max", EMPTY_MIN, true, true, ...)``), so a declaration
    under ``if (axes_input)`` applies to the blocks that pass true and to no other."""
    tree: SourceTree
    found: list[Declaration] = field(default_factory=list)
    problems: list[tuple[Unlocated, str]] = field(default_factory=list)

    def scan(self, f: CppFile, scope: Span, generator: str | None, env: dict[str, str],
             depth: int, seen: frozenset) -> None:
        bound = schema_vars(f, scope)
        for k in range(scope.first, scope.last + 1):
            tok = f.tokens[k]
            if tok.kind is not Kind.IDENT or not f.is_punct(k + 1, "("):
                continue
            member = f.is_punct(k - 1, ".") or f.is_punct(k - 1, "->")
            if member and tok.text in ("Input", "Output"):
                runs = applies(f, k, scope, env)
                if runs is not False:
                    _declaration(f, k, scope, generator, runs, self.found, self.problems)
            elif member and tok.text == "FillUsing":
                args = f.arguments(k + 1)
                if len(args) == 1 and applies(f, k, scope, env) is not False:
                    self.fill_using(f, args[0], env, depth, seen)
            elif not member and bound and tok.text not in _NOT_FUNCTIONS and \
                    any(f.source(a) in bound for a in f.arguments(k + 1)):
                self.enter(f, k, env, depth, seen, helper=True)

    def fill_using(self, f: CppFile, arg: Span, env, depth, seen) -> None:
        """FillUsing(arg): a call of a generator function, a lambda, or a generator's name."""
        if f.is_punct(arg.first, "["):   # FillUsing([](OpSchema& schema) {...})
            for body in schema_lambdas(f, arg):
                self.scan(f, body, None, env, depth + 1, seen)
            return
        k = arg.first
        while f.is_ident(k) and f.is_punct(k + 1, "::"):
            k += 2
        if f.is_ident(k) and (k == arg.last or (f.is_punct(k + 1, "(")
                                               and f.pairs[k + 1] == arg.last)):
            self.enter(f, k, env, depth, seen)
            return
        self.problems.append((Unlocated.UNRESOLVED_GENERATOR,
                              f"FillUsing({f.source(arg)[:40]}) at {f.path}:{f.line(arg.first)}"
                              " is no call of a named generator"))

    def enter(self, f: CppFile, k: int, env, depth, seen, helper: bool = False) -> None:
        """Into the definition of the function named at token ``k`` (called or named)."""
        name = f.tokens[k].text
        definition = _resolve(self.tree, f, name)
        if definition is None:
            if not helper:
                self.problems.append((Unlocated.UNRESOLVED_GENERATOR,
                                      f"generator {name} used at {f.path}:{f.line(k)}: no "
                                      "single definition found"))
            return
        g, params, body, name_tok = definition
        key = (g.path, name_tok)
        if key in seen or depth >= MAX_DEPTH:
            return
        seen = seen | {key}
        inner = bind(g, params, f, k, env)
        for proto, proto_params in self.tree.prototypes.get(name, ()):   # defaults
            for key, value in bind(proto, proto_params, f, k, env).items():
                inner.setdefault(key, value)
        scope = Span(body + 1, g.pairs[body] - 1)
        if schema_param(g, params):     # a helper / a generator taking the schema itself
            self.scan(g, scope, name, inner, depth + 1, seen)
            return
        lambdas = schema_lambdas(g, scope)
        for span in lambdas:
            self.scan(g, span, name, inner, depth + 1, seen)
        returned = [j + 1 for j in range(scope.first, scope.last) if g.is_ident(j, "return")
                    and g.is_ident(j + 1) and g.is_punct(j + 2, "(")]
        for j in returned if not lambdas else ():   # return OtherGenerator(...);
            self.enter(g, j, inner, depth + 1, seen)
        if not lambdas and not returned and not helper:
            self.problems.append((Unlocated.UNRESOLVED_GENERATOR,
                                  f"generator {name} ({g.path}:{g.line(name_tok)}) returns no "
                                  "lambda over OpSchema&"))


def _declaration(f: CppFile, k: int, scope: Span, generator: str | None, applies: bool | None,
                 found: list[Declaration], problems: list[tuple[Unlocated, str]]) -> None:
    io = f.tokens[k].text.lower()
    args = f.arguments(k + 1)
    site = CallSite(f.path, k, f.line(k))
    where = f"{f.path}:{site.line}"
    if len(args) < 4:   # Input(n, FormalParameter): not written in onnx/defs today
        problems.append((Unlocated.NO_CALL, f".{f.tokens[k].text}(...) at {where} takes a "
                                            "FormalParameter, not name/type arguments"))
        return
    index = f.int_literal(args[0])
    if index is None:
        problems.append((Unlocated.RUNTIME_INDEX, f"{io} index {f.source(args[0])!r} at "
                                                  f"{where} is a runtime expression"))
        return
    tag, problem = Tag.UNKNOWN, None
    if len(args) > TAG_ARG:
        tag = TAGS.get(f.source(args[TAG_ARG]))
        if tag is None:
            problem = Unlocated.TAG_EXPRESSION
    if applies is None:
        problem = Unlocated.CONDITIONAL
    if in_loop(f, k, scope):
        problem = Unlocated.IN_LOOP
    variadic = len(args) > 4 and f.source(args[4]) == "OpSchema::Variadic"
    found.append(Declaration(io, index, f.string_literal(args[1]), tag, site, generator, problem,
                             variadic))


def tag_table(block: Block) -> dict[tuple[str, int], tuple[str | None, Tag | None]]:
    """(io, index) -> (name, tag) of every declaration: what the check compares."""
    return {(d.io, d.index): (d.name, d.tag) for d in block.declarations}
