"""Isolate one ONNX node (step 1 of the node witness, see ``node_witness``).

One run of the exported model on the given feeds captures the node's inputs (graph
inputs, initializers, ``Constant`` outputs, folded constants, and the outer-scope values
its subgraphs read) and outputs. ``onnx.utils.Extractor`` cuts the one-node model (the
model's IR version, opset imports and the local functions the node calls are kept);
every captured input becomes a graph input, none stays an initializer, so one runtime
session serves every perturbation. A name the node reads twice (``Mul(x, x)``, or an
input its subgraph also reads) gets one graph input per use, so each node input index
can be moved alone. Value types come from the captured values themselves; tensor
sequences are values like tensors, perturbed element-wise (the ``Value`` helpers here).
An optional is the one type a value cannot show (the runtimes hand over its element, or
None when empty): the exported model's declared type says which values are optionals.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Mapping, Sequence, Union

import numpy as np
import onnx
import onnx.helper
import onnx.numpy_helper
import onnx.utils

from ...errors import ProverError, capped, describe
from ..attribution.mapping import is_float_dtype, subgraph_names
from .numeric import FWD_TOL, choose_runtime
from ..versions.runtimes import Target

Value = Union[np.ndarray, list]
"""A tensor, or a tensor sequence (a list of tensors), as the runtimes take and give them."""


@dataclass(frozen=True)
class Point:
    """Where a derivative was measured: ``slot`` 0 is the captured point, 1 and 2 seeded
    draws near it; ``draw`` counts re-draws (0: as first chosen); ``move`` is the
    relative size of the move from the captured point (0 for the captured point);
    ``input`` the lifted input that was moved (None: nothing moved)."""

    slot: int
    draw: int
    move: float
    input: str | None = None

    @property
    def label(self) -> str:
        base = "captured point" if self.slot == 0 else f"point {self.slot}"
        return base if self.draw == 0 else f"{base} (re-draw {self.draw})"


class WitnessError(ProverError):
    """The node could not be isolated or run: the message says why, in one line."""


# ----------------------------------------------------------------------------- values
def value_parts(x: Value) -> list[np.ndarray]:
    return [np.asarray(e) for e in x] if isinstance(x, list) else [np.asarray(x)]


def is_float_value(x: Value) -> bool:
    """Floating elements: numpy's floats, and the ml_dtypes floats (bfloat16, float8...) the
    runtimes return as opaque numpy dtypes; a bfloat16 output is floating, not integer."""
    parts = value_parts(x)
    return bool(parts) and all(
        np.issubdtype(p.dtype, np.floating) or (p.dtype.kind == "V" and is_float_dtype(p.dtype.name))
        for p in parts)


def elem_dtype(x: Value) -> str:
    parts = value_parts(x)
    return parts[0].dtype.name if parts else "unknown"


def value_dtype(x: Value) -> str:
    return f"sequence({elem_dtype(x)})" if isinstance(x, list) else elem_dtype(x)


def value_shape(x: Value):
    return tuple(p.shape for p in value_parts(x)) if isinstance(x, list) else np.shape(x)


def flat_values(x: Value) -> np.ndarray:
    """Every element of a tensor or tensor sequence, as one float64 vector."""
    parts = value_parts(x)
    if not parts:
        return np.zeros(0)
    return np.concatenate([p.astype(np.float64).ravel() for p in parts])


def shaped_like(x: Value, flat: np.ndarray) -> Value:
    """``flat`` put back into the shape and dtype(s) of ``x``."""
    out, k = [], 0
    for p in value_parts(x):
        out.append(np.asarray(flat[k:k + p.size].reshape(p.shape)).astype(p.dtype))
        k += p.size
    return out if isinstance(x, list) else out[0]


def rms_scale(x: np.ndarray) -> float:
    """Root mean square of x's finite elements, or 1 when that is 0: a relative move's size."""
    x = x[np.isfinite(x)]
    with np.errstate(over="ignore"):
        rms = float(np.sqrt(np.mean(np.square(x)))) if x.size else 0.0
    return rms if rms > 0 and np.isfinite(rms) else 1.0


def relative_to(x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``r`` scaled element-wise to x: (|x| + rms x) / 2, zero where x is not finite."""
    with np.errstate(all="ignore"):
        v = r * (np.abs(x) + rms_scale(x)) / 2
    return np.where(np.isfinite(v), v, 0.0)


