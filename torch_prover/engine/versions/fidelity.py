"""Is this run a run of schema version V? The node checked against V itself, and its runtime.

``onnx.checker`` checks a node's attribute names, its required attributes, its input and
output counts and its types against the schema in force -- every model a proof runs has
passed it (``export.check``, full check, on each route), so those are not checked again
here -- but not an attribute's *value* (Pad-13 takes ``mode='wrap'``, which exists only
from Pad-19) nor its shapes (Sum-6 takes inputs of different shapes, which it does not
broadcast), and a runtime may compute another version than the model's
(``engine/versions/runtimes.py``). A proof of V rests only on a node V accepts, run by a runtime
that implements V; anything else is a ``Problem`` (typed), and the proof's verdicts become
inconclusive (``verdict.Rule.UNFAITHFUL``).

What V accepts beyond the checker is data here, written down from the schema's own text,
each entry checked against that text by tests/test_fidelity.py:
``ATTRIBUTE_VALUES`` (the values an enumerated attribute's description lists) and
``SAME_SHAPE`` / ``UNIDIRECTIONAL`` (the versions whose doc says "must have the same
shape", or "unidirectional broadcasting").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import onnx
import onnx.defs
import onnx.helper

from ...compat import StrEnum
from ..attribution.graph_values import inferred_shapes
from .runtimes import model_opset


class Problem(StrEnum):
    """Why a run is not a run of its schema version (a record field: never parsed)."""

    ATTRIBUTE_VALUE = "attribute value the version does not define"
    SHAPES = "input shapes the version does not accept"
    NO_RUNTIME = "no runtime implements the version"


@dataclass(frozen=True)
class Finding:
    problem: Problem
    detail: str

    def line(self) -> str:
        return f"{self.problem}: {self.detail}"


@dataclass(frozen=True)
class Fidelity:
    """Whether a run was of ``op``-``version``; ``findings``: why not (empty: it was)."""

    op: str
    version: int | None
    findings: tuple[Finding, ...] = ()

    @property
    def faithful(self) -> bool:
        return not self.findings

    @property
    def label(self) -> str:
        return f"{self.op}-{self.version}"

    def reason(self) -> str:
        """One line for a verdict's reason."""
        return (f"not a run of {self.label}: "
                + "; ".join(f.line() for f in self.findings))

    def record(self) -> dict[str, Any]:
        return {"schema": self.label, "problems": [
            {"kind": f.problem.value, "detail": f.detail} for f in self.findings]}


# ----------------------------------------------------------------------------- data
ATTRIBUTE_VALUES: dict[tuple[str, str], tuple[tuple[int, tuple[str, ...]], ...]] = {
    # (op, attribute) -> (first version, the values it defines), oldest first: a version
    # takes the values of the newest entry at or below it
    ("Pad", "mode"): ((1, ("constant", "reflect", "edge")),
                      (19, ("constant", "reflect", "edge", "wrap"))),
    ("Resize", "mode"): ((10, ("nearest", "linear")), (11, ("nearest", "linear", "cubic"))),
    ("Resize", "coordinate_transformation_mode"): (
        (11, ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
              "tf_half_pixel_for_nn", "tf_crop_and_resize")),
        (13, ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
              "tf_crop_and_resize")),
        (19, ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
              "asymmetric", "tf_crop_and_resize"))),
    ("Resize", "nearest_mode"): ((11, ("round_prefer_floor", "round_prefer_ceil", "floor",
                                       "ceil")),),
    ("Resize", "keep_aspect_ratio_policy"): ((18, ("stretch", "not_larger", "not_smaller")),),
    ("Upsample", "mode"): ((1, ("nearest", "bilinear")), (7, ("nearest", "linear"))),
    ("GridSample", "mode"): ((16, ("bilinear", "nearest", "bicubic")),
                             (20, ("linear", "nearest", "cubic"))),
    ("GridSample", "padding_mode"): ((16, ("zeros", "border", "reflection")),),
    ("ScatterElements", "reduction"): ((16, ("none", "add", "mul")),
                                       (18, ("none", "add", "mul", "max", "min"))),
    ("ScatterND", "reduction"): ((16, ("none", "add", "mul")),
                                 (18, ("none", "add", "mul", "max", "min"))),
    ("DepthToSpace", "mode"): ((11, ("DCR", "CRD")),),
    ("RoiAlign", "mode"): ((10, ("avg", "max")),),
    ("RoiAlign", "coordinate_transformation_mode"): ((16, ("half_pixel",
                                                            "output_half_pixel")),),
    ("Gelu", "approximate"): ((20, ("none", "tanh")),),
}

SAME_SHAPE: frozenset[tuple[str, int]] = frozenset(
    (op, v) for op in ("Sum", "Mean", "Max", "Min") for v in (1, 6))
