"""Gathering a catalogue case's source for a standalone proof script.

The model (function, Module class or factory) is looked up in its module's syntax tree;
every module-level name it uses is pulled in the same way (imports, helper functions,
constants), dependencies first. A reference op (see :mod:`torch_prover.cases.reference`) becomes
its reference function plus a small ``as_onnx_op`` helper and a
``custom_translation_table`` entry, so the script needs only torch, onnx and onnxscript.
"""
from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import sys
import textwrap
from dataclasses import dataclass, field
from typing import Any


from ..errors import CaseError

NAMESPACE = "proof"
"""torch.library namespace of the custom ops a generated reference script defines."""

RESERVED = {"torch", "onnx", "onnxscript", "functools", "Dim", "model", "gen", "model_proto",
             "TRANSLATION", "as_onnx_op", "onnx_opset", "REFERENCES", "Model"}


class ScriptGenError(CaseError):
    """The case uses something a standalone script cannot reproduce; says what."""


# ============================================================================ source index
@dataclass(frozen=True)
class _Binding:
    kind: str              # import | relative | def | assign
    text: str = ""         # import line / source segment
    node: Any = None
    target: tuple[str, str] | None = None   # relative import: (module, attribute)


@functools.lru_cache(maxsize=None)
def _index(modname: str) -> tuple[str, dict[str, _Binding]]:
    """Module-level bindings of ``modname``, from its source."""
    module = sys.modules.get(modname) or importlib.import_module(modname)
    source = inspect.getsource(module)
    tree = ast.parse(source)
    out: dict[str, _Binding] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                bound = a.asname or a.name.split(".")[0]
                alias = f" as {a.asname}" if a.asname else ""
                out[bound] = _Binding("import", f"import {a.name}{alias}")
        elif isinstance(stmt, ast.ImportFrom):
            for a in stmt.names:
                bound = a.asname or a.name
                if stmt.level:
                    base = importlib.util.resolve_name("." * stmt.level + (stmt.module or ""),
                                                       module.__package__)
                    out[bound] = _Binding("relative", target=(base, a.name))
                else:
                    out[bound] = _Binding("import", f"from {stmt.module} import {a.name}"
                                                    + (f" as {a.asname}" if a.asname else ""))
        elif isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            out[stmt.name] = _Binding("def", _segment(source, stmt), stmt)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        out[n.id] = _Binding("assign", _segment(source, stmt), stmt)
    return source, out


def _segment(source: str, node: ast.AST) -> str:
    """The statement's source, decorators included."""
    lines = source.splitlines()
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return "\n".join(lines[first - 1:node.end_lineno])


def _names(code: str) -> list[str]:
    tree = ast.parse(textwrap.dedent(code))
    return list(dict.fromkeys(n.id for n in ast.walk(tree) if isinstance(n, ast.Name)))


def _expr(source: str, node: ast.AST) -> str:
    return ast.get_source_segment(source, node) or ast.unparse(node)


# ============================================================================ the collector
ONNX_OPSET_SOURCE = '''\
def onnx_opset(version: int = 25, domain: str = ""):
    """The ONNX ops of one opset, as onnxscript (torch.onnx's exporter) writes them."""
    if domain in ("", "ai.onnx"):
        return getattr(onnxscript.onnx_opset, f"opset{version}")
    return onnxscript.values.Opset(domain, version)'''

AS_ONNX_OP_SOURCE = '''\
REFERENCES = {}


def _copy(out):
    """Outputs of a custom op may not alias its inputs."""
    if isinstance(out, torch.Tensor):
        return out.detach().clone(memory_format=torch.contiguous_format)
    return tuple(_copy(o) for o in out)


def as_onnx_op(qualname, reference, fake=None):
    """``reference`` run eagerly (autograd differentiates it); while torch.onnx.export
    traces, the custom op ``qualname`` instead, which TRANSLATION lowers to one ONNX node."""
    REFERENCES[qualname] = (reference, fake or reference)
    namespace, name = qualname.split("::")
    if not hasattr(getattr(torch.ops, namespace), name):   # once per process

        def kernel(*args, **kwargs):
            with torch.no_grad():
                return _copy(REFERENCES[qualname][0](*args, **kwargs))

        def fake_kernel(*args, **kwargs):
            return _copy(REFERENCES[qualname][1](*args, **kwargs))

        schema = torch.library.infer_schema(reference, mutates_args=())
        torch.library.custom_op(qualname, kernel, mutates_args=(), schema=schema
                                ).register_fake(fake_kernel)
    custom = getattr(getattr(torch.ops, namespace), name).default

    @functools.wraps(reference)
    def call(*args, **kwargs):
        if torch.compiler.is_exporting():
            return custom(*args, **kwargs)
        return reference(*args, **kwargs)

    call.op = custom
    return call'''


