"""Two witnesses + the schema's tag -> one verdict per ONNX parameter. Pure, no I/O.

The witnesses: PyTorch autograd (what ``torch.autograd`` says about the tensor that became
this node parameter, counted only when it reached the node through value-preserving
glue) and the ONNX node's own finite differences (``node_witness``). Each says
differentiable (D), non-differentiable (N), or nothing (None). The rule is this table
(DESIGN §1, stage 5; the README repeats it):

=========  =========  ==============  ============================================
autograd   numeric    supports        reason starts with
=========  =========  ==============  ============================================
D          D          D               both witnesses (a failed VJP check: inconclusive)
N          N          N               both witnesses
D          N          --              inconclusive: a surrogate / straight-through gradient?
N          D          D               numeric witness: PyTorch does not track a derivative
None       D or N     the numeric's   numeric witness only (no autograd evidence here)
D or N     None       the autograd's  autograd only (a reference case: inconclusive)
None       None       --              inconclusive: not exercised
=========  =========  ==============  ============================================

Before the table: a parameter whose schema allows no gradient-carrying type is N by type,
and so is every input of an op none of whose outputs allows one (OptionalHasElement,
NMS) -- the schema alone decides those (``engine.by_type``, which also decides the
parameters of ops without a case); then an ambiguous attribution or a forward
mismatch makes the verdict inconclusive.
``agree`` therefore always rests on evidence that could have said ``disagree``.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ..vocab import AutogradOutcome as A
from ..vocab import NumericOutcome as N
from ..vocab import Tag, Verdict

AGREE, DISAGREE, PROPOSED, INCONCLUSIVE = (Verdict.AGREE, Verdict.DISAGREE, Verdict.PROPOSED,
                                           Verdict.INCONCLUSIVE)
VERDICTS = tuple(Verdict)

AUTOGRAD_SAYS: dict[A, Tag | None] = {
    A.GRAD: Tag.DIFF, A.ZERO: Tag.NONDIFF, A.NONE: Tag.NONDIFF, A.DETACHED: Tag.NONDIFF,
    A.INTEGER: None, A.UNSUPPORTED: None, A.NOT_EXERCISED: None}
NUMERIC_SAYS: dict[N, Tag | None] = {
    N.SMOOTH: Tag.DIFF, N.FLAT: Tag.NONDIFF, N.JUMP: Tag.NONDIFF, N.NONE: Tag.NONDIFF,
    N.INTEGER: None, N.ABSENT: None, N.NOT_RUN: None}
"""What each outcome says. Integer outcomes say nothing here: integer evidence decides only
where the schema allows no floating type, which the by-type rule covers."""


class Rule(StrEnum):
    """Which row of the table decided: a record field, so reports never parse reasons."""

    AMBIGUOUS = "ambiguous attribution"
    FORWARD = "forward mismatch"
    BY_TYPE = "by type"
    BOTH = "both witnesses"
    CONFLICT = "witnesses conflict"
    NUMERIC_OVER_AUTOGRAD = "numeric witness over autograd"
    NUMERIC_ONLY = "numeric witness only"
    AUTOGRAD_ONLY = "autograd only"
    VJP_FAILED = "VJP check failed"
    NEEDS_NUMERIC = "reference case without numeric confirmation"
    NOT_EXERCISED = "not exercised"


class Vjp(StrEnum):
    """PyTorch's vector-Jacobian product against the ONNX model's finite difference."""

    PASSED = "passed"
    FAILED = "failed"
    AT_JUMP = "at a jump"      # failed where the numeric witness found a tie/kink: a subgradient
    EMPTY = "compared nothing"   # every compared value was zero: not a pass
    NOT_RUN = "not run"


@dataclass(frozen=True)
class Witness:
    outcome: A | N
    detail: str

    @property
    def says(self) -> Tag | None:
        if isinstance(self.outcome, A):
            return AUTOGRAD_SAYS[self.outcome]
        return NUMERIC_SAYS[self.outcome]


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    supports: Tag | None
    rule: Rule
    reason: str


def judge(supports: Tag | None, tag: Tag) -> Verdict:
    """What the supported tag means against the schema's tag."""
    if supports is None:
        return INCONCLUSIVE
    if tag == Tag.UNKNOWN:
        return PROPOSED
    return AGREE if supports == tag else DISAGREE


