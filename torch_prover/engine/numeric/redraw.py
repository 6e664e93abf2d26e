"""Zero at the points measured is not the op's math: the node measured again -- in float64
where its schema and a runtime allow, and at re-drawn values.

Why: the points a node is measured at are someone's choice -- a proof script's inputs in
``run``, ONNX's node tests in case-free verdicts -- and so is their precision. A selecting
op (Max, Min, Where, Relu, Clip, Gather...) gives an input no gradient wherever the values
never select it (``torch.maximum(a, b)`` with every ``a`` below ``b``); a saturated tanh
(RNN-22's ``R`` at ONNX's points) has a derivative below float32's resolution, flat at
float32's steps and 1.6e-6 to 5.5e-6 in float64. Before such a zero counts as
"non-differentiable", one helper (:func:`measure_redrawn`, called by ``run`` and by the
case-free witness alike) measures the node's own witness (:mod:`node_witness`) again:

1. **in float64 at the same points** (:func:`float64_node`): the node cut out at the given
   values, every floating value narrower than double cast to double -- only where the op's
   schema version admits ``tensor(double)`` for each such parameter's type constraint --
   and run where ``choose_runtime`` runs it (onnxruntime, else onnx.reference where it
   follows the version); a runtime that falls back to a float32 copy computed nothing in
   float64, and says so. The record names the runtime, the schema version and the
   precision (``Float64Run.words``).
2. **at re-drawn points**: the model's floating graph inputs re-drawn (same shapes and
   dtypes, standard normal: seeded, so each selecting branch is hit with overwhelming
   probability on a few draws), its bool inputs re-drawn (a ``Where``'s condition takes
   both values), integer inputs (indices, shapes) kept; measured in the model's own
   precision, and in float64 (as in 1) where that still shows nothing.

What is smooth there and flat at the given points is "not exercised there", never a
disagreement (docs/verdicts.md, "Zero at the measured points").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Collection, Mapping, Sequence

import numpy as np
import onnx
import onnx.defs

from ...vocab import NumericOutcome
from .isolate import WitnessError, elem_dtype, is_float_value, isolate
from .measure import NodeWitness
from .node_witness import witness
from .precision import runtime_name

DRAWS = 4
"""Re-drawn points per proof: with n elements per input, a branch a draw misses on all
four has probability about 2^(-4n) for a two-way choice."""

STEPS64 = "float32"
"""The float64 re-measure differences at float32's steps (1e-3, 1e-4, relative) with
float64's zero (1e-10 of the output's scale): a derivative of 1e-6 of the output's scale per
unit of input -- RNN-22's ``R`` at ONNX's points -- moves the output by 2e-9 there, 20x above
zero, where float64's own steps (1e-6) would move it by 2e-12, below zero. The steps only
need to resolve a nonzero derivative, not its value; a jump still shows as one."""

DOUBLE = "tensor(double)"
_NARROW = ("float32", "float16", "bfloat16")
"""Floating dtypes a float64 re-measure widens (float8/float4 are storage: never widened)."""

Key = tuple[str, int]     # (io, index) of a node input or output


@dataclass(frozen=True)
class Float64Node:
    """The node cut out at the given values, its narrow floating values cast to double
    (``model`` None: it cannot be, ``why`` says why)."""

    model: onnx.ModelProto | None
    point: Mapping[str, Any]
    schema: str           # "RNN-22": the schema version whose types were read
    why: str = ""


@dataclass(frozen=True)
class Float64Run:
    """How the float64 re-measure ran: the runtime that computed it and the schema version
    whose types admitted double, or why it did not run (``runtime`` empty)."""

    runtime: str
    schema: str
    why: str = ""
    computed: str = "float64"   # the precision the runtime's outputs show (engine/numeric/precision)

    @property
    def ran(self) -> bool:
        return bool(self.runtime)

    def words(self) -> str:
        if self.ran:
            at = "" if self.computed == "float64" else f", computed at {self.computed} resolution"
            return f"float64 ({self.runtime}, {self.schema}, steps 1e-3 and 1e-4{at})"
        return f"no float64 re-measure ({self.why})"


@dataclass(frozen=True)
class Redrawn:
    """What the node witness found when measured again, per (io, index): smooth in float64
    at the given points (``given64``), and at how many re-drawn points (``smooth``, either
    precision; ``smooth64``: those only float64 showed)."""

    smooth: Mapping[Key, int]
    draws: int
    given64: frozenset[Key] = frozenset()
    smooth64: frozenset[Key] = frozenset()
    float64: Float64Run | None = None

    def exercised(self, io: str, index: int) -> int:
        return self.smooth.get((io, index), 0)

    def in_float64(self, io: str, index: int) -> bool:
        """Smooth in float64 at the given points."""
        return (io, index) in self.given64

    def precision(self, io: str, index: int) -> str:
        """The precision that showed the derivative, in words (for a reason or a record)."""
        if self.float64 is not None and ((io, index) in self.given64
                                         or (io, index) in self.smooth64):
            return self.float64.words()
        return "in the model's own precision"


def measured_in(feeds: Mapping[str, Any], runtime: str | None) -> str:
    """The precision and runtime a node was first measured in, in words: the least precise
    floating dtype among ``feeds`` (``float32 in onnxruntime``; a float32 copy as named)."""
    order = ("float64", "float32", "float16", "bfloat16")
    dts = [elem_dtype(x) for x in feeds.values() if x is not None and is_float_value(x)]
    known = [d for d in dts if d in order]
    own = max(known, key=order.index) if known else (dts[0] if dts else "no float")
    return f"{own} in {runtime_name(runtime) if runtime else 'the runtime'}"


def redraw_feeds(feeds: Mapping[str, np.ndarray], seed: int) -> dict[str, np.ndarray]:
    """The feeds with every floating array re-drawn from a standard normal, every bool one
    re-drawn uniformly; others (indices, shapes) kept."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, x in feeds.items():
        if isinstance(x, np.ndarray) and x.dtype.kind == "f":
            out[name] = rng.standard_normal(x.shape).astype(x.dtype)
        elif isinstance(x, np.ndarray) and x.dtype.kind == "b":
            out[name] = rng.random(x.shape) < 0.5
        else:
            out[name] = x
    return out


