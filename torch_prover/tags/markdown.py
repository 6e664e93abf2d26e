"""What ONNX's generated docs (Operators.md, Changelog.md) share: fenced code blocks, and
the body of one op section (``#### Version``, ``#### Inputs`` ... with ``<dt>`` entries).

Why one module: both files are written by ``onnx/defs/gen_doc.py`` from the same schema
objects, so an op section reads the same in either; only the file's outline differs
(operators_md.py, changelog_md.py). Everything unexpected is a ``DocsError`` of one line,
``path:line: Op: why`` -- a misspelt ``#### Inptus`` is named, not skipped.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from ..errors import ProverError
from ..inputs import Bound, InputError, read_bytes
from .schema import DIFF, NONDIFF, UNKNOWN, Formal, SchemaTags, UnknownOpError

__all__ = ["DocsError", "MissingFromDocs", "OpSection", "DocsTags", "SUBSECTIONS",
           "fence_open", "fence_closes", "unfenced", "UnterminatedFence", "walk", "check_whole",
           "read_text", "norm_domain", "strip_domain"]


class DocsError(ProverError, ValueError):
    """The file is not ONNX docs, or is malformed/truncated (one line: file:line: why)."""


class MissingFromDocs(UnknownOpError):
    """The op (or its inputs/outputs) is not documented in this docs file."""


SUBSECTIONS = ("Version", "Attributes", "Inputs", "Outputs", "Type Constraints", "Examples",
               "Sample Implementation")
"""Every ``#### `` heading of an op section in the 7 Operators.md files (1.8.0 .. main) and
Changelog.md under /work/shared/onnx-docs; any other is an error, not a silent skip."""

_DEFAULT_DOMAINS = ("", "ai.onnx")
_PARAM_RE = re.compile(r"^<dt><tt>([^<]+)</tt>(?: \(([^)]*)\))? : (.+)</dt>$")
_VERSION_RE = re.compile(r"^This version of the operator has been (available|deprecated) since "
                         r"version (\d+) of the (?:default ONNX|'[\w.]+') operator set\.$")
_UNVERSIONED = "No versioning maintained for experimental ops."
_MARKS = {"optional", "variadic", "heterogeneous", "differentiable", "non-differentiable"}
_SUBSECTION_RE = re.compile(r"^#### ([A-Za-z ]+?)(?: \(\d+ - (?:\d+|&#8734;)\))?$")
"""A subsection heading; Inputs and Outputs may carry their arity: ``(1 - 3)``, ``(1 - &#8734;)``."""


# ----------------------------------------------------------------------- fences (CommonMark)
def fence_open(line: str) -> tuple[str, int] | None:
    """(fence character, run length) if ``line`` opens a fenced code block, else None.

    CommonMark 0.31.2, section 4.5 "Fenced code blocks": up to 3 spaces of indentation,
    then at least 3 backticks or at least 3 tildes; after a backtick run the info string
    may not contain a backtick (so ``` ```a``` ``` on one line is a code span, not a
    fence). Four spaces of indentation make an indented line, never a fence. Container
    blocks (lists, block quotes) are not modelled: gen_doc writes fences at top level."""
    body = line.lstrip(" ")
    if len(line) - len(body) > 3 or not body[:1] in ("`", "~"):
        return None
    char = body[0]
    run = len(body) - len(body.lstrip(char))
    if run < 3 or (char == "`" and "`" in body[run:]):
        return None
    return char, run


def fence_closes(line: str, char: str, run: int) -> bool:
    """The closing fence (same section): up to 3 spaces, at least ``run`` of ``char``,
    then only spaces or tabs."""
    body = line.lstrip(" ")
    if len(line) - len(body) > 3:
        return False
    n = len(body) - len(body.lstrip(char))
    return n >= run and not body[n:].strip(" \t")


class UnterminatedFence(DocsError):
    """A code block that never closes; the parser adds the op it opened in."""

    def __init__(self, path: str, line: int, why: str):
        super().__init__(f"{path}:{line}: {why}")
        self.line, self.why = line, why


def unfenced(path: str, lines: list[str]) -> Iterator[tuple[int, str]]:
    """(line number, line) of every line outside fenced code blocks (the examples), right
    stripped. A fence still open at the end of the file, or at an op heading (gen_doc never
    writes one inside code), is an UnterminatedFence naming the line that opened it."""
    fence: tuple[str, int] | None = None
    opened = 0
    for no, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if fence is not None:
            if fence_closes(line, *fence):
                fence = None
            elif line.startswith('### <a name="'):
                raise UnterminatedFence(path, opened, f"unterminated {fence[0] * fence[1]} code "
                                                      f"block: it runs into the op heading at "
                                                      f"line {no}")
            continue
        fence = fence_open(line)
        if fence is not None:
            opened = no
            continue
        yield no, line
    if fence is not None:
        raise UnterminatedFence(path, opened, f"unterminated {fence[0] * fence[1]} code block "
                                              "(truncated file?)")


def walk(path: str, lines: list[str], step: Callable[[int, str], None],
         current: Callable[[], "OpSection | None"]) -> None:
    """Feed every unfenced line to ``step``; an unterminated fence is named with the op
    section it opened in (``current()`` then: every later line was swallowed)."""
    try:
        for no, line in unfenced(path, lines):
            step(no, line)
    except UnterminatedFence as exc:
        sec = current()
        raise (exc if sec is None else sec.fail(exc.line, exc.why)) from None


def check_whole(path: str, text: str) -> None:
    """gen_doc ends every file with a line break: a file cut inside a line is truncated,
    even where what is left parses (between two op sections)."""
    if text and not text.endswith("\n"):
        raise DocsError(f"{path}:{text.count(chr(10)) + 1}: the last line has no line break "
                        "(truncated file?)")


def read_text(path, what: str = "ONNX docs") -> str:
    """The file's text (``inputs.read_bytes``: a regular file, at most ``Bound.DOCS``,
    judged before it is read); a DocsError saying it is not ``what`` otherwise."""
    p = str(path)
    try:
        data = read_bytes(path, Bound.DOCS)
    except InputError as e:
        raise DocsError(f"{p}:0: {e.problem}") from None
    try:
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as e:
        raise DocsError(f"{p}:1: not {what}: not UTF-8 text ({e.reason})") from None


def norm_domain(domain: str) -> str:
    return "" if domain in _DEFAULT_DOMAINS else domain


def strip_domain(name: str, domain: str) -> str:
    return name[len(domain) + 1:] if domain and name.startswith(domain + ".") else name


# ----------------------------------------------------------------------- one op section
@dataclass
class _Param:
    name: str
    marks: tuple[str, ...]
    type_str: str
    line: int


@dataclass
class OpSection:
    """One op section (Operators.md: the latest version; Changelog.md: one version), read
    line by line with ``feed`` and checked whole with ``finish``."""

    path: str
    domain: str
    name: str
    line: int
    deprecated: bool = False
    since_version: int | None = None
    inputs: list[_Param] = field(default_factory=list)
    outputs: list[_Param] = field(default_factory=list)
    types: dict[str, tuple[str, ...]] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    _sub: str = ""
    _expect_version: bool = False
    _dl_open: int = 0

    def fail(self, line: int, why: str) -> DocsError:
        return DocsError(f"{self.path}:{line}: {self.name}: {why}")

    def feed(self, no: int, line: str) -> None:
        """One unfenced line of the section's body."""
        if line.startswith("#### "):
            self._close_dl()
            m = _SUBSECTION_RE.match(line)
            sub = m.group(1) if m else ""
            if sub not in SUBSECTIONS:
                close = difflib.get_close_matches(line[5:].strip(), SUBSECTIONS, n=1, cutoff=0.6)
                raise self.fail(no, f"unknown subsection heading {line!r}"
                                    + (f" (did you mean '#### {close[0]}'?)" if close else
                                       f"; expected one of {', '.join(SUBSECTIONS)}"))
            if sub in self.seen:
                raise self.fail(no, f"'#### {sub}' appears twice in one op section")
            self.seen.add(sub)
            self._sub, self._expect_version = sub, sub == "Version"
        elif line.startswith("#"):
            raise self.fail(no, f"unexpected heading {line[:60]!r} inside an op section")
        elif self._expect_version and line.strip():
            self._expect_version = False
            self._version_line(no, line)
        elif line.startswith("<dl>"):
            self._dl_open = no
        elif line.startswith("</dl>"):
            self._dl_open = 0
        elif line.startswith("<dt") and self._sub in ("Inputs", "Outputs", "Type Constraints"):
            self._entry(no, line)

    def _close_dl(self) -> None:
        if self._dl_open:
            raise self.fail(self._dl_open, "unclosed <dl> list")

    def _version_line(self, no: int, line: str) -> None:
        m = _VERSION_RE.match(line)
        if m:
            self.since_version = int(m.group(2))
            self.deprecated = self.deprecated or m.group(1) == "deprecated"
        elif line != _UNVERSIONED:
            raise self.fail(no, f"unreadable Version line {line[:60]!r}")

    def _entry(self, no: int, line: str) -> None:
        sub = self._sub
        m = _PARAM_RE.match(line)
        if not m:
            raise self.fail(no, f"unreadable {sub} entry {line[:80]!r}")
        name, marks, type_str = m.group(1), m.group(2), m.group(3).strip()
        if sub == "Type Constraints":
            if marks:
                raise self.fail(no, f"type constraint {name} has markers ({marks})")
            self.types[name] = tuple(sorted(t.strip() for t in type_str.split(", ")))
            return
        tokens = tuple(t.strip() for t in marks.split(",")) if marks else ()
        bad = [t for t in tokens if t not in _MARKS]
        if bad or len(set(tokens)) != len(tokens) or (
                {"differentiable", "non-differentiable"} <= set(tokens)) or (
                {"optional", "variadic"} <= set(tokens)):
            raise self.fail(no, f"{sub.lower()[:-1]} {name}: unreadable markers ({marks})")
        (self.inputs if sub == "Inputs" else self.outputs).append(_Param(name, tokens, type_str, no))

    def finish(self, end: int) -> None:
        """The section ended (next op heading, or end of file at line ``end``): is it whole?"""
        if self._dl_open:
            raise self.fail(self._dl_open, "unclosed <dl> list (truncated file?)")
        if "Version" not in self.seen:
            raise self.fail(self.line, "section has no '#### Version' (truncated or malformed)")
        if not self.deprecated and not self.outputs:
            raise self.fail(self.line, "section documents no outputs (truncated or malformed)")
        for p in self.inputs + self.outputs:
            if "(" not in p.type_str and p.type_str not in self.types:
                raise self.fail(p.line, f"type {p.type_str} of {p.name} is not in its Type "
                                        f"Constraints (truncated or malformed; section ends "
                                        f"at line {end})")

    @property
    def stub(self) -> bool:
        """A deprecated version gen_doc writes without its inputs and outputs (it omits every
        section of a deprecated schema after ``#### Version``: Scatter-11, Upsample-10)."""
        return self.deprecated and not (self.inputs or self.outputs)

    def tags(self, source: str) -> SchemaTags:
        if self.stub:
            raise MissingFromDocs(f"{self.name!r} is documented as deprecated since version "
                                  f"{self.since_version} in {source}, without inputs/outputs")
        return SchemaTags(self.name, self.domain, int(self.since_version or 1),
                          _formals("input", self.inputs, self.types),
                          _formals("output", self.outputs, self.types), source=source)


def _formals(io: str, params: list[_Param], types: dict[str, tuple[str, ...]]) -> tuple[Formal, ...]:
    out = []
    for i, p in enumerate(params):
        tag = DIFF if "differentiable" in p.marks else NONDIFF if "non-differentiable" in p.marks \
            else UNKNOWN
        option = "optional" if "optional" in p.marks else "variadic" if "variadic" in p.marks \
            else "single"
        out.append(Formal(io, i, p.name, tag, option, types.get(p.type_str, (p.type_str,))))
    return tuple(out)


# ----------------------------------------------------------------------- the TagSource
class DocsTags:
    """The tags of one docs file: ``versions[(domain, op)]`` lists its sections, oldest
    first (Operators.md: one per op). ``tags`` is a TagSource (engine/prove.py)."""

    kind, a_kind = "docs", "ONNX docs"

    @classmethod
    def from_file(cls, path) -> "DocsTags":
        """Read ``path`` as this kind of file (the subclass's ``from_text``); a DocsError
        otherwise."""
        return cls.from_text(str(path), read_text(path, cls.a_kind))

    def __init__(self, path: str, versions: dict[tuple[str, str], list[OpSection]],
                 text: str = ""):
        import hashlib
        self.path = path
        # what a record says its tags came from: the file's name and the digest of its
        # text, the same on every machine (the path as typed is not)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        self.source = f"{self.kind} ({Path(path).name}, sha256 {digest})"
        self._versions = versions

    def domains(self) -> list[str]:
        """The domains the file documents ops of ('' for ai.onnx)."""
        return sorted({dom for dom, _ in self._versions})

    def ops(self, domain: str = "") -> list[str]:
        """Ops documented for ``domain`` (ai.onnx by default), deprecated ones included."""
        d = norm_domain(domain)
        return sorted(name for dom, name in self._versions if dom == d)

    def _sections(self, op: str, domain: str) -> list[OpSection]:
        d = norm_domain(domain)
        secs = self._versions.get((d, op))
        if secs is None:
            close = difflib.get_close_matches(op, self.ops(d), n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            elsewhere = sorted(dom for dom, name in self._versions if name == op and dom != d)
            if elsewhere:
                hint = f"; it is documented in domain {', '.join(elsewhere)}"
            raise MissingFromDocs(f"{op!r} is not documented in {self.source}"
                                  + (f" for domain {d!r}" if d else "") + hint)
        return secs

    def section(self, op: str, opset: int | None, domain: str = "") -> OpSection:
        """The section whose tags are in force at ``opset`` (latest when None)."""
        return self._sections(op, domain)[-1]

    def tags(self, op: str, opset: int | None = None, domain: str = "") -> SchemaTags:
        return self.section(op, opset, domain).tags(self.source)

    def missing_parameters(self, op: str, domain: str = "", opset: int | None = None) -> list[str]:
        """Formal parameters of onnx.defs's schema (at the documented version in force, else
        the latest) that the docs do not list for ``op``, as ``"input 2 (B)"``. Reported,
        never guessed."""
        import onnx.defs
        d = norm_domain(domain)
        try:
            sec = self.section(op, opset, d)
        except UnknownOpError:
            sec = None
        try:
            schema = (onnx.defs.get_schema(op, sec.since_version, d) if sec and sec.since_version
                      else onnx.defs.get_schema(op, d))
        except onnx.defs.SchemaError:
            return []
        have = {("input", p.name) for p in sec.inputs} | {("output", p.name) for p in sec.outputs} \
            if sec else set()
        return [f"{io} {i} ({p.name})" for io, params in (("input", schema.inputs),
                                                           ("output", schema.outputs))
                for i, p in enumerate(params) if (io, p.name) not in have]