REFERENCE_MODULE = "torch_prover.cases.reference"
"""Where reference_op lives: inside the catalogue package, but not a case module."""


@dataclass
class Collector:
    """The pieces of one script: import lines, definitions in dependency order (each once),
    the reference ops met on the way and the translation table entries they need."""

    imports: dict[str, None] = field(default_factory=dict)
    blocks: list[str] = field(default_factory=list)
    done: set[tuple[str, str]] = field(default_factory=set)
    defined: set[str] = field(default_factory=set)
    references: dict[int, str] = field(default_factory=dict)   # id(ReferenceOp) -> name
    translation: dict[str, str] = field(default_factory=dict)  # key source -> value source
    helpers: set[str] = field(default_factory=set)

    def need_all(self, code: str, modname: str, skip: set[str] = frozenset()) -> None:
        for name in _names(code):
            if name not in skip:
                self.need(name, modname)

    def need(self, name: str, modname: str) -> None:
        """Make ``name`` (as bound in ``modname``) defined in the script, dependencies first."""
        key = (modname, name)
        if key in self.done:
            return
        self.done.add(key)
        source, bindings = _index(modname)
        b = bindings.get(name)
        if b is None:
            return   # a builtin, a local or a parameter name
        if b.kind == "import":
            self.imports[b.text] = None
            return
        if b.kind == "relative":
            self._relative(name, *b.target)
            return
        value = vars(sys.modules[modname]).get(name)
        from ..cases.reference import ReferenceOp
        if isinstance(value, ReferenceOp):
            self._reference(name, value, modname)
            return
        if name in RESERVED:
            raise ScriptGenError(f"{modname}.{name} would clash with a name the proof script uses")
        self.need_all(b.text, modname, skip={name})
        if name not in self.defined:
            self.blocks.append(b.text)
            self.defined.add(name)

    def _relative(self, name: str, module: str, attr: str) -> None:
        if module == REFERENCE_MODULE:   # the machinery, not a case module
            if attr != "onnx_opset":
                raise ScriptGenError(f"the model uses {module}.{attr}, which a standalone "
                                     "script cannot import")
            self.onnx_opset()
        elif module.startswith("torch_prover.cases."):
            if attr != name:
                raise ScriptGenError(f"cannot render the alias {name} of {module}.{attr}")
            self.need(attr, module)
        else:
            raise ScriptGenError(f"the model uses {module}.{attr}, which a standalone script "
                                 "cannot import")

    def onnx_opset(self) -> None:
        if "onnx_opset" not in self.helpers:
            self.helpers.add("onnx_opset")
            self.imports["import onnxscript.onnx_opset"] = None
            self.imports["import onnxscript.values"] = None
            self.blocks.append(ONNX_OPSET_SOURCE)

    # ------------------------------------------------------------------ reference ops
    def _reference(self, name: str, ref: Any, modname: str) -> None:
        """A reference op: its reference function, ``as_onnx_op``, and a translation entry."""
        source, bindings = _index(modname)
        b = bindings[name]
        node = b.node
        if isinstance(node, ast.FunctionDef):
            call = next((d for d in node.decorator_list if isinstance(d, ast.Call)
                         and _callee(d) == "reference_op"), None)
            if call is None:
                raise ScriptGenError(f"{modname}.{name}: cannot find its reference_op decorator")
            ref_name = f"{name}_reference"
            body = _renamed_def(source, node, ref_name)
            self.need_all(body, modname, skip={node.name})
            self.blocks.append(body)
        else:
            call = node.value
            if not (isinstance(call, ast.Call) and _callee(call) == "reference_op"
                    and len(call.args) >= 2 and isinstance(call.args[1], ast.Name)):
                raise ScriptGenError(f"{modname}.{name}: expected name = reference_op(op, fn, ...)")
            ref_name = call.args[1].id
            self.need(ref_name, modname)
        keywords = {k.arg: _expr(source, k.value) for k in call.keywords}
        self._as_onnx_op()
        fake = keywords.get("fake")
        if fake:
            self.need_all(fake, modname)
        qualname = f"{NAMESPACE}::{ref.name}"
        self.blocks.append(f"{name} = as_onnx_op({qualname!r}, {ref_name}"
                           + (f", fake={fake}" if fake else "") + ")")
        self.defined.add(name)
        self.references[id(ref)] = name
        if "emit" in keywords:
            self.need_all(keywords["emit"], modname)
            self.translation[f"{name}.op"] = keywords["emit"]
        else:
            self.onnx_opset()
            self.blocks.append(_default_emit(name, ref, source, node, ref_name))
            self.translation[f"{name}.op"] = f"{name}_to_onnx"

    def _as_onnx_op(self) -> None:
        if "as_onnx_op" not in self.helpers:
            self.helpers.add("as_onnx_op")
            self.imports["import functools"] = None
            self.blocks.append(AS_ONNX_OP_SOURCE)

    def translation_entry(self, key: Any, value: Any) -> None:
        """One entry of the case's custom translation table."""
        from ..cases.reference import LIVE, NAMESPACE as TP_NS
        ns, opname = key.namespace, key._opname
        if ns == TP_NS:
            ref = LIVE.get(opname)
            if ref is None:
                raise ScriptGenError(f"no reference op behind torch.ops.{ns}.{opname}")
            if id(ref) not in self.references:
                mod = sys.modules[ref.reference.__module__]
                gname = next((n for n, v in vars(mod).items() if v is ref), None)
                if gname is None:
                    raise ScriptGenError(f"cannot find the name of reference op {ref.name}")
                self.need(gname, mod.__name__)
            return    # _reference added the entry
        fn_name = getattr(value, "__name__", "")
        mod = getattr(value, "__module__", "")
        if "<" in getattr(value, "__qualname__", "<") or mod not in sys.modules:
            raise ScriptGenError(f"cannot render the translation of {key}: not a module-level "
                                 "function")
        self.need(fn_name, mod)
        self.translation[f"torch.ops.{ns}.{opname}.{key._overloadname}"] = fn_name


