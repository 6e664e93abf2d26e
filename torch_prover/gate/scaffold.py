"""``new-case OP``: a catalogue case scaffold written from the op's schema.

A new op ships without a case, so the gate cannot prove its tags; this writes the start
of one where the catalogue looks for it (``torch_prover/cases/<op>.py`` in a torch_prover
checkout, or ``-o FILE``): the op's latest schema version as a reference op
(``cases/reference.py``: a new op has no PyTorch function that exports to it) whose
parameters are the schema's inputs (optional ones ``None``) and attributes at their
defaults, a case whose inputs are typed from the type constraints (``Float`` where a
floating type is allowed, in float32 when double is not; ``Int``/``Bool`` otherwise), and
the module itself left to the author, with TODOs. Until the author deletes its
``SCAFFOLD`` line the catalogue refuses the module in one line (``cases/__init__.py``),
so a scaffold is never proved as if it were a case; the reference raises until written.
Nothing in it cites the tags under test: a declared verdict needs the math.
"""
from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import onnx
import onnx.defs
import onnx.helper

from ..case import DEFAULT_OPSET
from ..errors import UsageError

_FLOATS = ("tensor(double)", "tensor(float)", "tensor(float16)", "tensor(bfloat16)")
_INTS = ("tensor(int64)", "tensor(int32)", "tensor(int16)", "tensor(int8)", "tensor(uint8)",
         "tensor(uint16)", "tensor(uint32)", "tensor(uint64)")
_ATTR = {  # AttrType name -> (annotation, placeholder value for a required attribute)
    "FLOAT": ("float", "1.0"), "INT": ("int", "1"), "STRING": ("str", '""'),
    "INTS": ("list[int]", "[1]"), "FLOATS": ("list[float]", "[1.0]"),
}


