"""What the autograd witness is the autograd *of*, and what PyTorch itself says about a derivative.

Why: a verdict's words must not claim more than the evidence. In a reference case the
"autograd" witness is autograd of the case's own reference implementation, not of a PyTorch
operator; and "PyTorch has no derivative here" is false when it is only the case's module
that does not track the tensor (``torch.clamp`` does differentiate ``min``/``max``). So:

- ``autograd_source``: ``pytorch operator aten.X`` (read from the exported node's
  ``pkg.torch.onnx.fx_node`` metadata, which the dynamo exporter writes), ``reference
  implementation (case code)`` for a reference case, or a TorchScript export's words when
  the node does not name its operator;
- ``derivative_fact``: whether the operator's entry in PyTorch's own ``derivatives.yaml``
  (shipped in the installed torch under ``torchgen/packaged/autograd``) gives a formula for
  an argument of that name -- read as text, line by line (no YAML dependency).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from ..compat import StrEnum
from functools import lru_cache
from pathlib import Path

import onnx

REFERENCE = "reference implementation (case code)"
_TARGET = re.compile(r"target=torch\.ops\.([A-Za-z0-9_]+)\.([A-Za-z0-9_]+)(?:\.([A-Za-z0-9_]+))?")
_NO_FORMULA = ("non_differentiable", "not_implemented(")


def _target(node: onnx.NodeProto | None) -> tuple[str, str, str] | None:
    """(namespace, operator, overload) of the torch call the dynamo exporter made this node
    from (``aten``, ``quantized_decomposed``, ``higher_order``...)."""
    if node is None:
        return None
    for prop in node.metadata_props:
        if prop.key == "pkg.torch.onnx.fx_node":
            m = _TARGET.search(prop.value)
            if m:
                return m.group(1), m.group(2), m.group(3) or "default"
    return None


def aten_target(node: onnx.NodeProto | None) -> tuple[str, str] | None:
    """(operator, overload) of the aten call the node was exported from, or None."""
    t = _target(node)
    return (t[1], t[2]) if t is not None and t[0] == "aten" else None


def from_torch_onnx_ops(node: onnx.NodeProto | None) -> str | None:
    """``onnx.X`` when the dynamo exporter wrote ``node`` from ``torch.onnx.ops`` (a script
    that calls them under ``torch.onnx.is_in_onnx_export()``, an eager computation
    otherwise): its gradient is not an ATen operator's, but the module's own computation."""
    target = _target(node)
    return f"onnx.{target[1]}" if target is not None and target[0] == "onnx" else None


def autograd_source(kind: str, exporter: str, node: onnx.NodeProto | None) -> str:
    """Whose autograd the autograd witness reports, in a reviewer's words."""
    if kind == "reference":
        return REFERENCE
    written = from_torch_onnx_ops(node)
    if written is not None:
        return (f"the module's own PyTorch computation (the node is {written}, written by "
                "torch.onnx.ops at export; autograd differentiated what the module computes "
                "eagerly)")
    target = _target(node)
    if target is not None:
        return f"pytorch operator {target[0]}.{target[1]}"
    if exporter == "torchscript":
        return "pytorch operator (TorchScript export: the node does not name it)"
    return "pytorch operator (the exported node does not name it)"


class Fact(StrEnum):
    DIFFERENTIATES = "differentiates"
    NO_DERIVATIVE = "no derivative"


@dataclass(frozen=True)
class DerivativeFact:
    fact: Fact
    entry: str      # the derivatives.yaml entry that says so, e.g. ``clamp.Tensor``
    arg: str

    def words(self) -> str:
        if self.fact is Fact.DIFFERENTIATES:
            return f"PyTorch does differentiate {self.arg} (derivatives.yaml: {self.entry})"
        return (f"PyTorch has no derivative for {self.arg} (derivatives.yaml: {self.entry} "
                f"gives none)")


@dataclass(frozen=True)
class _Entry:
    name: str                    # ``clamp.Tensor``
    tensor_args: tuple[str, ...]
    formulas: dict


def _yaml_path() -> Path | None:
    try:
        import torchgen
    except ImportError:
        return None
    path = Path(torchgen.__file__).parent / "packaged" / "autograd" / "derivatives.yaml"
    return path if path.is_file() else None


@lru_cache(maxsize=1)
def _entries() -> dict[str, list[_Entry]]:
    """derivatives.yaml's entries by base operator name (``clamp`` -> clamp, clamp.Tensor)."""
    path = _yaml_path()
    out: dict[str, list[_Entry]] = {}
    if path is None:
        return out
    current: _Entry | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("- name:"):
            sig = line[len("- name:"):].strip()
            name, _, rest = sig.partition("(")
            args = rest.rsplit(")", 1)[0] if ")" in rest else rest
            tensors = tuple(a.split()[-1].split("=")[0] for a in args.split(",")
                            if a.strip().startswith("Tensor"))
            current = _Entry(name.strip(), tensors, {})
            out.setdefault(current.name.split(".")[0], []).append(current)
        elif current is not None and line.startswith("  ") and ":" in line \
                and not line.strip().startswith("#"):
            keys, _, formula = line.strip().partition(":")
            for key in keys.split(","):
                current.formulas[key.strip()] = formula.strip()
    return out


def derivative_fact(target: tuple[str, str] | None, arg: str) -> DerivativeFact | None:
    """What derivatives.yaml says of argument ``arg`` of the operator ``target`` (or of its
    ``_forward`` kernel, where the operator is a composite: ``nll_loss`` ->
    ``nll_loss_forward``): differentiated by some overload, given no formula by any, or
    None when no entry names such a tensor argument."""
    if target is None:
        return None
    op, overload = target
    entries = _entries()
    for base in (op, f"{op}_forward"):
        found = [e for e in entries.get(base, ()) if arg in e.tensor_args]
        if not found:
            continue
        for e in found:
            formula = e.formulas.get(arg, "")
            if formula and not formula.startswith(_NO_FORMULA):
                return DerivativeFact(Fact.DIFFERENTIATES, e.name, arg)
        exact = next((e for e in found if e.name in (base, f"{base}.{overload}")), found[0])
        return DerivativeFact(Fact.NO_DERIVATIVE, exact.name, arg)
    return None
