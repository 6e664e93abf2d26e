"""What ONNX's points say about one decided cell (op, schema version, parameter).

The rule (docs/verdicts.md, "ONNX's points"): each outcome says what it says for the
catalogue's numeric witness (``engine/rules/verdict.NUMERIC_SAYS``: smooth -> differentiable;
flat, jump, or no floating output -> non-differentiable; integer, absent, not run ->
nothing). A parameter the verdict calls non-differentiable that is smooth and nonzero at an
ONNX point is a *contradiction*, flagged, never an override; otherwise it agrees. One the
verdict calls differentiable agrees when smooth at a point, and is *not exercised* when no
point shows a derivative -- ONNX's inputs may sit where the derivative vanishes (a one-hot
index, a zero bias), so that is shown but contradicts nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from ...compat import StrEnum
from typing import Iterable, Sequence

from ...vocab import BodyOutcome, NumericOutcome, PointsState, Tag
from ..rules.verdict import BODY_SAYS, NUMERIC_SAYS


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


class CaseFreeRule(StrEnum):
    """Which witnesses decided a case-free cell (``verify-all --case-free``): the catalogue's
    rules with ONNX's points in the numeric witness's place and no autograd witness."""

    BY_TYPE = "by type"
    POINTS_AND_BODY = "case-free: ONNX's points and the function body"
    POINTS_ONLY = "case-free: ONNX's points only"
    DISAGREE = "case-free: ONNX's points and the function body disagree"
    BODY_ONLY = "case-free: function body only"     # it decides nothing alone (engine/rules/verdict.py)
    NOT_EXERCISED = "case-free: not exercised at ONNX's points"
    FLAT_THERE_ONLY = "case-free: flat at ONNX's points only"   # smooth at re-drawn points
    POINTS_FLOAT64 = "case-free: ONNX's points in float64"   # flat in float32, smooth in float64
    BODY_DEPENDENT = "case-free: body-dependent"   # a graph op: the body it is given decides


@dataclass(frozen=True)
class CaseFree:
    """A case-free cell: the tag its witnesses support (None: undecided) and the rule."""

    supports: Tag | None
    rule: CaseFreeRule


def body_says(bodies: Iterable[BodyOutcome]) -> Tag | None:
    """The function body's tag over the node tests (a path in any: differentiable)."""
    said = {BODY_SAYS[BodyOutcome(b)] for b in bodies} - {None}
    if not said:
        return None
    return Tag.DIFF if Tag.DIFF in said else Tag.NONDIFF


def case_free(outcomes: Sequence[NumericOutcome], bodies: Sequence[BodyOutcome],
              by_type: bool, redrawn: Sequence[bool] = (), graph_op: bool = False,
              float64: Sequence[bool] = ()) -> CaseFree:
    """A parameter decided without a case: by type first (``engine/rules/by_type.py``); a
    graph op's (If, Loop, Scan, SequenceMap) data then depends on the body it is given, so
    the convention ``body-dependent`` says unknown, as the catalogue's cases do; then ONNX's
    points as the one numeric witness (``supports_at_points``), confirmed -- or left
    inconclusive -- by the function body where the schema has one; the body alone decides
    nothing, as in the catalogue. ``redrawn``: per test, the parameter was smooth at
    re-drawn values of the test's inputs (``engine/numeric/redraw``): flat at ONNX's points
    only is where the points sit, not the op's math -- inconclusive, never non-differentiable.
    ``float64``: per test, the parameter, flat there in the test's precision, was smooth in
    float64 at the same point (the schema admitting double, a runtime computing it): the
    points show a derivative after all -- differentiable, confirmed or left inconclusive by
    the function body as any point's derivative is."""
    if by_type:
        return CaseFree(Tag.NONDIFF, CaseFreeRule.BY_TYPE)
    if graph_op:
        return CaseFree(Tag.UNKNOWN, CaseFreeRule.BODY_DEPENDENT)
    n, b = supports_at_points(outcomes), body_says(bodies)
    if n is Tag.NONDIFF and any(float64):
        return CaseFree(None, CaseFreeRule.DISAGREE) if b not in (None, Tag.DIFF) else \
            CaseFree(Tag.DIFF, CaseFreeRule.POINTS_FLOAT64)
    if n is Tag.NONDIFF and any(redrawn):
        return CaseFree(None, CaseFreeRule.FLAT_THERE_ONLY)
    if n is None:
        return CaseFree(None, CaseFreeRule.BODY_ONLY if b else CaseFreeRule.NOT_EXERCISED)
    if b is None:
        return CaseFree(n, CaseFreeRule.POINTS_ONLY)
    if b != n:
        return CaseFree(None, CaseFreeRule.DISAGREE)
    return CaseFree(n, CaseFreeRule.POINTS_AND_BODY)
