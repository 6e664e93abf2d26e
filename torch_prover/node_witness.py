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
   arrays themselves (exact where shape inference can only guess).
2. **Measure** (``measure``): per floating node input ``i`` and floating node output
   ``j``, at the captured point and two seeded draws near it, with relative steps ``h``
   (``numeric.STEP``) and ``h/10`` along a seeded direction ``v``, each point is
   *regular* (``flat`` or ``smooth``) or *irregular*: a difference that does not settle
   as the step shrinks (a jump), one-sided differences that disagree and do not shrink
   (a kink or a tie: ReduceMax with tied maxima, Relu at 0), an output whose shape
   changes, or a value that turns non-finite. An irregular point is re-drawn (seeded,
   up to ``TRIES`` times, each move larger) and the move is recorded with its reason;
   a point still irregular after the last try makes ``i -> j`` a ``jump``. An input
   that is flat everywhere measured but changes an output's shape under a larger move
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
and categorical words, never a measured value, so they repeat on any machine.
"""
from __future__ import annotations

import copy
import enum
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import onnx
import onnx.helper
import onnx.numpy_helper
import onnx.utils

from .case import describe
from .mapping import _subgraph_names
from .numeric import FWD_TOL, STEP, _choose_runtime

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


class Outcome(enum.Enum):
    """What the numeric witness says about one node input (or output)."""

    SMOOTH = "smooth"       # nonzero derivative, stable as the step shrinks
    FLAT = "flat"           # zero derivative at every point
    JUMP = "jump"           # a discontinuity, or the output's shape depends on the value
    NONE = "none"           # nothing floating on the other side to measure
    INTEGER = "integer"     # integer / bool / string: never perturbed
    ABSENT = "absent"       # optional input or output not given
    NOT_RUN = "not-run"     # could not be measured (the detail says why)


@dataclass(frozen=True)
class Point:
    """Where a derivative was measured: ``slot`` 0 is the captured point, 1 and 2 seeded
    draws near it; ``draw`` counts re-draws (0: as first chosen); ``move`` is the
    relative size of the move from the captured point (0 for the captured point)."""

    slot: int
    draw: int
    move: float

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
            return f"{what} moved ({why}; regular after {self.redraws} re-draw" \
                   f"{'s' if self.redraws != 1 else ''})"
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


# ----------------------------------------------------------------------------- isolation
@dataclass(frozen=True)
class Lifted:
    """One input of the isolated model: the node input it stands for (``index``; None for
    an outer-scope value), its original value name and its graph input name."""

    index: int | None
    source: str
    name: str


def _value_info(name: str, value) -> onnx.ValueInfoProto:
    if isinstance(value, list):
        elem = onnx.helper.np_dtype_to_tensor_dtype(np.asarray(value[0]).dtype) if value else 1
        return onnx.helper.make_tensor_sequence_value_info(name, elem, None)
    arr = np.asarray(value)
    return onnx.helper.make_tensor_value_info(
        name, onnx.helper.np_dtype_to_tensor_dtype(arr.dtype), arr.shape)


def _output_info(name: str, value) -> onnx.ValueInfoProto:
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
    return sorted(_subgraph_names(g.node[node_index]) & scope)


def _capture(model: onnx.ModelProto, names: Sequence[str], feeds: Mapping[str, np.ndarray]):
    """The values of ``names`` in a run of ``model`` on ``feeds``, and the runtime."""
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    values: dict[str, object] = {}
    wanted = []
    graph_inputs = {i.name for i in g.input}
    feeds = {k: v for k, v in feeds.items() if k in graph_inputs}
    for n in names:
        if n in feeds:
            values[n] = np.asarray(feeds[n])
        elif n in inits:
            values[n] = onnx.numpy_helper.to_array(inits[n])
        else:
            wanted.append(n)
    runtime, why = None, ""
    if wanted or not values:
        m = copy.deepcopy(model)
        outs = [o.name for o in m.graph.output]
        # untyped extra outputs: both runtimes type them from the producing node
        m.graph.output.extend(onnx.ValueInfoProto(name=n) for n in wanted if n not in outs)
        outs = [o.name for o in m.graph.output]
        runner, got, why = _choose_runtime(m, dict(feeds))
        if runner is None:
            raise WitnessError(f"the exported model does not run ({why})")
        runtime = runner.kind
        for n in wanted:
            values[n] = got[outs.index(n)]
    return values, runtime, why


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

        # graph input names: a value read twice gets one input per use (the first use by
        # the subgraph keeps the original name), so each node input index moves alone
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
        self.point = {a.name: captured[a.source] for a in self.lifted}
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

        runner, got, why = _choose_runtime(one, dict(self.point))
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

    def run(self, values: Mapping[str, np.ndarray] | None = None) -> tuple:
        """Node outputs for the captured point updated with ``values`` (by lifted name)."""
        feeds = dict(self.point)
        if values:
            feeds.update(values)
        return self._order(self._runner.run(feeds))

    def values_at(self, point: Point, seed: int = 0) -> dict[str, np.ndarray]:
        """The lifted inputs' values at ``point`` (as ``measure`` with ``seed`` drew it)."""
        if point.slot == 0 and point.draw == 0:
            return dict(self.point)
        out = dict(self.point)
        for k, a in enumerate(self.lifted):
            x = self.point[a.name]
            if not _is_float(x):
                continue
            rng = np.random.default_rng([seed, 1, point.slot, point.draw, k])
            r = rng.standard_normal(np.shape(x))
            x64 = np.asarray(x, dtype=np.float64)
            with np.errstate(all="ignore"):   # an inf or nan input stays what it is
                moved = x64 + point.move * (np.abs(x64) + _scale(x64)) * r
            out[a.name] = np.asarray(moved).astype(np.asarray(x).dtype)
        return out


