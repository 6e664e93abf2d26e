"""What ONNX's points say about one decided cell (op, schema version, parameter).

The rule (docs/verdicts.md, "ONNX's points"): each outcome says what it says for the
catalogue's numeric witness (``engine/verdict.NUMERIC_SAYS``: smooth -> differentiable;
flat, jump, or no floating output -> non-differentiable; integer, absent, not run ->
nothing). A parameter the verdict calls non-differentiable that is smooth and nonzero at an
ONNX point is a *contradiction*, flagged, never an override; otherwise it agrees. One the
verdict calls differentiable agrees when smooth at a point, and is *not exercised* when no
point shows a derivative -- ONNX's inputs may sit where the derivative vanishes (a one-hot
index, a zero bias), so that is shown but contradicts nothing.
"""
from __future__ import annotations

from typing import Iterable

from ...vocab import NumericOutcome, PointsState, Tag
from ..verdict import NUMERIC_SAYS


def supports_at_points(outcomes: Iterable[NumericOutcome]) -> Tag | None:
    """The tag ONNX's points alone support for a parameter, by the catalogue's rule for one
    numeric witness: differentiable when any point shows a derivative, non-differentiable
    when every measured point says so, None when no point measured it."""
    said = {NUMERIC_SAYS[NumericOutcome(o)] for o in outcomes} - {None}
    if not said:
        return None
    return Tag.DIFF if Tag.DIFF in said else Tag.NONDIFF


def cell_state(supports: str, outcomes: Iterable[NumericOutcome]) -> PointsState:
    """The state of a cell whose verdict supports ``supports``, given the numeric witness's
    outcomes for its parameter at every ONNX point measured."""
    said = supports_at_points(outcomes)
    if said is None:
        return PointsState.NOT_AVAILABLE
    if supports == Tag.NONDIFF:
        return PointsState.CONTRADICT if said == Tag.DIFF else PointsState.AGREE
    return PointsState.AGREE if said == Tag.DIFF else PointsState.NOT_EXERCISED