"""Versions whose inputs must all have the same shape (their doc: "All inputs and outputs
must have the same shape"); from version 8 they broadcast."""

UNIDIRECTIONAL: dict[tuple[str, int], tuple[tuple[int, ...], str]] = {
    **{("PRelu", v): ((1,), "input 0") for v in (7, 9, 16)},
    **{("Gemm", v): ((2,), "output 0") for v in (7, 9, 11, 13)},
    ("LayerNormalization", 17): ((1, 2), "input 0"),
    ("RMSNormalization", 23): ((1,), "input 0"),
}
"""Versions with unidirectional broadcasting (their doc says so): (the inputs that
broadcast, what they must broadcast to -- Gemm's C to A * B, i.e. to Y)."""


def allowed_values(op: str, attribute: str, version: int) -> tuple[str, ...] | None:
    """The values ``op``-``version`` defines for ``attribute`` (None: not recorded)."""
    entries = ATTRIBUTE_VALUES.get((op, attribute))
    if not entries:
        return None
    valid = [values for first, values in entries if first <= version]
    return valid[-1] if valid else None


# ----------------------------------------------------------------------------- checks
def node_findings(model: onnx.ModelProto, node: onnx.NodeProto) -> tuple[int | None,
                                                                         tuple[Finding, ...]]:
    """The schema version ``node`` is checked against (in force at the model's opset), and
    what of the node that version does not accept that onnx.checker lets pass (module
    docstring): an attribute value it does not define, input shapes it does not take."""
    opset = model_opset(model, node.domain)
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain) if opset else None
    except onnx.defs.SchemaError:
        schema = None
    if schema is None:
        return None, ()
    version = schema.since_version
    label = f"{node.op_type}-{version}"
    found: list[Finding] = []
    for a in node.attribute:
        name = a.name
        allowed = allowed_values(node.op_type, name, version)
        if allowed is None or name not in schema.attributes:
            continue
        value = onnx.helper.get_attribute_value(a)
        values = value if isinstance(value, list) else [value]
        for v in values:
            text = v.decode() if isinstance(v, bytes) else str(v)
            if text not in allowed:
                found.append(Finding(Problem.ATTRIBUTE_VALUE,
                                     f"{name}={text!r}: {label} defines "
                                     f"{', '.join(allowed)}"))
    found.extend(_shape_findings(model, node, version, label))
    return version, tuple(found)


def _shape_findings(model: onnx.ModelProto, node: onnx.NodeProto, version: int,
                    label: str) -> list[Finding]:
    key = (node.op_type, version)
    if key not in SAME_SHAPE and key not in UNIDIRECTIONAL:
        return []
    shapes = static_shapes(model)
    ins = [shapes.get(n) if n else None for n in node.input]
    if key in SAME_SHAPE:
        known = [s for s in ins if s is not None]
        if len(set(known)) > 1:
            return [Finding(Problem.SHAPES, f"inputs of shapes "
                                            f"{', '.join(str(list(s)) for s in known)}: "
                                            f"{label} requires one shape (no broadcasting)")]
        return []
    indices, to = UNIDIRECTIONAL[key]
    io, _, j = to.partition(" ")
    names = node.input if io == "input" else node.output
    dst = shapes.get(names[int(j)]) if int(j) < len(names) else None
    found = []
    for index in indices:
        src = ins[index] if index < len(ins) else None
        if src is None or dst is None or unidirectional(src, dst):
            continue
        found.append(Finding(Problem.SHAPES, f"input {index} of shape {list(src)} does not "
                                             f"broadcast to {to} of shape {list(dst)}: "
                                             f"{label} broadcasts one way only"))
    return found


def unidirectional(src: Sequence[int], dst: Sequence[int]) -> bool:
    """Whether a tensor of shape ``src`` broadcasts to ``dst`` (numpy's rule, one way)."""
    if len(src) > len(dst):
        return False
    return all(s in (1, d) for s, d in zip(reversed(src), reversed(dst)))


def static_shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    """Every value of the main graph whose shape is known and static."""
    return {name: tuple(shape) for name, shape in inferred_shapes(model).items()
            if None not in shape}


def check(model: onnx.ModelProto, node_index: int | None, op: str, runtime_gap: str | None
          ) -> Fidelity:
    """Whether the run of ``model``'s node ``node_index`` (of ``op``) is a run of its schema
    version: the node against that version, and ``runtime_gap`` (why no runtime that
    implements it ran the model, or None)."""
    if node_index is None:
        return Fidelity(op, None)
    version, found = node_findings(model, model.graph.node[node_index])
    if runtime_gap:
        found = found + (Finding(Problem.NO_RUNTIME, runtime_gap),)
    return Fidelity(op, version, found)