def _schema(model: onnx.ModelProto, node: onnx.NodeProto) -> onnx.defs.OpSchema:
    version = next((i.version for i in model.opset_import if i.domain == node.domain), None)
    return onnx.defs.get_schema(node.op_type, version, node.domain) if version else \
        onnx.defs.get_schema(node.op_type, node.domain)


def _admits_double(schema: onnx.defs.OpSchema, formals: Sequence[Any], index: int) -> bool:
    if not formals:
        return False
    f = formals[min(index, len(formals) - 1)]
    allowed = {t for c in schema.type_constraints if c.type_param_str == f.type_str
               for t in c.allowed_type_strs} or {f.type_str}
    return DOUBLE in allowed


def float64_node(model: onnx.ModelProto, node_index: int,
                 feeds: Mapping[str, np.ndarray]) -> Float64Node:
    """``model.graph.node[node_index]`` cut out at ``feeds``, every float32/float16/bfloat16
    input and output cast to double -- only when the schema version in force admits
    ``tensor(double)`` for each of them (a type constraint, or a fixed type); a graph op or a
    sequence value is not widened."""
    n = model.graph.node[node_index]
    try:
        schema = _schema(model, n)
    except Exception:
        return Float64Node(None, {}, n.op_type, f"no schema of {n.op_type} to read its types")
    name = f"{n.op_type}-{schema.since_version}"
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in n.attribute):
        return Float64Node(None, {}, name, "a graph op: its body's types are the body's")
    try:
        node = isolate(model, node_index, feeds)
    except WitnessError as exc:
        return Float64Node(None, {}, name, str(exc))
    one = onnx.ModelProto()
    one.CopyFrom(node.model)
    point = dict(node.point)
    inputs = {i.name: i for i in one.graph.input}
    widened = 0
    for index, gname in enumerate(node.input_names):
        x = point.get(gname) if gname else None
        if x is None or isinstance(x, list) or not is_float_value(x):
            continue
        if elem_dtype(x) not in _NARROW:
            continue
        if not _admits_double(schema, schema.inputs, index):
            return Float64Node(None, {}, name, f"input {index} of {name} admits no double")
        point[gname] = np.asarray(x, dtype=np.float64)
        inputs[gname].type.tensor_type.elem_type = onnx.TensorProto.DOUBLE
        widened += 1
    for j, out in enumerate(one.graph.output):
        t = out.type.tensor_type
        if t.elem_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16,
                               onnx.TensorProto.BFLOAT16):
            continue
        k = node.output_names.index(out.name) if out.name in node.output_names else j
        if not _admits_double(schema, schema.outputs, k):
            return Float64Node(None, {}, name, f"output {k} of {name} admits no double")
        t.elem_type = onnx.TensorProto.DOUBLE
        widened += 1
    if not widened:
        return Float64Node(None, {}, name, "nothing narrower than float64 to widen")
    return Float64Node(one, point, name)