def _renamed_def(source: str, node: ast.FunctionDef, new: str) -> str:
    """The function's source without decorators, renamed, its signature re-aligned."""
    lines = source.splitlines()[node.lineno - 1:node.end_lineno]
    shift = len(new) - len(node.name)
    lines[0] = lines[0].replace(f"def {node.name}(", f"def {new}(", 1)
    signature_end = node.body[0].lineno - node.lineno      # lines before the body
    for k in range(1, signature_end):
        if lines[k][:1].isspace():
            lines[k] = " " * shift + lines[k] if shift >= 0 else lines[k][-shift:]
    return "\n".join(lines)


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _default_emit(name: str, ref: Any, source: str, node: Any, ref_name: str) -> str:
    """The translation reference.py derives from the signature, as code: tensor parameters
    are the node's inputs (bare in the signature), the others its attributes (annotated)."""
    fn = node if isinstance(node, ast.FunctionDef) else None
    if fn is None:
        fn = ast.parse(textwrap.dedent(inspect.getsource(ref.reference))).body[0]
        source = textwrap.dedent(inspect.getsource(ref.reference))
    args = fn.args.args
    defaults = [None] * (len(args) - len(fn.args.defaults)) + list(fn.args.defaults)
    params, attrs, optional = [], [], False
    for a, d in zip(args, defaults):
        dflt = f" = {_expr(source, d)}" if d is not None else ""
        if a.arg in ref.inputs:
            params.append(a.arg + dflt.replace(" = ", "="))
            continue
        ann = _expr(source, a.annotation) if a.annotation is not None else "int"
        params.append(f"{a.arg}: {ann}{dflt}")
        none_ok = d is not None and isinstance(d, ast.Constant) and d.value is None
        optional |= none_ok
        value = a.arg
        if "bool" in ann:
            value = f"None if {a.arg} is None else int({a.arg})" if none_ok else f"int({a.arg})"
        attrs.append((a.arg, value))
    op_call = f"onnx_opset({ref.opset}" + (f", {ref.domain!r}" if ref.domain else "") + \
        f").{ref.onnx_op}"
    inputs = ", ".join(ref.inputs)
    head = f"def {name}_to_onnx({', '.join(params)}):\n"
    doc = f'    """{ref_name} as one ONNX {ref.onnx_op} node (torch.onnx custom translation)."""\n'
    if optional:
        body = (f"    attributes = dict({', '.join(f'{k}={v}' for k, v in attrs)})\n"
                f"    return {op_call}({inputs}{', ' if inputs else ''}"
                "**{k: v for k, v in attributes.items() if v is not None})")
    else:
        kw = ", ".join(f"{k}={v}" for k, v in attrs)
        body = f"    return {op_call}({', '.join(x for x in (inputs, kw) if x)})"
    return head + doc + body


# ============================================================================ inputs