def _decision(supports: Tag | None, rule: Rule, reason: str, tag: Tag) -> Decision:
    """A row of the table against the schema's tag, its reason completed for a reader."""
    verdict = judge(supports, tag)
    if supports is not None and verdict == DISAGREE and rule != Rule.BY_TYPE:
        reason += f", but the schema says {tag}"
    elif verdict == PROPOSED:
        reason += f" -> propose {supports}"
    return Decision(verdict, supports, rule, reason)


def by_type_decision(tag: Tag, reason: str) -> Decision:
    """The by-type row: non-differentiable, whatever a witness says or whether there is a
    case at all (``engine.by_type`` says when it applies and why). The one place a by-type
    verdict is made, for a case's parameters and a case-less op's alike."""
    return _decision(Tag.NONDIFF, Rule.BY_TYPE, reason, tag)


def decide(*, autograd: Witness, numeric: Witness, tag: Tag, by_type: str | None = None,
           problem: str | None = None, forward: str | None = None,
           vjp: Vjp = Vjp.NOT_RUN, vjp_detail: str = "", reference: bool = False) -> Decision:
    """The verdict of one parameter (the module docstring's table). ``by_type``: why the
    schema's types alone decide this parameter (``engine.by_type.type_reason``), or None."""
    def done(supports: Tag | None, rule: Rule, reason: str) -> Decision:
        return _decision(supports, rule, reason, tag)

    if by_type is not None:   # the schema alone decides: no evidence is needed, none can differ
        return by_type_decision(tag, by_type)
    if problem:
        return done(None, Rule.AMBIGUOUS, f"ambiguous attribution: {problem}")
    if forward:
        return done(None, Rule.FORWARD, f"the exported model is not the PyTorch model: {forward}")
    a, n = autograd.says, numeric.says
    both = f"autograd: {autograd.detail}; numeric: {numeric.detail}"
    if a is not None and n is not None:
        if a == n == Tag.DIFF:
            if vjp == Vjp.FAILED:
                return done(None, Rule.VJP_FAILED, f"{both}; but {vjp_detail}")
            extra = f"; {vjp_detail}" if vjp_detail else ""
            return done(Tag.DIFF, Rule.BOTH, f"{both}{extra}")
        if a == n:
            return done(a, Rule.BOTH, both)
        if a == Tag.DIFF:
            return done(None, Rule.CONFLICT, f"{both}: PyTorch's gradient is a surrogate "
                                             "(straight-through?) the ONNX op does not have")
        return done(Tag.DIFF, Rule.NUMERIC_OVER_AUTOGRAD,
                    f"numeric witness: the ONNX function has a derivative that PyTorch does "
                    f"not track ({both})")
    if n is not None:
        # not exercised: PyTorch may well differentiate here, but nothing it says is about
        # this node (a constant, a computing op before it, a tensor shared by two inputs)
        why = ("no autograd evidence about this node" if autograd.outcome == A.NOT_EXERCISED
               else "PyTorch has no derivative here")
        return done(n, Rule.NUMERIC_ONLY, f"numeric witness only ({why}: {autograd.detail}): "
                                          f"{numeric.detail}")
    if a is not None:
        if reference:
            return done(None, Rule.NEEDS_NUMERIC,
                        f"autograd: {autograd.detail}, but a reference case counts only with "
                        f"the numeric witness, which did not run ({numeric.detail})")
        return done(a, Rule.AUTOGRAD_ONLY,
                    f"autograd only: {autograd.detail} (numeric witness: {numeric.detail})")
    return done(None, Rule.NOT_EXERCISED, f"not exercised: {both}")


def is_failure(verdict: Verdict, rule: Rule, expected: Verdict | None) -> bool:
    """Whether one verdict fails a run: a disagreement, or an inconclusive verdict where
    evidence should have decided (witnesses in conflict, a failed check) -- unless the
    case declares exactly that verdict (a reviewed finding). The one rule for prove,
    verify-all and reports."""
    if expected == verdict:
        return False
    return verdict == DISAGREE or (verdict == INCONCLUSIVE and rule not in (
        Rule.NOT_EXERCISED, Rule.AMBIGUOUS))