def snake(op: str) -> str:
    """``FlexAttention`` -> ``flex_attention``; ``LSTM`` -> ``lstm``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", op).lower()


def _ident(name: str) -> str:
    name = re.sub(r"\W", "_", name)
    return name + "_" if keyword.iskeyword(name) or not name.isidentifier() else name


@dataclass(frozen=True)
class _Input:
    name: str        # the schema's
    var: str         # the Python parameter
    optional: bool
    variadic: bool
    types: tuple[str, ...]

    def spec(self) -> tuple[str, str]:
        """(the input spec, its comment)."""
        types = set(self.types)
        shown = [t.removeprefix("tensor(").removesuffix(")") for t in
                 sorted(self.types, key=lambda t: (not t.startswith("tensor("), t))]
        more = f" and {len(shown) - 6} more" if len(shown) > 6 else ""
        what = f"{self.name}: {', '.join(shown[:6])}{more}"
        if types & set(_FLOATS):
            return "Float(2, 3)", f"{what}. TODO: a shape (and values) valid for the op"
        ints = [t for t in _INTS if t in types]
        if ints:
            dtype = ints[0][len("tensor("):-1]
            return (f"Int(2, 3, high=4, dtype=torch.{dtype})",
                    f"{what}. TODO: a shape and values valid for {self.name}")
        if types == {"tensor(bool)"}:
            return "Bool(2, 3)", f"{what}. TODO: a shape valid for the op"
        return "Float(2, 3)", (f"{what}. TODO: no tensor spec fits these types: a "
                               "Custom(...) input, or list the op in a MISSING table")


def _inputs(schema) -> list[_Input]:
    types = {c.type_param_str: tuple(sorted(c.allowed_type_strs))
             for c in schema.type_constraints}
    opt = onnx.defs.OpSchema.FormalParameterOption
    return [_Input(p.name, _ident(p.name), p.option == opt.Optional, p.option == opt.Variadic,
                   types.get(p.type_str, (p.type_str,))) for p in schema.inputs]


def _attributes(schema) -> tuple[list[str], list[str], list[str]]:
    """(signature parameters, call arguments, comments) of the attributes, by name."""
    params, args, notes = [], [], []
    for a in sorted(schema.attributes.values(), key=lambda a: a.name):
        kind = a.type.name
        var = _ident(a.name)
        if kind not in _ATTR:
            notes.append(f"attribute {a.name} ({kind}) is not one the default emit writes: "
                         "pass emit= (cases/reference.py)")
            continue
        ann, placeholder = _ATTR[kind]
        if a.required:
            params.append(f"{var}: {ann} | None = None")
            args.append(f"{var}={placeholder}")
            notes.append(f"attribute {a.name} ({ann}) is required: the case passes it "
                         f"(TODO: its value)")
            continue
        if not a.default_value.type:   # optional, no default: not set unless passed
            params.append(f"{var}: {ann} | None = None")
            continue
        value = _python(onnx.helper.get_attribute_value(a.default_value))
        if isinstance(value, list):   # torch.library takes no list default
            params.append(f"{var}: {ann} | None = None")
            notes.append(f"attribute {a.name} defaults to {value!r}: None leaves it unset, "
                         "so the node takes that default; the reference applies it")
            continue
        params.append(f"{var}: {ann} = {value!r}")
    return params, args, notes


def _python(value):
    """An attribute's default as the Python literal a reader expects: text for bytes, and
    a float at the float32 precision ONNX stores (0.2, not 0.20000000298023224)."""
    import numpy as np
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, float):
        return float(str(np.float32(value)))
    if isinstance(value, list):
        return [_python(v) for v in value]
    return value


def _input_params(ins: list[_Input]) -> list[str]:
    """The inputs in the schema's order (the node's), an optional one ``Tensor | None``,
    defaulting to None only after the last required one (Python's rule)."""
    last = max((k for k, i in enumerate(ins) if not i.optional), default=-1)
    return [f"{i.var}: torch.Tensor" if not i.optional else
            f"{i.var}: torch.Tensor | None" + (" = None" if k > last else "")
            for k, i in enumerate(ins)]


def _signature(head: str, items: list[str], tail: str, width: int = 92) -> list[str]:
    """``head + items + tail`` on one line, or one item a line when that is too long."""
    one = head + ", ".join(items) + tail
    if len(one) <= width or not items:
        return [one]
    indent = " " * (len(head) - len(head.lstrip()) + 8)
    return [head] + [f"{indent}{item}," for item in items] + [
        " " * (len(head) - len(head.lstrip())) + tail.lstrip()]


def _free(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    k = 2
    while f"{name}{k}" in taken:
        k += 1
    return f"{name}{k}"


def render(op: str) -> tuple[str, str]:
    """(the scaffold's text, its case name) for ``op``'s latest schema version."""
    from ..cases import all_cases
    from ..cases.reference import LIVE
    schema = onnx.defs.get_schema(op)
    s = snake(op)
    case = _free(f"{s}_basic", {c.name for c in all_cases()})
    ref = _free(f"{s}_reference", set(LIVE))
    ins = _inputs(schema)
    attr_params, attr_args, notes = _attributes(schema)
    params = _input_params(ins) + attr_params
    n_out = len(schema.outputs)
    ret = "torch.Tensor" if n_out == 1 else f"tuple[{', '.join(['torch.Tensor'] * n_out)}]"
    notes += [f"input {i.name} is variadic: the default emit takes one tensor per parameter "
              "(pass emit= for more)" for i in ins if i.variadic]
    floats = [i for i in ins if set(i.types) & set(_FLOATS)]
    float32 = floats and not any("tensor(double)" in i.types for i in floats)
    opset = schema.since_version if schema.since_version > DEFAULT_OPSET else None
    specs = [i.spec() for i in ins]
    lines = _module(op, schema, case, ref, params, ret, ins, attr_args, notes, specs,
                    float32, opset)
    return "\n".join(lines) + "\n", case


def _module(op, schema, case, ref, params, ret, ins, attr_args, notes, specs, float32,
            opset) -> list[str]:
    label = f"{op}-{schema.since_version}"
    spec_names = sorted({sp.split("(")[0] for sp, _ in specs} | {"Case"})
    call = ", ".join([i.var for i in ins] + attr_args)
    lines = [
        f'"""{op}: a catalogue case scaffold, written by `torch-prover new-case {op}` from',
        f"the schema {label} of the installed onnx ({onnx.__version__}).",
        "",
        "The catalogue refuses this module until its SCAFFOLD line is deleted. To complete it:",
        f"1. write `{ref}` from the ONNX spec of {op}, with differentiable torch ops",
        f"   (cases/reference.py: how a reference op becomes one {op} node). If a PyTorch",
        f"   function exports to {op} itself, call it in `{case}` instead, drop the",
        '   reference and make the case kind="natural", without translation=;',
        "2. give every input a shape and values valid for the op (the TODOs below);",
        f"3. delete the SCAFFOLD line, then run `pytest -k {case}` (the catalogue's checks)",
        f"   and `torch-prover prove {op} --case {case}`.",
        "Declare a verdict (expect=) only with the math that decides it.",
        '"""',
        "from __future__ import annotations",
        "",
        "import torch",
        "",
        f"from torch_prover.case import {', '.join(spec_names)}",
        "from torch_prover.cases.reference import reference_op",
        "",
        f'SCAFFOLD = "write {ref} and the inputs (the TODOs), then delete its SCAFFOLD line"',
        "",
        "",
        f'@reference_op("{op}"' + (f", opset={opset})" if opset else ")"),
        *_signature(f"def {ref}(", params, f") -> {ret}:"),
        f'    """{label}, from the ONNX spec, with differentiable torch ops."""',
    ]
    lines += [f"    # {n}" for n in notes]
    lines += [f'    raise NotImplementedError("TODO: {op}\'s function (a new-case scaffold)")',
              "", "",
              *_signature(f"def {case}(", [i.var for i in ins], "):"),
              *_signature(f"    return {ref}(", call.split(", ") if call else [], ")"),
              "", "",
              "CASES = [",
              f'    Case("{op}", "{case}", {case},',
              "         ("]
    lines += [f"             {sp},  # {why}" for sp, why in specs]
    names = ", ".join(f'"{i.name}"' for i in ins) + ("," if len(ins) == 1 else "")
    fields = [f"({names})", 'kind="reference"', f"translation={ref}.translation"]
    if opset:   # newer than the exporter: the raised route (cases/reference.py)
        fields.append(f"opset={opset}")
    if float32:
        fields += ["float_dtype=torch.float32", f'notes="{label} allows no double"']
    lines += ["         ),"] + [f"         {f}," for f in fields[:-1]]
    lines += [f"         {fields[-1]}),", "]"]
    return lines


def default_path(cwd: Path, op: str) -> Path:
    """``torch_prover/cases/<op>.py`` of the checkout at ``cwd`` (the next free name)."""
    folder = cwd / "torch_prover" / "cases"
    stem = snake(op)
    path, k = folder / f"{stem}.py", 2
    while path.exists():
        path, k = folder / f"{stem}_{k}.py", k + 1
    return path


def target(output: str | None, cwd: Path, op: str,
           trees: Sequence[tuple[str, str | Path | None]] = ()) -> Path | None:
    """Where the scaffold goes (None: stdout, ``-o -``), checked before anything is
    written: never over an existing file, inside the catalogue only by default in a
    checkout, and ``-o`` held to the output rule (``preflight.outputs_checked``: not in
    torch-prover's own package, nor in ``trees`` -- the checkout's evidence, the cache)."""
    from .. import preflight
    from ..output.ownership import Holds
    if output == "-":
        return None
    if output is None:
        if not preflight.in_checkout(cwd):
            raise UsageError("not in a torch_prover checkout (the catalogue is its "
                             "torch_prover/cases/): give -o FILE, or -o - for stdout")
        path = default_path(cwd, op)
        preflight.writable_file(path, "-o")
        return path
    path = Path(output)
    if output.strip() and (path.exists() or path.is_symlink()):   # an empty one too
        raise UsageError(f"-o {output}: exists; new-case writes a new file only, never "
                         "over one: give another name")
    if preflight.in_checkout(cwd):
        trees = [*trees, ("the checkout's evidence", cwd / "models")]
    preflight.outputs_checked([preflight.Output("-o", output, Holds.CASE_SCAFFOLD)],
                              trees=trees)
    return path


def write_new(path: Path, text: str) -> None:
    """Create ``path`` with ``text``; never over a file that appeared since the check
    (exclusive create), and no half-written scaffold left behind."""
    try:
        with open(path, "x", encoding="utf-8") as f:
            f.write(text)
    except FileExistsError:
        raise UsageError(f"-o {path}: exists; new-case writes a new file only") from None
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def command(op: str, output: str | None, cwd: Path, stdout,
            trees: Sequence[tuple[str, str | Path | None]] = ()) -> int:
    """``new-case OP [-o FILE]``: the scaffold to its file (or stdout), and what next;
    ``trees``: directories ``-o`` must not be in (the cache)."""
    from .. import preflight
    from ..tags.schema import canonical_op
    op = canonical_op(op)
    path = target(output, cwd, op, trees)
    text, case = render(op)
    if path is None:
        stdout.write(text)
        return 0
    write_new(path, text)
    version = onnx.defs.get_schema(op).since_version
    # the catalogue is discovered from a checkout's torch_prover/cases/ only: a scaffold
    # written anywhere else is no case until it is moved there
    cases = path.resolve().parent
    in_catalogue = cases.name == "cases" and cases.parent.name == "torch_prover" and \
        preflight.in_checkout(cases.parent.parent)
    if path.is_absolute() and path.is_relative_to(cwd):
        path = path.relative_to(cwd)
    stdout.write(f"wrote {path}: a case scaffold for {op}-{version} (case {case})\n"
                 + ("" if in_catalogue else
                    "it is not in a checkout's torch_prover/cases/, where the catalogue is "
                    "found: move it there first\n")
                 + "next: write its reference and inputs (the TODOs), delete its SCAFFOLD "
                 "line, then run\n"
                 f"  pytest -k {case}\n"
                 f"  torch-prover prove {op} --case {case}\n"
                 "  torch-prover verify-all --versions all && torch-prover verify-all\n"
                 "and commit the evidence it writes under models/ (a commit of its own); "
                 "until the TODOs are done the catalogue refuses the module in one line\n")
    return 0