_DECIMALS = re.compile(r"[-+]?\d+\.\d*(?:[eE][-+]?\d+)?(?:\s*,\s*[-+]?\d+\.\d*(?:[eE][-+]?\d+)?)*")


def refusal_line(exc: BaseException) -> str:
    """A runtime's refusal in one short line, its decimal numbers masked: they are perturbed
    values whose last digits another machine need not share."""
    return capped(_DECIMALS.sub("…", describe(exc)), 160)


# ----------------------------------------------------------------------------- isolation
@dataclass(frozen=True)
class Lifted:
    """One input of the isolated model: the node input it stands for (``index``; None for
    an outer-scope value), its original value name and its graph input name."""

    index: int | None
    source: str
    name: str


def _type_proto(value: Value, shaped: bool) -> onnx.TypeProto:
    """A captured value's type: a tensor (its shape, or its rank only when not ``shaped``)
    or a tensor sequence (element type only)."""
    if isinstance(value, list):
        elem = onnx.helper.np_dtype_to_tensor_dtype(np.asarray(value[0]).dtype) if value \
            else onnx.TensorProto.FLOAT
        return onnx.helper.make_sequence_type_proto(onnx.helper.make_tensor_type_proto(elem, None))
    arr = np.asarray(value)
    return onnx.helper.make_tensor_type_proto(onnx.helper.np_dtype_to_tensor_dtype(arr.dtype),
                                              arr.shape if shaped else [None] * arr.ndim)


def _value_info(name: str, value: Value, optional: onnx.TypeProto | None = None,
                shaped: bool = True) -> onnx.ValueInfoProto:
    """``name`` typed from its captured value. ``optional``: the exported model's type of
    the value when that is an optional, which the value cannot tell (the runtimes hand
    over an optional's element, or None when it is empty): the value's type wrapped in
    an optional, or the declared type itself for an empty one."""
    if optional is not None and value is None:
        return onnx.helper.make_value_info(name, optional)
    tp = _type_proto(value, shaped)
    if optional is not None:
        tp = onnx.helper.make_optional_type_proto(tp)
    return onnx.helper.make_value_info(name, tp)


def _output_info(name: str, value: Value, optional: onnx.TypeProto | None) -> onnx.ValueInfoProto:
    """Element type and rank only: a perturbation may change the output's dimensions
    (Range's limit), never its rank."""
    return _value_info(name, value, optional, shaped=False)


