"""Measure an isolated node (step 2 of the node witness; the method and its thresholds
are in ``node_witness``'s docstring): per floating node input and floating node output,
central differences at three points and two step sizes, each point regular (flat,
smooth) or irregular (jump, kink, shape change, non-finite, refused) and re-drawn when
irregular.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ...vocab import NumericOutcome
from .isolate import (IsolatedNode, Lifted, Point, Value, elem_dtype, flat_values,
                      is_float_value, refusal_line, relative_to, rms_scale, shaped_like,
                      value_dtype, value_parts, value_shape)
from ..versions.float32_copy import KernelGap
from .numeric import STEP
from .precision import Precision, computed_precision, runtime_name

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

Outcome = NumericOutcome
"""What the numeric witness says about one node input (or output): vocab.NumericOutcome."""


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
    copy: KernelGap | None = None    # the isolated node ran as a float32 copy (float32_copy)

    def input(self, index: int) -> InputWitness:
        return self.inputs[index]

    def output(self, index: int) -> OutputWitness:
        return self.outputs[index]


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
    if {value_shape(y) for y in (yp_h, ym_h, yp_l, ym_l)} != {value_shape(y0)}:
        return _Kind.SHAPE
    y0, yp_h, ym_h, yp_l, ym_l = (flat_values(y) for y in (y0, yp_h, ym_h, yp_l, ym_l))
    if y0.size == 0:
        return _Kind.EMPTY if flat_values(captured).size else _Kind.FLAT
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
    def __init__(self, node: IsolatedNode, seed: int, steps: str | None = None):
        self.node, self.seed, self.steps = node, seed, steps
        self._cache: dict[Point, tuple[dict, tuple]] = {}
        self.float_outputs = [j for j, y in enumerate(node.base_outputs)
                              if y is not None and is_float_value(y)]

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
        x = flat_values(self.node.point[a.name])
        rng = np.random.default_rng([self.seed, 2, self.node.position(a.name)])
        return relative_to(x, rng.standard_normal(x.shape))

    def observe(self, a: Lifted, p: Point, v: np.ndarray, dtype: str) -> _Seen:
        """How each floating output looks at ``p`` along ``v`` for input ``a``."""
        h = STEP[self.steps or dtype]
        try:
            values, y0 = self.at(p)
            x = values[a.name]
            ys = {}
            for s in (h, h / 10):
                for sign in (1.0, -1.0):
                    moved = shaped_like(x, flat_values(x) + sign * s * v)
                    ys[s, sign] = self.node.run({**values, a.name: moved})
        except Exception as exc:  # the runtime refuses this point: a reason to move it
            return _Seen({j: _Kind.REFUSED for j in self.float_outputs}, refusal_line(exc))
        return _Seen({j: _classify(y0[j], ys[h, 1.0][j], ys[h, -1.0][j], ys[h / 10, 1.0][j],
                                   ys[h / 10, -1.0][j], dtype, self.node.base_outputs[j])
                      for j in self.float_outputs})

    def precision(self, a: Lifted, declared: str) -> Precision:
        """The precision the runtime computes the node in, moving ``a`` alone from the
        captured point (``precision``): a float64 node run in float32 inside (the reference
        evaluator's Erf) is differenced at float32's steps."""
        values, _ = self.at(Point(0, 0, 0.0))
        x = values[a.name]
        flat, v = flat_values(x), self.direction(a)

        def outputs_at(t: float) -> list[np.ndarray]:
            ys = self.node.run({**values, a.name: shaped_like(x, flat + t * v)})
            return [flat_values(ys[j]) for j in self.float_outputs]
        return computed_precision(outputs_at, declared, runtime_name(self.node.runtime),
                                  self.node.given)

    def shape_input(self, a: Lifted) -> list[int]:
        """Outputs whose shape changes when ``a`` alone moves by up to 50%."""
        y0 = self.node.base_outputs
        x = self.node.point[a.name]
        flat = flat_values(x)
        changed: set[int] = set()
        for t in range(SHAPE_PROBES):
            rng = np.random.default_rng([self.seed, 3, self.node.position(a.name), t])
            with np.errstate(all="ignore"):
                moved = flat * (1 + rng.uniform(-0.5, 0.5, flat.shape)) \
                    + 0.5 * rms_scale(flat) * rng.standard_normal(flat.shape)
            try:
                ys = self.node.run({a.name: shaped_like(x, moved)})
            except Exception:  # a value the op refuses says nothing about shapes
                continue
            changed |= {j for j in self.float_outputs if value_shape(ys[j]) != value_shape(y0[j])}
        return sorted(changed)

    def input(self, a: Lifted) -> InputWitness:
        node = self.node
        x = node.point[a.name]
        name, index, dtype = a.source, a.index, value_dtype(x)
        if isinstance(x, list) and not x:
            return InputWitness(index, name, dtype, Outcome.NOT_RUN,
                                "an empty sequence: nothing to perturb")
        if not any(p.size for p in value_parts(x)):   # Resize-11's "unused" empty scales
            return InputWitness(index, name, dtype, Outcome.NOT_RUN,
                                "an empty tensor: nothing to perturb")
        if not is_float_value(x):
            return InputWitness(index, name, dtype, Outcome.INTEGER, f"{dtype}: not perturbed")
        if not self.float_outputs:
            return InputWitness(index, name, dtype, Outcome.NONE,
                                "the node has no floating output to measure")
        # the step of the least precise dtype on the way: a float32 output of a float64
        # input cannot be differenced at float64's step
        fd_dtype = _least_precise([elem_dtype(x)] + [elem_dtype(node.base_outputs[j])
                                                      for j in self.float_outputs])
        computed = self.precision(a, fd_dtype)
        fd_dtype = computed.computed
        if fd_dtype not in ZERO:
            return InputWitness(index, name, dtype, Outcome.NOT_RUN,
                                f"{fd_dtype}: too coarse for a two-step finite difference"
                                + (f" ({computed.words()})" if computed.lowered else ""))
        h = STEP[self.steps or fd_dtype]
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
        steps = f"steps {_fmt_step(h)}, {_fmt_step(h / 10)}" + (
            f"; {computed.words()}" if computed.lowered else "")
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


def measure(node: IsolatedNode, *, seed: int = 0, steps: str | None = None) -> NodeWitness:
    """Measure every floating input of the isolated node into every floating output
    (``steps``: another precision's steps, zero still the computed one's: ``redraw``)."""
    m = _Measure(node, seed, steps)
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
        dtype = value_dtype(y)
        if not is_float_value(y):
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
                       node.reproduces, node.copy)
