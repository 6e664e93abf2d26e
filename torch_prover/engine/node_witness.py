"""The numeric witness of one ONNX node: "the op, as exported, has this derivative".

DESIGN §1 stage 4. Independent of PyTorch: the target node is cut out of the exported
model with its actual input values, every input it reads is lifted to a model input, and
each floating node input's directional derivative into each floating node output is
measured by central differences at three points and two step sizes.

1. **Isolate** (``isolate``): one run of the exported model on the given feeds captures
   the node's inputs (graph inputs, initializers, ``Constant`` outputs, folded constants,
   and the outer-scope values its subgraphs read) and outputs. ``onnx.utils.Extractor``
   cuts the one-node model (the model's IR version, opset imports and the local functions
   the node calls are kept); every captured input becomes a graph input, none stays an
   initializer, so one runtime session serves every perturbation. A name the node reads
   twice (``Mul(x, x)``, or an input its subgraph also reads) gets one graph input per
   use, so each node input index can be moved alone. Value types come from the captured
   values themselves (exact where shape inference can only guess); tensor sequences
   (SequenceAt, ConcatFromSequence...) are values like tensors, perturbed element-wise.
2. **Measure** (``measure``): per floating node input ``i`` and floating node output
   ``j``, at the captured point and two seeded draws of input ``i`` near it (the other
   inputs stay as captured: a structural float such as Resize's scales is never moved
   to measure the data), with relative steps ``h`` (``numeric.STEP``) and ``h/10``
   along a seeded direction ``v``, each point is *regular* (``flat`` or ``smooth``) or
   *irregular*: a difference that does not settle as the step shrinks (a jump),
   one-sided differences that disagree and do not shrink (a kink or a tie: ReduceMax
   with tied maxima, Relu at 0), an output whose shape changes, a value that is or turns
   non-finite, or a point the runtime refuses (a probability pushed out of [0, 1]). An
   irregular point is re-drawn (seeded, up to ``TRIES`` times, each move larger) and
   the move is recorded with its reasons; a point still irregular after the last try
   makes ``i -> j`` a ``jump`` (or ``not run`` when it never ran or never was finite).
   An input flat at every point that changes an output's shape under a larger move
   (Range's ``limit``) is a shape input: a ``jump``.
3. **VJP** (``vjp``): ``<dy, (f(p + h v) - f(p - h v)) / 2h>`` for one node input, for
   comparison with PyTorch's ``<grad_i, v>``.

Thresholds, with their margins (float64 / float32):

- *zero*: a central difference ``|f(p+sv) - f(p-sv)|`` at most ``ZERO[dtype] * Y``,
  ``Y`` the largest finite output magnitude seen at the point. float64: ``1e-10``,
  about 5e5 ulps above rounding, while a derivative of the output's own scale moves
  the output by 2e-7 at the small step (2000x above); float32: ``1e-5`` (80 ulps;
  20x below a unit-scale derivative at step 1e-4).
- *settled*: the central difference at ``h/10`` within ``SETTLE = 0.1`` (relative) of
  the one at ``h``. Smooth: truncation error ~h^2 (1e-12 / 1e-6 relative); a jump
  crossed at both steps makes them differ by 0.9, one crossed at ``h`` only by 1.
- *kink*: one-sided differences at ``h/10`` differ by more than ``KINK = 0.1`` of their
  size and by more than half their difference at ``h``. Smooth: they differ by ~s·f''
  and shrink tenfold with the step; at a kink the gap is O(1) and does not shrink.
Differences below the zero threshold (converted to the step) never count as unsettled
or kinked, so rounding noise cannot make a point irregular. Outcomes are decided on
ratios far from every threshold; detail strings carry only counts, the fixed steps
and categorical words, never a measured value, so they repeat on any machine
(a runtime's refusal is quoted with its decimal numbers masked).

Known limit: an op that draws random numbers on every run (onnxruntime's Bernoulli,
Dropout in training mode) changes between the runs of one finite difference; the
witness then reports what it saw (usually a jump), not a derivative.
"""
from __future__ import annotations

import copy
import enum
import re
from dataclasses import dataclass
from typing import Mapping, Sequence, Union

import numpy as np
import onnx
import onnx.defs
import onnx.helper
import onnx.numpy_helper
import onnx.utils