def measure_float64(model: onnx.ModelProto, node_index: int, feeds: Mapping[str, np.ndarray],
                    seed: int = 0) -> tuple[NodeWitness | None, Float64Run]:
    """The node's witness in float64 at ``feeds`` (:func:`float64_node`), and how it ran; None
    where it could not: no double in the schema, no runtime that computes the version in
    float64 (a float32 copy is not float64), or the node did not run."""
    n64 = float64_node(model, node_index, feeds)
    if n64.model is None:
        return None, Float64Run("", n64.schema, n64.why)
    w = witness(n64.model, 0, n64.point, seed=seed, steps=STEPS64)
    if w.runtime is None:
        return None, Float64Run("", n64.schema, f"it did not run: {w.why}")
    if w.copy is not None:
        return None, Float64Run("", n64.schema, f"onnxruntime ran a float32 copy ({w.copy})")
    lowered = any("at float32 resolution" in x.detail for x in w.inputs)
    return w, Float64Run(runtime_name(w.runtime), n64.schema,
                         computed="float32" if lowered else "float64")


def _smooth(w: NodeWitness) -> set[Key]:
    """(io, index) smooth in ``w``: node inputs, and node outputs some input is smooth into
    (a smooth outcome is a derivative seen above the precision's noise, whichever it was)."""
    found = {("input", x.index) for x in w.inputs
             if x.outcome is NumericOutcome.SMOOTH and x.index is not None}
    return found | {("output", o.index) for o in w.outputs if o.outcome is NumericOutcome.SMOOTH}


def measure_redrawn(model: onnx.ModelProto, node_index: int,
                    feeds: Sequence[Mapping[str, np.ndarray]], seed: int = 0,
                    draws: int = DRAWS, flat: Collection[Key] | None = None) -> Redrawn:
    """The node measured again (the module's docstring): in float64 at the given ``feeds``
    (each probe seed's), then at ``draws`` re-drawn points (from each seed's feeds in turn),
    in the model's own precision and, for what that leaves flat, in float64. ``flat``: the
    (io, index) keys to explain (None: every one); the re-draws are skipped when float64 at
    the given points already shows each."""
    want = set(flat) if flat is not None else None
    run64: Float64Run | None = None
    given64: set[Key] = set()
    for k, base in enumerate(feeds):
        w, run64 = measure_float64(model, node_index, base, seed=k)
        if w is None:
            break
        given64 |= _smooth(w)
    left = None if want is None else want - given64
    smooth: dict[Key, int] = {}
    smooth64: set[Key] = set()
    for k in range(draws if left is None or left else 0):
        drawn = redraw_feeds(feeds[k % len(feeds)], 7919 * (seed + 1) + k)
        seen = _smooth(witness(model, node_index, drawn, seed=k))
        if run64 is not None and run64.ran and (left is None or left - seen):
            w, _ = measure_float64(model, node_index, drawn, seed=k)
            extra = _smooth(w) - seen if w is not None else set()
            smooth64 |= extra
            seen |= extra
        for key in seen:
            smooth[key] = smooth.get(key, 0) + 1
    return Redrawn(smooth, draws, frozenset(given64), frozenset(smooth64), run64)