def _optional_types(model: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    """The exported model's optional-typed values by name, from shape inference (the model
    as given where inference fails: a value it cannot type is typed from its value)."""
    try:
        g = onnx.shape_inference.infer_shapes(model).graph
    except Exception:   # inference refusing a model is no reason to give up isolating
        g = model.graph
    return {vi.name: vi.type for vi in list(g.input) + list(g.output) + list(g.value_info)
            if vi.type.HasField("optional_type")}


def _outer_names(model: onnx.ModelProto, node_index: int) -> list[str]:
    """Values of the enclosing graph that the node's subgraphs read (If/Loop/Scan)."""
    g = model.graph
    scope = {i.name for i in g.input} | {t.name for t in g.initializer}
    for n in g.node[:node_index]:
        scope.update(o for o in n.output if o)
    return sorted(subgraph_names(g.node[node_index]) & scope)


def _capture(model: onnx.ModelProto, names: Sequence[str], feeds: Mapping[str, np.ndarray],
             target: Target | None = None):
    """The values of ``names`` in a run of ``model`` on ``feeds`` (by a runtime that
    implements ``target``'s schema version), the runtime that ran it and why another was
    skipped."""
    g = model.graph
    graph_inputs = {i.name for i in g.input}
    feeds = {k: v for k, v in feeds.items() if k in graph_inputs}
    inits = {t.name: t for t in g.initializer}
    values: dict[str, Value] = {}
    wanted = []
    for n in names:
        if n in feeds:
            values[n] = np.asarray(feeds[n])
        elif n in inits:
            values[n] = onnx.numpy_helper.to_array(inits[n])
        else:
            wanted.append(n)
    m = copy.deepcopy(model)
    outs = [o.name for o in m.graph.output]
    # untyped extra outputs: both runtimes type them from the producing node
    m.graph.output.extend(onnx.ValueInfoProto(name=n) for n in wanted if n not in outs)
    outs = [o.name for o in m.graph.output]
    runner, got, why = choose_runtime(m, feeds, target)
    if runner is None:
        raise WitnessError(f"the exported model does not run ({why})")
    for n in wanted:
        values[n] = got[outs.index(n)]
    return values, runner, why


class IsolatedNode:
    """The target node alone, every input lifted, with one runtime session.

    ``lifted`` lists the isolated model's inputs; ``point`` holds their captured values;
    ``input_names[i]`` is the graph input standing for node input ``i`` (None: absent);
    ``output_names[j]`` likewise for node outputs. ``run(values)`` returns the node's
    outputs (None for an absent one) in node output order.
    """

    def __init__(self, model: onnx.ModelProto, node_index: int,
                 feeds: Mapping[str, np.ndarray]):
        node = model.graph.node[node_index]
        self.op, self.domain = node.op_type, node.domain
        self.node_index = node_index
        self.node_name = node.name or f"{node.op_type}#{node_index}"
        outer = _outer_names(model, node_index)
        outs = [o for o in node.output if o]
        sources = list(dict.fromkeys([n for n in node.input if n] + outer + outs))
        captured, capture_runner, capture_why = _capture(
            model, sources, feeds, Target(node.op_type, node.domain))
        self.capture_runtime = capture_runner.kind

        # graph input names: a value read twice gets one input per use (a subgraph's read
        # keeps the original name), so each node input index moves alone
        lifted: list[Lifted] = [Lifted(None, n, n) for n in outer]
        taken = set(outer) | set(outs)
        input_names: list[str | None] = []
        for i, n in enumerate(node.input):
            if not n:
                input_names.append(None)
                continue
            name = n
            while name in taken:
                name = f"{n}__input{i}" if name == n else name + "_"
            taken.add(name)
            input_names.append(name)
            lifted.append(Lifted(i, n, name))
        self.lifted = tuple(sorted(lifted, key=lambda a: (a.index is None, a.index or 0)))
        self.input_names = tuple(input_names)
        self.output_names = tuple(o or None for o in node.output)
        self.point: dict[str, Value] = {a.name: captured[a.source] for a in self.lifted}
        self.captured_outputs = tuple(captured[o] if o else None for o in node.output)

        # cut the node with onnx's own extractor, told the exact types of what it reads
        optional = _optional_types(model)
        ex = onnx.utils.Extractor(model)
        ex.value_infos.update({a.source: _value_info(a.source, captured[a.source],
                                                     optional.get(a.source))
                               for a in self.lifted})
        ex.value_infos.update({o: _output_info(o, captured[o], optional.get(o)) for o in outs})
        one = ex.extract_model(list(dict.fromkeys(a.source for a in self.lifted)), outs)
        g = one.graph
        del g.initializer[:]          # lifted: every input is fed, none is a constant
        del g.value_info[:]           # the exported model's static shapes may not hold
        (cut,) = g.node
        del cut.input[:]
        cut.input.extend(n or "" for n in input_names)
        del g.input[:]
        g.input.extend(_value_info(a.name, self.point[a.name], optional.get(a.source))
                       for a in self.lifted)
        self.model = one

        runner, got, why = choose_runtime(one, dict(self.point))
        if runner is None:
            raise WitnessError(f"the isolated {self.op} node does not run ({why})")
        self._runner = runner
        self.runtime = runner.kind
        self.copy = runner.copy      # a float32 copy ran (float32_copy): the kernel it lacks
        self.given = runner.given
        if capture_why == why:
            self.why = why and f"{why} (capturing and the isolated node)"
        else:
            self.why = "; ".join(w for w in (capture_why and f"capturing: {capture_why}",
                                             why and f"isolated node: {why}") if w)
        self.base_outputs = self._order(got)
        # a float32 copy on either side reproduces to float32's tolerance
        lowered = "float32" if runner.copy or capture_runner.copy else None
        self.reproduces = all(values_close(a, b, lowered) for a, b in
                              zip(self.base_outputs, self.captured_outputs))

    def _order(self, got: list) -> tuple:
        it = iter(got)
        return tuple(next(it) if o else None for o in self.output_names)

    def run(self, values: Mapping[str, Value] | None = None) -> tuple:
        """Node outputs for the captured point updated with ``values`` (by lifted name)."""
        feeds = dict(self.point)
        if values:
            feeds.update(values)
        return self._order(self._runner.run(feeds))

    def position(self, name: str) -> int:
        """Where the lifted input ``name`` is in ``lifted``: what seeds its random draws."""
        return [a.name for a in self.lifted].index(name)

    def values_at(self, point: Point, seed: int = 0) -> dict[str, Value]:
        """The lifted inputs' values at ``point`` (as ``measure`` with ``seed`` drew it)."""
        out = dict(self.point)
        if point.input is None:
            return out
        x = self.point[point.input]
        flat = flat_values(x)
        rng = np.random.default_rng([seed, 1, point.slot, point.draw, self.position(point.input)])
        # away from zero, by a random fraction of the element's size: no element changes
        # sign (Relu, Abs, Sign keep their regime), a value on a grid (Round at 3.5, Floor
        # at 2, a Resize scale of exactly 1) leaves it on the side that keeps the output's
        # shape, and tied elements (ReduceMax) move apart by different amounts
        away = np.where(flat < 0, -1.0, 1.0) * np.abs(rng.standard_normal(flat.shape))
        with np.errstate(all="ignore"):   # an inf or nan element stays what it is
            moved = flat + point.move * 2 * relative_to(flat, away)
        out[point.input] = shaped_like(x, moved)
        return out


def values_close(a: Value | None, b: Value | None, dtype: str | None = None) -> bool:
    """``a`` and ``b`` the same values, floats within the forward tolerance of ``dtype``
    (their own dtype when None)."""
    if a is None or b is None:
        return True
    if value_shape(a) != value_shape(b):
        return False
    if not is_float_value(a):
        return all(np.array_equal(p, q) for p, q in zip(value_parts(a), value_parts(b)))
    fa, fb = flat_values(a), flat_values(b)
    tol = FWD_TOL.get(dtype or elem_dtype(a), 1e-2)
    scale = max(1.0, float(np.abs(fb[np.isfinite(fb)]).max(initial=0.0)))
    return bool(np.allclose(fa, fb, rtol=0, atol=tol * scale, equal_nan=True))


def isolate(model: onnx.ModelProto, node_index: int,
            feeds: Mapping[str, np.ndarray]) -> IsolatedNode:
    """The node ``model.graph.node[node_index]`` alone, its inputs captured from a run of
    ``model`` on ``feeds`` and lifted. Raises WitnessError when that cannot be done."""
    if not 0 <= node_index < len(model.graph.node):
        raise WitnessError(f"the graph has {len(model.graph.node)} nodes; no node {node_index}")
    try:
        return IsolatedNode(model, node_index, feeds)
    except WitnessError:
        raise
    except Exception as exc:  # extraction / runtime failures of every kind: say which
        raise WitnessError(f"could not isolate node {node_index}: {describe(exc)}") from exc