from ..errors import describe
from ..vocab import NumericOutcome
from .mapping import subgraph_names
from .numeric import FWD_TOL, STEP, choose_runtime

ZERO = {"float64": 1e-10, "float32": 1e-5}
"""A central difference at most ZERO * (output scale) is zero (see the module docstring)."""
SETTLE = 0.1
"""D(h/10) within this fraction of D(h): the difference settled as the step shrank."""
KINK = 0.1
"""One-sided differences further apart than this fraction: a kink or tie (if it persists)."""
MOVE = {"float64": 1e-3, "float32": 3e-2}
"""Relative size of the first move from the captured point (30x the float32 step, so a
tie broken by a move is further from the point than the step); doubled at each re-draw."""
TRIES = 4
"""Draws per point: the first, then up to three re-draws when it is irregular."""
POINTS = 3
"""The captured point and two seeded draws near it."""
SHAPE_PROBES = 2
"""Larger moves (up to 50%) of an input that is flat at every point, to find a shape input."""

Value = Union[np.ndarray, list]
"""A tensor, or a tensor sequence (a list of tensors), as the runtimes take and give them."""


Outcome = NumericOutcome
"""What the numeric witness says about one node input (or output): vocab.NumericOutcome."""


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


@dataclass(frozen=True)
class Move:
    """A point that was irregular and re-drawn: which, how often, why, and whether a
    regular point was found (``settled``)."""

    slot: int
    redraws: int
    reasons: tuple[str, ...]   # one per irregular draw, e.g. "output 0: the output's shape changes"
    settled: bool

    @property
    def detail(self) -> str:
        what = "captured point" if self.slot == 0 else f"point {self.slot}"
        why = "; ".join(dict.fromkeys(self.reasons))
        if self.settled:
            return (f"{what} moved ({why}; regular after {self.redraws} "
                    f"re-draw{'s' * (self.redraws != 1)})")
        return f"{what} irregular at every draw ({why})"


@dataclass(frozen=True)
class PairWitness:
    """Node input ``input`` into node output ``output``."""

    input: int | None    # None: an outer-scope value (its InputWitness has the name)
    output: int
    outcome: Outcome
    detail: str


@dataclass(frozen=True)
class InputWitness:
    """One node input (``index``), or an outer-scope value a subgraph reads
    (``index`` None, ``name`` the value's name in the exported model)."""

    index: int | None
    name: str
    dtype: str
    outcome: Outcome
    detail: str
    pairs: tuple[PairWitness, ...] = ()
    points: tuple[Point, ...] = ()
    moves: tuple[Move, ...] = ()
    step: float | None = None

    @property
    def moved(self) -> bool:
        return bool(self.moves)


@dataclass(frozen=True)
class OutputWitness:
    index: int
    name: str
    dtype: str
    outcome: Outcome
    detail: str


@dataclass(frozen=True)
class NodeWitness:
    op: str
    domain: str
    node_index: int
    node_name: str
    runtime: str | None          # what ran the isolated node: onnxruntime | reference
    capture_runtime: str | None  # what ran the exported model to capture its inputs
    why: str                     # why a runtime was skipped, or why nothing could run
    seed: int
    inputs: tuple[InputWitness, ...]
    outputs: tuple[OutputWitness, ...]
    outer: tuple[InputWitness, ...] = ()
    reproduces: bool | None = None   # the isolated node gives the captured outputs

    def input(self, index: int) -> InputWitness:
        return self.inputs[index]

    def output(self, index: int) -> OutputWitness:
        return self.outputs[index]


class WitnessError(Exception):
    """The node could not be isolated or run: the message says why, in one line."""


# ----------------------------------------------------------------------------- values
def _parts(x: Value) -> list[np.ndarray]:
    return [np.asarray(e) for e in x] if isinstance(x, list) else [np.asarray(x)]


def _is_float(x: Value) -> bool:
    parts = _parts(x)
    return bool(parts) and all(np.issubdtype(p.dtype, np.floating) for p in parts)


def _elem_dtype(x: Value) -> str:
    parts = _parts(x)
    return parts[0].dtype.name if parts else "unknown"


def _dtype(x: Value) -> str:
    return f"sequence({_elem_dtype(x)})" if isinstance(x, list) else _elem_dtype(x)


def _shape(x: Value):
    return tuple(p.shape for p in _parts(x)) if isinstance(x, list) else np.shape(x)