def _close(a, b) -> bool:
    if a is None or b is None or isinstance(a, list) or isinstance(b, list):
        return True
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if not _is_float(a):
        return bool(np.array_equal(a, b))
    tol = FWD_TOL.get(a.dtype.name, 1e-2)
    finite = np.abs(b[np.isfinite(b)])
    scale = max(1.0, float(finite.max(initial=0.0)))
    return bool(np.allclose(a, b, rtol=0, atol=tol * scale, equal_nan=True))


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
def _is_float(x) -> bool:
    return not isinstance(x, list) and np.issubdtype(np.asarray(x).dtype, np.floating)


def _scale(x: np.ndarray) -> float:
    """Root mean square of x, or 1 for an all-zero tensor: the size of a relative move."""
    x = x[np.isfinite(x)]
    with np.errstate(over="ignore"):
        rms = float(np.sqrt(np.mean(np.square(x)))) if x.size else 0.0
    return rms if rms > 0 and np.isfinite(rms) else 1.0


_PRECISION = ("float64", "float32", "float16", "bfloat16")


def _least_precise(dtypes: Sequence[str]) -> str:
    known = [d for d in dtypes if d in _PRECISION]
    unknown = [d for d in dtypes if d not in _PRECISION]
    if unknown:
        return unknown[0]
    return max(known, key=_PRECISION.index) if known else "float64"


class _Kind(enum.Enum):
    """How one output looked at one point (internal; regular: FLAT or SMOOTH)."""

    FLAT = "flat"
    SMOOTH = "smooth"
    SHAPE = "the output's shape changes"
    NONFINITE = "the output is or turns non-finite"
    JUMP = "the difference grows like 1/step"
    KINK = "one-sided differences differ (a kink or tie)"

    @property
    def regular(self) -> bool:
        return self in (_Kind.FLAT, _Kind.SMOOTH)


def _classify(y0, yp_h, ym_h, yp_l, ym_l, dtype: str) -> _Kind:
    """One output at one point, from f(p), f(p ± h v) and f(p ± h/10 v)."""
    shapes = {np.shape(y) for y in (yp_h, ym_h, yp_l, ym_l)}
    if shapes != {np.shape(y0)}:
        return _Kind.SHAPE
    y0, yp_h, ym_h, yp_l, ym_l = (np.asarray(y, dtype=np.float64)
                                  for y in (y0, yp_h, ym_h, yp_l, ym_l))
    if y0.size == 0:
        return _Kind.FLAT
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


