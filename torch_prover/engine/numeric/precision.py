"""The precision a runtime really computed in, measured on the values it returned.

Why: a float64 model is not always computed in float64. onnxruntime lacks some float64
kernels (Erf), and the reference evaluator that runs them instead computes some ops in
float32 (``onnx/reference/ops/op_erf.py``: ``np.vectorize(erf, otypes=["f"])``), so a float64
GELU comes back with float32 rounding inside it. Finite differences at float64's step
(1e-6) then difference that rounding: the numeric witness sees a "jump" and the verdict
blamed PyTorch's gradient. A step and tolerances must follow the precision the numbers
were really computed in, and the record must say which that was.

How: the outputs are read at four equally spaced points along one direction, ``p + k s v``
(k = 1..4; one side of ``p``, so a kink at ``p`` itself stays out), and their third
difference ``y1 - 3 y2 + 3 y3 - y4`` is taken, relative to the outputs' scale, at the 75th
percentile of the elements (a jump shows in the few elements that cross it; rounding in
nearly all). For a function
computed in exact arithmetic it is ``s^3 f'''``: at ``s = 1e-6`` about 1e-18. What is left is
rounding: a few ulps of the precision actually used -- about 1e-15 in float64, 1e-7 when any
step inside rounds to float32 (the steps cross ~8 float32 rounding boundaries each, so nearly
every element shows it). The least precise type whose resolution bound the measurement
stays within is the precision the runtime computed in (``RESOLUTION``: a margin of four
orders of magnitude on each side). The measured level never enters a record (it varies with
the machine); only the precision's name does.

A runtime may also be *given* a lower precision: onnxruntime running a float32 copy of a
float64 model (``engine/versions/float32_copy.py``) computes in float32 at best, whatever a
measurement along one direction shows (a flat output shows no rounding). ``Given`` says
so, and the computed precision is then the coarser of the given and the measured one; the
words name the copy and why it ran.

Used by both numeric witnesses: ``numeric.check`` (the whole model's VJP check) and
``measure`` (the isolated node), which take their steps, zero thresholds and tolerances
from the computed precision, not from the declared one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Collection, Sequence

import numpy as np

PROBE_STEP = {"float64": 1e-6, "float32": 1e-3}
"""Relative step between the four points, per declared precision."""
RESOLUTION = (("float64", 1e-11), ("float32", 1e-4))
"""(precision, largest relative third difference its rounding explains), most precise
first. float64 rounding gives ~1e-15, float32's ~1e-7, float16's ~1e-3."""
COARSER = "float16"
"""What a third difference beyond every bound says: coarser than float32."""


def runtime_name(kind: str | None) -> str:
    """A runtime as a reader knows it (``numeric.Runner``'s kind ``reference`` is
    ``onnx.reference``)."""
    return {"reference": "onnx.reference"}.get(kind or "", kind or "")


@dataclass(frozen=True)
class Given:
    """A precision the runtime was given rather than measured: it ran a ``dtype`` copy of
    the model, ``why`` (``no float64 kernel for Conv-11``)."""

    dtype: str
    why: str


@dataclass(frozen=True)
class Precision:
    """The precision values were declared in (their dtype) and the one the runtime's
    outputs show they were computed in (or were given: ``given``)."""

    declared: str
    computed: str
    runtime: str = ""
    given: Given | None = None

    @property
    def lowered(self) -> bool:
        return self.computed != self.declared

    def words(self) -> str:
        """For a reason or a detail: categorical, the same on every machine."""
        who = self.runtime or "the runtime"
        if self.given is not None:
            at = "" if self.computed == self.given.dtype else \
                f", at {self.computed} resolution"
            return (f"{who} ran a {self.given.dtype} copy of these {self.declared} values "
                    f"({self.given.why}){at}")
        return f"{who} computed these {self.declared} values at {self.computed} resolution"

    def record(self) -> dict[str, str]:
        return {"declared": self.declared, "computed": self.computed, "why": self.words()}


QUANTILE = 75
"""Which element's third difference speaks for an output: rounding noise shows in nearly
every element, while a jump (a quantizer's step, a Floor) shows in the few that cross one
-- a genuinely discontinuous float64 op must not pass for a float32 computation."""


def _third_difference(ys: Sequence[Sequence[np.ndarray]]) -> float:
    """max over outputs of the QUANTILE-th percentile of |y1 - 3 y2 + 3 y3 - y4| / scale
    (finite elements only)."""
    worst = 0.0
    for parts in zip(*ys):
        arrays = [np.asarray(p, dtype=np.float64).ravel() for p in parts]
        if len({a.shape for a in arrays}) != 1 or not arrays[0].size:
            return float("inf") if len({a.shape for a in arrays}) != 1 else worst
        stacked = np.stack(arrays)
        finite = np.isfinite(stacked).all(axis=0)
        if not finite.any():
            continue
        y1, y2, y3, y4 = stacked[:, finite]
        scale = float(np.abs(stacked[:, finite]).max())
        if scale == 0.0:
            continue
        third = float(np.percentile(np.abs(y1 - 3 * y2 + 3 * y3 - y4), QUANTILE)) / scale
        worst = max(worst, third)
    return worst


def computed_precision(outputs_at: Callable[[float], Sequence[np.ndarray]], declared: str,
                       runtime: str = "", given: Given | None = None) -> Precision:
    """The precision the runtime computed in: the coarser of what ``given`` says it was
    given (a float32 copy) and what its outputs show. ``outputs_at(t)``: the floating
    outputs (as arrays) with the caller's inputs moved by ``t`` (relative) along its
    direction. A declared precision this module has no step for, a point the runtime
    refuses, an output whose shape changes: nothing was measured, and the declared (or
    given) precision stands."""
    measured = _measured(outputs_at, declared)
    order = [name for name, _ in RESOLUTION] + [COARSER]
    if given is not None and given.dtype in order and (
            measured not in order or order.index(given.dtype) > order.index(measured)):
        measured = given.dtype
    return Precision(declared, measured, runtime, given)


def _measured(outputs_at: Callable[[float], Sequence[np.ndarray]], declared: str) -> str:
    step = PROBE_STEP.get(declared)
    if step is None:
        return declared
    try:
        ys = [list(outputs_at(k * step)) for k in (1, 2, 3, 4)]
    except Exception:  # the runtime refuses a point: nothing measured, nothing claimed
        return declared
    if not ys[0]:
        return declared
    noise = _third_difference(ys)
    if noise == float("inf"):
        return declared
    order = [name for name, _ in RESOLUTION]
    start = order.index(declared) if declared in order else 0
    for name, bound in RESOLUTION[start:]:
        if noise <= bound:
            return name
    return COARSER


def model_precision(run: Callable[[dict[str, np.ndarray]], Sequence], feeds: dict[str, np.ndarray],
                    declared: str, runtime: str = "", drawn: Collection[int] = (),
                    given: Given | None = None) -> Precision:
    """The precision a runtime computes a whole model in: every floating feed moved at once
    along a seeded direction scaled to each element (``(|x| + rms x) / 2``, as the node
    witness moves one input), the floating outputs compared -- except the random draws
    (``drawn``: output indices), which a runtime may draw anew on every run."""
    floats = {k: np.asarray(v) for k, v in feeds.items()
              if np.issubdtype(np.asarray(v).dtype, np.floating)}
    if not floats:
        return computed_precision(lambda t: [], declared, runtime, given)
    gen = np.random.default_rng(30_000)
    direction = {}
    for k, x in floats.items():
        x64 = x.astype(np.float64)
        finite = x64[np.isfinite(x64)]
        rms = float(np.sqrt(np.mean(np.square(finite)))) if finite.size else 0.0
        scale = (np.abs(x64) + (rms if rms > 0 and np.isfinite(rms) else 1.0)) / 2
        direction[k] = np.where(np.isfinite(scale), gen.standard_normal(x.shape) * scale, 0.0)

    def outputs_at(t: float) -> list[np.ndarray]:
        moved = {**feeds, **{k: np.asarray(floats[k].astype(np.float64) + t * direction[k])
                             .astype(floats[k].dtype) for k in floats}}
        return [np.asarray(y) for j, y in enumerate(run(moved))
                if j not in drawn and np.issubdtype(np.asarray(y).dtype, np.floating)]
    return computed_precision(outputs_at, declared, runtime, given)