def _flat(x: Value) -> np.ndarray:
    """Every element of a tensor or tensor sequence, as one float64 vector."""
    parts = _parts(x)
    if not parts:
        return np.zeros(0)
    return np.concatenate([p.astype(np.float64).ravel() for p in parts])


def _like(x: Value, flat: np.ndarray) -> Value:
    """``flat`` put back into the shape and dtype(s) of ``x``."""
    out, k = [], 0
    for p in _parts(x):
        out.append(np.asarray(flat[k:k + p.size].reshape(p.shape)).astype(p.dtype))
        k += p.size
    return out if isinstance(x, list) else out[0]


def _scale(x: np.ndarray) -> float:
    """Root mean square of x's finite elements, or 1 when that is 0: a relative move's size."""
    x = x[np.isfinite(x)]
    with np.errstate(over="ignore"):
        rms = float(np.sqrt(np.mean(np.square(x)))) if x.size else 0.0
    return rms if rms > 0 and np.isfinite(rms) else 1.0


def _relative(x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``r`` scaled element-wise to x: (|x| + rms x) / 2, zero where x is not finite."""
    with np.errstate(all="ignore"):
        v = r * (np.abs(x) + _scale(x)) / 2
    return np.where(np.isfinite(v), v, 0.0)


_DECIMALS = re.compile(r"[-+]?\d+\.\d*(?:[eE][-+]?\d+)?(?:\s*,\s*[-+]?\d+\.\d*(?:[eE][-+]?\d+)?)*")


def _refusal(exc: BaseException) -> str:
    """A runtime's refusal in one short line, its decimal numbers masked: they are perturbed
    values whose last digits another machine need not share."""
    text = " ".join(_DECIMALS.sub("…", describe(exc)).split())
    return text if len(text) <= 160 else text[:159] + "…"


# ----------------------------------------------------------------------------- isolation
@dataclass(frozen=True)
class Lifted:
    """One input of the isolated model: the node input it stands for (``index``; None for
    an outer-scope value), its original value name and its graph input name."""

    index: int | None
    source: str
    name: str


def _value_info(name: str, value: Value) -> onnx.ValueInfoProto:
    if isinstance(value, list):
        elem = onnx.helper.np_dtype_to_tensor_dtype(np.asarray(value[0]).dtype) if value \
            else onnx.TensorProto.FLOAT
        return onnx.helper.make_tensor_sequence_value_info(name, elem, None)
    arr = np.asarray(value)
    return onnx.helper.make_tensor_value_info(
        name, onnx.helper.np_dtype_to_tensor_dtype(arr.dtype), arr.shape)


def _output_info(name: str, value: Value) -> onnx.ValueInfoProto:
    """Element type and rank only: a perturbation may change the output's dimensions
    (Range's limit), never its rank."""
    if isinstance(value, list):
        return _value_info(name, value)
    arr = np.asarray(value)
    return onnx.helper.make_tensor_value_info(
        name, onnx.helper.np_dtype_to_tensor_dtype(arr.dtype), [None] * arr.ndim)


def _outer_names(model: onnx.ModelProto, node_index: int) -> list[str]:
    """Values of the enclosing graph that the node's subgraphs read (If/Loop/Scan)."""
    g = model.graph
    scope = {i.name for i in g.input} | {t.name for t in g.initializer}
    for n in g.node[:node_index]:
        scope.update(o for o in n.output if o)
    return sorted(subgraph_names(g.node[node_index]) & scope)


def _capture(model: onnx.ModelProto, names: Sequence[str], feeds: Mapping[str, np.ndarray]):
    """The values of ``names`` in a run of ``model`` on ``feeds``, the runtime that ran it
    and why another was skipped."""
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
    runner, got, why = choose_runtime(m, feeds)
    if runner is None:
        raise WitnessError(f"the exported model does not run ({why})")
    for n in wanted:
        values[n] = got[outs.index(n)]
    return values, runner.kind, why


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
        captured, self.capture_runtime, capture_why = _capture(model, sources, feeds)

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
        ex = onnx.utils.Extractor(model)
        ex.value_infos.update({a.source: _value_info(a.source, captured[a.source])
                               for a in self.lifted})
        ex.value_infos.update({o: _output_info(o, captured[o]) for o in outs})
        one = ex.extract_model(list(dict.fromkeys(a.source for a in self.lifted)), outs)
        g = one.graph
        del g.initializer[:]          # lifted: every input is fed, none is a constant
        del g.value_info[:]           # the exported model's static shapes may not hold
        (cut,) = g.node
        del cut.input[:]
        cut.input.extend(n or "" for n in input_names)
        del g.input[:]
        g.input.extend(_value_info(a.name, self.point[a.name]) for a in self.lifted)
        self.model = one

        runner, got, why = choose_runtime(one, dict(self.point))
        if runner is None:
            raise WitnessError(f"the isolated {self.op} node does not run ({why})")
        self._runner = runner
        self.runtime = runner.kind
        if capture_why == why:
            self.why = why and f"{why} (capturing and the isolated node)"
        else:
            self.why = "; ".join(w for w in (capture_why and f"capturing: {capture_why}",
                                             why and f"isolated node: {why}") if w)
        self.base_outputs = self._order(got)
        self.reproduces = all(_close(a, b) for a, b in
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
        flat = _flat(x)
        rng = np.random.default_rng([seed, 1, point.slot, point.draw, self.position(point.input)])
        # away from zero, by a random fraction of the element's size: no element changes
        # sign (Relu, Abs, Sign keep their regime), a value on a grid (Round at 3.5, Floor
        # at 2, a Resize scale of exactly 1) leaves it on the side that keeps the output's
        # shape, and tied elements (ReduceMax) move apart by different amounts
        away = np.where(flat < 0, -1.0, 1.0) * np.abs(rng.standard_normal(flat.shape))
        with np.errstate(all="ignore"):   # an inf or nan element stays what it is
            moved = flat + point.move * 2 * _relative(flat, away)
        out[point.input] = _like(x, moved)
        return out


def _close(a: Value | None, b: Value | None) -> bool:
    if a is None or b is None:
        return True
    if _shape(a) != _shape(b):
        return False
    if not _is_float(a):
        return all(np.array_equal(p, q) for p, q in zip(_parts(a), _parts(b)))
    fa, fb = _flat(a), _flat(b)
    tol = FWD_TOL.get(_elem_dtype(a), 1e-2)
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


# ----------------------------------------------------------------------------- measuring
_PRECISION = ("float64", "float32", "float16", "bfloat16")


def _least_precise(dtypes: Sequence[str]) -> str:
    unknown = [d for d in dtypes if d not in _PRECISION]
    if unknown:
        return unknown[0]
    return max(dtypes, key=_PRECISION.index) if dtypes else "float64"


class _Kind(enum.Enum):
    """How one output looked at one point (internal; regular: FLAT or SMOOTH)."""

    FLAT = "flat"
    SMOOTH = "smooth"
    SHAPE = "the output's shape changes"
    JUMP = "the difference grows like 1/step"
    KINK = "one-sided differences differ (a kink or tie)"
    NONFINITE = "the output is or turns non-finite"
    EMPTY = "the output is empty"
    REFUSED = "the runtime refuses the point"

    @property
    def regular(self) -> bool:
        return self in (_Kind.FLAT, _Kind.SMOOTH)

    @property
    def unmeasured(self) -> bool:
        """Irregular because nothing could be measured, not because of what was."""
        return self in (_Kind.NONFINITE, _Kind.EMPTY, _Kind.REFUSED)


def _classify(y0: Value, yp_h: Value, ym_h: Value, yp_l: Value, ym_l: Value,
              dtype: str, captured: Value) -> _Kind:
    """One output at one point, from f(p), f(p ± h v) and f(p ± h/10 v); ``captured`` is
    the output at the captured point (an output empty here but not there was moved out
    of its regime)."""
    if {_shape(y) for y in (yp_h, ym_h, yp_l, ym_l)} != {_shape(y0)}:
        return _Kind.SHAPE
    y0, yp_h, ym_h, yp_l, ym_l = (_flat(y) for y in (y0, yp_h, ym_h, yp_l, ym_l))
    if y0.size == 0:
        return _Kind.EMPTY if _flat(captured).size else _Kind.FLAT
    ok = np.isfinite(y0)
    if not ok.any():
        return _Kind.NONFINITE
    y0, yp_h, ym_h, yp_l, ym_l = (y[ok] for y in (y0, yp_h, ym_h, yp_l, ym_l))
    moved = (yp_h, ym_h, yp_l, ym_l)
    if not all(np.isfinite(y).all() for y in moved):
        return _Kind.NONFINITE
    big = max(float(np.abs(y).max()) for y in (y0,) + moved)
    zero = ZERO[dtype] * big
    dh, dl = yp_h - ym_h, yp_l - ym_l
    if float(np.abs(dh).max()) <= zero and float(np.abs(dl).max()) <= zero:
        return _Kind.FLAT
    # in units of the h/10 central difference: D(h) scaled by h/10 is dh / 10
    d_h, d_l = dh / 10.0, dl
    gap = np.abs(d_l - d_h)
    if np.any((gap > SETTLE * np.maximum(np.abs(d_h), np.abs(d_l))) & (gap > zero)):
        return _Kind.JUMP
    # one-sided differences at h/10 (and at h, scaled to h/10)
    kl = np.abs((yp_l - y0) - (y0 - ym_l))
    kh = np.abs((yp_h - y0) - (y0 - ym_h)) / 10.0
    side = np.maximum(np.abs(yp_l - y0), np.abs(y0 - ym_l))
    if np.any((kl > KINK * side) & (kl > zero) & (kl > 0.5 * kh)):
        return _Kind.KINK
    return _Kind.SMOOTH


def _fmt_step(h: float) -> str:
    m, e = f"{h:.0e}".split("e")
    return f"{m}e{int(e)}"


def _plural(word: str, idx: Sequence[int]) -> str:
    return f"{word}{'s' if len(idx) != 1 else ''} {', '.join(map(str, idx))}"


def _aggregate(outcomes: Sequence[Outcome]) -> Outcome:
    """Over the other side's floating parameters: any smooth path makes it smooth; then a
    jump; then a measurement that failed (flat cannot be claimed); flat only if all are."""
    if not outcomes:
        return Outcome.NONE
    for o in (Outcome.SMOOTH, Outcome.JUMP, Outcome.NOT_RUN):
        if o in outcomes:
            return o
    return Outcome.FLAT


@dataclass(frozen=True)
class _Seen:
    """One draw of one point for one input: each floating output's kind, and the runtime's
    refusal when it refused the point."""

    kinds: dict
    refusal: str = ""

    @property
    def irregular(self) -> list[tuple[int, _Kind]]:
        return [(j, k) for j, k in self.kinds.items() if not k.regular]

    def reason(self) -> str:
        if self.refusal:
            return f"{_Kind.REFUSED.value}: {self.refusal}"
        return "; ".join(f"output {j}: {k.value}" for j, k in self.irregular)


class _Measure:
    def __init__(self, node: IsolatedNode, seed: int):
        self.node, self.seed = node, seed
        self._cache: dict[Point, tuple[dict, tuple]] = {}
        self.float_outputs = [j for j, y in enumerate(node.base_outputs)
                              if y is not None and _is_float(y)]

    def point(self, a: Lifted, slot: int, draw: int, dtype: str) -> Point:
        if slot == 0 and draw == 0:
            return Point(0, 0, 0.0)
        k = draw - 1 if slot == 0 else draw
        return Point(slot, draw, MOVE[dtype] * 2.0 ** k, a.name)

    def at(self, p: Point) -> tuple[dict, tuple]:
        if p not in self._cache:
            values = self.node.values_at(p, self.seed)
            self._cache[p] = (values, self.node.run(values))
        return self._cache[p]

    def direction(self, a: Lifted) -> np.ndarray:
        x = _flat(self.node.point[a.name])
        rng = np.random.default_rng([self.seed, 2, self.node.position(a.name)])
        return _relative(x, rng.standard_normal(x.shape))

    def observe(self, a: Lifted, p: Point, v: np.ndarray, dtype: str) -> _Seen:
        """How each floating output looks at ``p`` along ``v`` for input ``a``."""
        h = STEP[dtype]
        try:
            values, y0 = self.at(p)
            x = values[a.name]
            ys = {}
            for s in (h, h / 10):
                for sign in (1.0, -1.0):
                    moved = _like(x, _flat(x) + sign * s * v)
                    ys[s, sign] = self.node.run({**values, a.name: moved})
        except Exception as exc:  # the runtime refuses this point: a reason to move it
            return _Seen({j: _Kind.REFUSED for j in self.float_outputs}, _refusal(exc))
        return _Seen({j: _classify(y0[j], ys[h, 1.0][j], ys[h, -1.0][j], ys[h / 10, 1.0][j],
                                   ys[h / 10, -1.0][j], dtype, self.node.base_outputs[j])
                      for j in self.float_outputs})

    def shape_input(self, a: Lifted) -> list[int]:
        """Outputs whose shape changes when ``a`` alone moves by up to 50%."""
        y0 = self.node.base_outputs
        x = self.node.point[a.name]
        flat = _flat(x)
        changed: set[int] = set()
        for t in range(SHAPE_PROBES):
            rng = np.random.default_rng([self.seed, 3, self.node.position(a.name), t])
            with np.errstate(all="ignore"):
                moved = flat * (1 + rng.uniform(-0.5, 0.5, flat.shape)) \
                    + 0.5 * _scale(flat) * rng.standard_normal(flat.shape)
            try:
                ys = self.node.run({a.name: _like(x, moved)})
            except Exception:  # a value the op refuses says nothing about shapes
                continue
            changed |= {j for j in self.float_outputs if _shape(ys[j]) != _shape(y0[j])}
        return sorted(changed)

    def input(self, a: Lifted) -> InputWitness:
        node = self.node
        x = node.point[a.name]
        name, index, dtype = a.source, a.index, _dtype(x)
        if isinstance(x, list) and not x:
            return InputWitness(index, name, dtype, Outcome.NOT_RUN,
                                "an empty sequence: nothing to perturb")
        if not _is_float(x):
            return InputWitness(index, name, dtype, Outcome.INTEGER, f"{dtype}: not perturbed")
        if not self.float_outputs:
            return InputWitness(index, name, dtype, Outcome.NONE,
                                "the node has no floating output to measure")
        # the step of the least precise dtype on the way: a float32 output of a float64
        # input cannot be differenced at float64's step
        fd_dtype = _least_precise([_elem_dtype(x)] + [_elem_dtype(node.base_outputs[j])
                                                      for j in self.float_outputs])
        if fd_dtype not in ZERO:
            return InputWitness(index, name, dtype, Outcome.NOT_RUN,
                                f"{fd_dtype}: too coarse for a two-step finite difference")
        h = STEP[fd_dtype]
        v = self.direction(a)
        points: list[Point] = []
        moves: list[Move] = []
        final: list[_Seen] = []
        for slot in range(POINTS):
            reasons: list[str] = []
            for draw in range(TRIES):
                p = self.point(a, slot, draw, fd_dtype)
                seen = self.observe(a, p, v, fd_dtype)
                if not seen.irregular:
                    break
                reasons.append(seen.reason())
            points.append(p)
            final.append(seen)
            if reasons:
                moves.append(Move(slot, min(len(reasons), TRIES - 1), tuple(reasons),
                                  settled=not seen.irregular))
        steps = f"steps {_fmt_step(h)}, {_fmt_step(h / 10)}"
        flat_everywhere = all(k is _Kind.FLAT for seen in final for k in seen.kinds.values())
        shaped = self.shape_input(a) if flat_everywhere else []
        pairs = tuple(self._pair(index, j, [seen.kinds[j] for seen in final], steps,
                                 j in shaped, next((f.refusal for f in final if f.refusal), ""))
                      for j in self.float_outputs)
        detail = _summary(pairs, steps, len(points))
        # a point irregular at every draw is already in its pair's detail
        settled = [m.detail for m in moves if m.settled]
        if settled:
            detail += "; " + "; ".join(settled)
        return InputWitness(index, name, dtype, _aggregate([p.outcome for p in pairs]), detail,
                            pairs, tuple(points), tuple(moves), h)

    @staticmethod
    def _pair(index: int | None, j: int, ks: list[_Kind], steps: str, shaped: bool,
              refusal: str) -> PairWitness:
        bad = [k for k in ks if not k.regular]
        if bad:
            measured = [k for k in bad if not k.unmeasured]
            what = (measured or bad)[0]
            outcome = Outcome.JUMP if measured else Outcome.NOT_RUN
            why = f"{what.value} ({refusal})" if what is _Kind.REFUSED else what.value
            detail = (f"{outcome.value} into output {j}: {why} at every draw of {len(bad)} "
                      f"of {len(ks)} points ({steps})")
        elif _Kind.SMOOTH in ks:
            outcome, n = Outcome.SMOOTH, ks.count(_Kind.SMOOTH)
            detail = f"smooth into output {j} at {n} point{'s' * (n != 1)} ({steps})"
        elif shaped:
            outcome = Outcome.JUMP
            detail = (f"jump into output {j}: zero at {len(ks)} points ({steps}), but its "
                      f"shape changes with the input's value (a shape input)")
        else:
            outcome = Outcome.FLAT
            detail = f"flat into output {j}: zero at {len(ks)} points ({steps})"
        return PairWitness(index, j, outcome, detail)


def _summary(pairs: Sequence[PairWitness], steps: str, n_points: int) -> str:
    """One line for an input over its outputs: each outcome with the outputs it holds."""
    if len(pairs) == 1:
        return pairs[0].detail
    parts = []
    for o in Outcome:
        js = [p.output for p in pairs if p.outcome is o]
        if js:
            parts.append(f"{o.value} into {_plural('output', js)}")
    return f"{'; '.join(parts)} ({n_points} points, {steps})"


def _sources(ws: Sequence[InputWitness]) -> str:
    """``inputs 0, 2 and outer value h`` for a list of input witnesses."""
    idx = [w.index for w in ws if w.index is not None]
    names = [w.name for w in ws if w.index is None]
    parts = [_plural("input", idx)] if idx else []
    if names:
        parts.append(f"outer value{'s' * (len(names) != 1)} {', '.join(names)}")
    return " and ".join(parts)


def measure(node: IsolatedNode, *, seed: int = 0) -> NodeWitness:
    """Measure every floating input of the isolated node into every floating output."""
    m = _Measure(node, seed)
    by_index = {a.index: a for a in node.lifted if a.index is not None}
    inputs = tuple(InputWitness(i, "", "", Outcome.ABSENT, "optional input not given")
                   if gname is None else m.input(by_index[i])
                   for i, gname in enumerate(node.input_names))
    outer = tuple(m.input(a) for a in node.lifted if a.index is None)
    every = inputs + outer
    outputs: list[OutputWitness] = []
    for j, y in enumerate(node.base_outputs):
        oname = node.output_names[j] or ""
        if y is None:
            outputs.append(OutputWitness(j, "", "", Outcome.ABSENT, "optional output not given"))
            continue
        dtype = _dtype(y)
        if not _is_float(y):
            outputs.append(OutputWitness(j, oname, dtype, Outcome.INTEGER,
                                         f"{dtype}: not differentiated"))
            continue
        from_ = [(w, p.outcome) for w in every for p in w.pairs if p.output == j]
        unmeasured = [w for w in every if w.outcome is Outcome.NOT_RUN and not w.pairs]
        outcome = _aggregate([o for _, o in from_] + [Outcome.NOT_RUN] * len(unmeasured))
        if outcome is Outcome.NONE:
            detail = "no floating input to measure"
        else:
            parts = [f"{o.value} from {_sources([w for w, oo in from_ if oo is o])}"
                     for o in Outcome if any(oo is o for _, oo in from_)]
            if unmeasured:
                parts.append(f"not measured: {_sources(unmeasured)}")
            detail = "; ".join(parts)
        outputs.append(OutputWitness(j, oname, dtype, outcome, detail))
    return NodeWitness(node.op, node.domain, node.node_index, node.node_name, node.runtime,
                       node.capture_runtime, node.why, seed, inputs, tuple(outputs), outer,
                       node.reproduces)


def witness(model: onnx.ModelProto, node_index: int, feeds: Mapping[str, np.ndarray], *,
            seed: int = 0) -> NodeWitness:
    """Isolate ``model.graph.node[node_index]`` on ``feeds`` and measure it. A node that
    cannot be isolated or run gives every parameter ``NOT_RUN`` with the reason."""
    try:
        node = isolate(model, node_index, feeds)
    except WitnessError as exc:
        return _not_run(model, node_index, str(exc), seed)
    why = _random_op(model, node_index) or _draws_anew(node)
    if why:
        return _not_run(model, node_index, why, seed)
    return measure(node, seed=seed)


def _random_op(model: onnx.ModelProto, node_index: int) -> str:
    """Why a sampling op is not measured: its schema has a ``seed`` attribute (Dropout,
    Bernoulli, RandomNormalLike...). A finite difference then differentiates one
    realization of its random draws (a runtime may even redraw them on every run),
    which is not the op's derivative ('' for a deterministic op)."""
    n = model.graph.node[node_index]
    version = next((i.version for i in model.opset_import if i.domain == n.domain), None)
    try:
        schema = onnx.defs.get_schema(n.op_type, version, n.domain) if version else \
            onnx.defs.get_schema(n.op_type, n.domain)
    except Exception:
        return ""
    if "seed" in schema.attributes:
        return (f"{n.op_type} samples random numbers (its schema has a seed attribute): a "
                "finite difference would differentiate one realization, not the op")
    return ""


def _draws_anew(node: IsolatedNode) -> str:
    """Why finite differences cannot measure the node: its outputs differ between two runs
    at the same point (Dropout in training, Bernoulli: a random op draws anew on every
    run), checked at the captured point and at a nudged one ('' when deterministic)."""
    m = MOVE["float32"]
    with np.errstate(all="ignore"):   # an inf or nan element stays what it is
        nudged = {a.name: _like(x, _flat(x) + m * (1 + np.abs(_flat(x))))
                  for a in node.lifted if _is_float(x := node.point[a.name])}
    for values in ({}, nudged):
        try:
            first, second = node.run(values), node.run(values)
        except Exception:   # a point the runtime refuses is measure's business
            continue
        for j, (a, b) in enumerate(zip(first, second)):
            if a is None or b is None:
                continue
            if any(not np.array_equal(x, y, equal_nan=True) for x, y in zip(_parts(a), _parts(b))):
                return (f"output {j} differs between two runs at the same point: the node draws "
                        "new random numbers on every run, so finite differences measure noise")
    return ""


def _not_run(model: onnx.ModelProto, node_index: int, why: str, seed: int) -> NodeWitness:
    if not 0 <= node_index < len(model.graph.node):
        return NodeWitness("", "", node_index, "", None, None, why, seed, (), ())
    n = model.graph.node[node_index]
    ins = tuple(InputWitness(i, name, "", Outcome.ABSENT if not name else Outcome.NOT_RUN,
                             "optional input not given" if not name else why)
                for i, name in enumerate(n.input))
    outs = tuple(OutputWitness(j, name, "", Outcome.ABSENT if not name else Outcome.NOT_RUN,
                               "optional output not given" if not name else why)
                 for j, name in enumerate(n.output))
    return NodeWitness(n.op_type, n.domain, node_index, n.name or f"{n.op_type}#{node_index}",
                       None, None, why, seed, ins, outs)


# ----------------------------------------------------------------------------- VJP
def vjp(node: IsolatedNode, index: int, v: Value, dy: Sequence[Value | None], *,
        point: Mapping[str, Value] | Point | None = None, step: float | None = None,
        seed: int = 0) -> float:
    """``<dy, (f(p + h v) - f(p - h v)) / 2h>`` for node input ``index``.

    ``v`` has the input's shape (a list of tensors for a sequence input); ``dy`` has one
    entry per node output (None: not contracted). ``point`` is the captured point by
    default, a ``Point`` of ``measure`` (with its ``seed``), or values by lifted input
    name overriding the captured ones. ``step`` defaults to ``numeric.STEP`` for the
    input's dtype. Compare with PyTorch's ``<grad_index, v>``.
    """
    if not 0 <= index < len(node.input_names) or node.input_names[index] is None:
        raise WitnessError(f"node input {index} is absent or does not exist")
    gname = node.input_names[index]
    if isinstance(point, Point):
        values = node.values_at(point, seed)
    else:
        values = dict(node.point)
        values.update(point or {})
    x = values[gname]
    if not _is_float(x):
        raise WitnessError(f"node input {index} is {_dtype(x)}: not differentiable")
    h = step if step is not None else STEP.get(_elem_dtype(x), 1e-3)
    flat, dv = _flat(x), _flat(v)
    plus = node.run({**values, gname: _like(x, flat + h * dv)})
    minus = node.run({**values, gname: _like(x, flat - h * dv)})
    total = 0.0
    for j, d in enumerate(dy):
        if d is None:
            continue
        total += float(np.sum(_flat(d) * (_flat(plus[j]) - _flat(minus[j]))) / (2 * h))
    return total