class _Measure:
    def __init__(self, node: IsolatedNode, seed: int):
        self.node, self.seed = node, seed
        self._cache: dict[Point, tuple[dict, tuple]] = {}
        self.float_outputs = [j for j, y in enumerate(node.base_outputs)
                              if y is not None and _is_float(y)]

    def point(self, slot: int, draw: int, dtype: str) -> Point:
        if slot == 0 and draw == 0:
            return Point(0, 0, 0.0)
        k = draw - 1 if slot == 0 else draw
        return Point(slot, draw, MOVE[dtype] * 2.0 ** k)

    def at(self, p: Point) -> tuple[dict, tuple]:
        if p not in self._cache:
            values = self.node.values_at(p, self.seed)
            self._cache[p] = (values, self.node.run(values))
        return self._cache[p]

    def direction(self, a: Lifted) -> np.ndarray:
        x = np.asarray(self.node.point[a.name], dtype=np.float64)
        rng = np.random.default_rng([self.seed, 2, self.node.lifted.index(a)])
        with np.errstate(all="ignore"):
            v = rng.standard_normal(x.shape) * (np.abs(x) + _scale(x)) / 2
        return np.where(np.isfinite(v), v, 0.0)

    def observe(self, a: Lifted, p: Point, v: np.ndarray, dtype: str) -> dict[int, _Kind]:
        """How each floating output looks at ``p`` along ``v`` for input ``a``."""
        h = STEP[dtype]
        values, y0 = self.at(p)
        x = np.asarray(values[a.name], dtype=np.float64)
        dt = np.asarray(values[a.name]).dtype
        ys = {}
        for s in (h, h / 10):
            for sign in (1.0, -1.0):
                ys[s, sign] = self.node.run({**values,
                                              a.name: np.asarray(x + sign * s * v).astype(dt)})
        return {j: _classify(y0[j], ys[h, 1.0][j], ys[h, -1.0][j], ys[h / 10, 1.0][j],
                             ys[h / 10, -1.0][j], dtype)
                for j in self.float_outputs}

    def shape_input(self, a: Lifted, y0: tuple) -> list[int]:
        """Outputs whose shape changes when ``a`` alone moves by up to 50%."""
        x = np.asarray(self.node.point[a.name], dtype=np.float64)
        dt = np.asarray(self.node.point[a.name]).dtype
        changed: set[int] = set()
        for t in range(SHAPE_PROBES):
            rng = np.random.default_rng([self.seed, 3, self.node.lifted.index(a), t])
            with np.errstate(all="ignore"):
                moved = x * (1 + rng.uniform(-0.5, 0.5, x.shape)) \
                    + 0.5 * _scale(x) * rng.standard_normal(x.shape)
            try:
                ys = self.node.run({a.name: np.asarray(moved).astype(dt)})
            except Exception:  # a value the op refuses says nothing about shapes
                continue
            changed |= {j for j in self.float_outputs if np.shape(ys[j]) != np.shape(y0[j])}
        return sorted(changed)

    def input(self, a: Lifted) -> InputWitness:
        node = self.node
        x = node.point[a.name]
        name, index = a.source, a.index
        dtype = "sequence" if isinstance(x, list) else np.asarray(x).dtype.name
        if isinstance(x, list):
            return InputWitness(index, name, dtype, Outcome.NOT_RUN,
                                "a sequence: its elements are not perturbed")
        if not _is_float(x):
            return InputWitness(index, name, dtype, Outcome.INTEGER, f"{dtype}: not perturbed")
        if not self.float_outputs:
            return InputWitness(index, name, dtype, Outcome.NONE,
                                "the node has no floating output to measure")
        # the step of the least precise dtype on the way: a float32 output of a float64
        # input cannot be differenced at float64's step
        fd_dtype = _least_precise([dtype] + [np.asarray(node.base_outputs[j]).dtype.name
                                             for j in self.float_outputs])
        if fd_dtype not in ZERO:
            return InputWitness(index, name, dtype, Outcome.NOT_RUN,
                                f"{fd_dtype}: too coarse for a two-step finite difference")
        h = STEP[fd_dtype]
        v = self.direction(a)
        points: list[Point] = []
        moves: list[Move] = []
        final: list[dict[int, _Kind]] = []
        try:
            for slot in range(POINTS):
                reasons: list[str] = []
                for draw in range(TRIES):
                    p = self.point(slot, draw, fd_dtype)
                    kinds = self.observe(a, p, v, fd_dtype)
                    bad = [(j, k) for j, k in kinds.items() if not k.regular]
                    if not bad:
                        break
                    reasons.append("; ".join(f"output {j}: {k.value}" for j, k in bad))
                points.append(p)
                final.append(kinds)
                if reasons:
                    moves.append(Move(slot, min(len(reasons), TRIES - 1), tuple(reasons),
                                      settled=not bad))
        except Exception as exc:  # a runtime refusing a perturbed point
            return InputWitness(index, name, dtype, Outcome.NOT_RUN,
                                f"perturbing it failed in {node.runtime}: {describe(exc)}",
                                step=h)
        steps = f"steps {_fmt_step(h)}, {_fmt_step(h / 10)}"
        pairs: list[PairWitness] = []
        flat_everywhere = all(k is _Kind.FLAT for kinds in final for k in kinds.values())
        shaped = self.shape_input(a, self.at(Point(0, 0, 0.0))[1]) if flat_everywhere else []
        for j in self.float_outputs:
            ks = [kinds[j] for kinds in final]
            irregular = [k for k in ks if not k.regular]
            if irregular:
                what = irregular[0]
                outcome = Outcome.NOT_RUN if what is _Kind.NONFINITE else Outcome.JUMP
                detail = (f"{outcome.value} into output {j}: {what.value} at every draw of "
                          f"{sum(not k.regular for k in ks)} of {len(ks)} points ({steps})")
            elif any(k is _Kind.SMOOTH for k in ks):
                outcome = Outcome.SMOOTH
                n = sum(k is _Kind.SMOOTH for k in ks)
                detail = f"smooth into output {j} at {n} point{'s' * (n != 1)} ({steps})"
            elif j in shaped:
                outcome = Outcome.JUMP
                detail = (f"jump into output {j}: zero at {len(ks)} points ({steps}), but its "
                          f"shape changes with the input's value (a shape input)")
            else:
                outcome = Outcome.FLAT
                detail = f"flat into output {j}: zero at {len(ks)} points ({steps})"
            pairs.append(PairWitness(index, j, outcome, detail))
        outcome = _aggregate([p.outcome for p in pairs])
        detail = _summary(pairs, steps, len(points))
        if moves:
            detail += "; " + "; ".join(m.detail for m in moves)
        return InputWitness(index, name, dtype, outcome, detail, tuple(pairs), tuple(points),
                            tuple(moves), h)


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
    """``inputs 0, 2; outer value h`` for a list of input witnesses."""
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
    inputs: list[InputWitness] = []
    for i, gname in enumerate(node.input_names):
        if gname is None:
            inputs.append(InputWitness(i, "", "", Outcome.ABSENT, "optional input not given"))
        else:
            inputs.append(m.input(by_index[i]))
    outer = tuple(m.input(a) for a in node.lifted if a.index is None)
    outputs: list[OutputWitness] = []
    measured = [w for w in inputs + list(outer) if w.pairs]
    for j, y in enumerate(node.base_outputs):
        oname = node.output_names[j] or ""
        if y is None:
            outputs.append(OutputWitness(j, "", "", Outcome.ABSENT, "optional output not given"))
            continue
        dtype = "sequence" if isinstance(y, list) else np.asarray(y).dtype.name
        if not _is_float(y):
            outputs.append(OutputWitness(j, oname, dtype, Outcome.INTEGER,
                                         f"{dtype}: not differentiated"))
            continue
        from_ = [(w, p.outcome) for w in measured for p in w.pairs if p.output == j]
        unmeasured = [w for w in inputs + list(outer)
                      if w.outcome is Outcome.NOT_RUN and not w.pairs]
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
                       node.capture_runtime, node.why, seed, tuple(inputs), tuple(outputs),
                       outer, node.reproduces)


def witness(model: onnx.ModelProto, node_index: int, feeds: Mapping[str, np.ndarray], *,
            seed: int = 0) -> NodeWitness:
    """Isolate ``model.graph.node[node_index]`` on ``feeds`` and measure it. A node that
    cannot be isolated or run gives every parameter ``NOT_RUN`` with the reason."""
    try:
        node = isolate(model, node_index, feeds)
    except WitnessError as exc:
        return _not_run(model, node_index, str(exc), seed)
    return measure(node, seed=seed)


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
def vjp(node: IsolatedNode, index: int, v: np.ndarray, dy: Sequence[np.ndarray | None], *,
        point: Mapping[str, np.ndarray] | Point | None = None, step: float | None = None,
        seed: int = 0) -> float:
    """``<dy, (f(p + h v) - f(p - h v)) / 2h>`` for node input ``index``.

    ``dy`` has one entry per node output (None: not contracted); ``point`` is the
    captured point by default, a ``Point`` of ``measure`` (with its ``seed``), or values
    by lifted input name overriding the captured ones. ``step`` defaults to
    ``numeric.STEP`` for the input's dtype. Compare with PyTorch's ``<grad_index, v>``.
    """
    if not 0 <= index < len(node.input_names) or node.input_names[index] is None:
        raise WitnessError(f"node input {index} is absent or does not exist")
    gname = node.input_names[index]
    if isinstance(point, Point):
        values = node.values_at(point, seed)
    else:
        values = dict(node.point)
        values.update(point or {})
    x = np.asarray(values[gname])
    if not _is_float(x):
        raise WitnessError(f"node input {index} is {x.dtype.name}: not differentiable")
    h = step if step is not None else STEP.get(x.dtype.name, 1e-3)
    x64 = x.astype(np.float64)
    v = np.asarray(v, dtype=np.float64)
    plus = node.run({**values, gname: np.asarray(x64 + h * v).astype(x.dtype)})
    minus = node.run({**values, gname: np.asarray(x64 - h * v).astype(x.dtype)})
    total = 0.0
    for j, d in enumerate(dy):
        if d is None:
            continue
        diff = np.asarray(plus[j], dtype=np.float64) - np.asarray(minus[j], dtype=np.float64)
        total += float(np.sum(np.asarray(d, dtype=np.float64) * diff) / (2 * h))
    return total
