"""Two witnesses + the schema's tag -> one verdict per ONNX parameter. Pure, no I/O.

The witnesses: PyTorch autograd (what ``torch.autograd`` says about the tensor that became
this node parameter, counted only when it reached the node through value-preserving
glue) and the ONNX node's own finite differences (``node_witness``). Each says
differentiable (D), non-differentiable (N), or nothing (None). The rule is this table
(docs/design.md §1.2; docs/verdicts.md shows the table):

=========  =========  ==============  ============================================
autograd   numeric    supports        reason starts with
=========  =========  ==============  ============================================
D          D          D               both witnesses (a failed VJP check: inconclusive)
N          N          N               both witnesses
N          none       N               autograd; nothing floating to measure
D          N          --              inconclusive: a surrogate / straight-through gradient?
D          N (float32 only)  --         inconclusive: float32 too coarse (a weak derivative
                                          reads flat at float32's steps)
N          D          D               numeric witness: PyTorch does not track a derivative
None       D or N     the numeric's   numeric witness only (PyTorch has no derivative for it /
                                          no autograd evidence about this node)
D or N     None       the autograd's  autograd only (a reference case: inconclusive)
None       None       --              inconclusive: not exercised
=========  =========  ==============  ============================================

After the table, the third witness (``engine.bodies.function_body``: the op's ONNX function body,
the primitive ops' tags pushed through it) decides nothing alone, but where autograd and
the numeric witness agree (``both witnesses``) and the body says the opposite, the verdict
is ``inconclusive`` with the rule ``witnesses disagree``, never ``agree``: one of three
independent readings of the same op is wrong, and a reviewer must find which.

Before the table: a parameter whose schema allows no gradient-carrying type is N by type,
and so is every input of an op none of whose outputs allows one (OptionalHasElement,
NMS) -- the schema alone decides those (``engine.rules.by_type``, which also decides the
parameters of ops without a case); then an ambiguous attribution or a forward
mismatch makes the verdict inconclusive, and so does a run that is not one of the schema
version judged (``engine.versions.fidelity``: a node that version does not accept, or no runtime
that implements it).
``agree`` therefore always rests on evidence that could have said ``disagree``.

After the table: a parameter its case declares under a named convention
(``conventions.py``) is decided by that convention's tag, its reason keeping both halves
(what the witnesses found, what the convention decides) and its rule ``convention`` --
unless the evidence itself is unusable (ambiguous, a forward mismatch, a failed VJP check,
witnesses in conflict), which stays inconclusive.
"""
from __future__ import annotations

from dataclasses import dataclass
from ...compat import StrEnum

from ...conventions import Applies, decides
from ...vocab import AutogradOutcome as A
from ...vocab import BodyOutcome as B
from ...vocab import NumericOutcome as N
from ...vocab import Tag, Verdict

AGREE, DISAGREE, PROPOSED, INCONCLUSIVE = (Verdict.AGREE, Verdict.DISAGREE, Verdict.PROPOSED,
                                           Verdict.INCONCLUSIVE)
VERDICTS = tuple(Verdict)

AUTOGRAD_SAYS: dict[A, Tag | None] = {
    A.GRAD: Tag.DIFF, A.ZERO: Tag.NONDIFF, A.NONE: Tag.NONDIFF, A.DETACHED: Tag.NONDIFF,
    A.INTEGER: None, A.UNSUPPORTED: None, A.NOT_EXERCISED: None}
NUMERIC_SAYS: dict[N, Tag | None] = {
    N.SMOOTH: Tag.DIFF, N.FLAT: Tag.NONDIFF, N.JUMP: Tag.NONDIFF, N.NONE: Tag.NONDIFF,
    N.INTEGER: None, N.ABSENT: None, N.NOT_RUN: None}
BODY_SAYS: dict[B, Tag | None] = {
    B.DIFF: Tag.DIFF, B.NONDIFF: Tag.NONDIFF, B.UNKNOWN: None, B.NOT_APPLICABLE: None,
    B.NOT_BUILT: None}
"""What each outcome says. Integer outcomes say nothing here: integer evidence decides only
where the schema allows no floating type, which the by-type rule covers."""


class Rule(StrEnum):
    """Which row of the table decided: a record field, so reports never parse reasons."""

    AMBIGUOUS = "ambiguous attribution"
    UNFAITHFUL = "not a run of its schema version"   # engine.versions.fidelity: the node or runtime
    FORWARD = "forward mismatch"
    BY_TYPE = "by type"
    BOTH = "both witnesses"
    NOTHING_TO_MEASURE = "autograd; nothing floating to measure"
    CONFLICT = "witnesses conflict"
    COARSE = "float32 too coarse"   # autograd D, numeric flat, measured at float32 steps only
    WITNESSES_DISAGREE = "witnesses disagree"   # the function body against the other two
    NUMERIC_OVER_AUTOGRAD = "numeric witness over autograd"
    NUMERIC_ONLY = "numeric witness only"
    AUTOGRAD_ONLY = "autograd only"
    VJP_FAILED = "VJP check failed"
    NEEDS_NUMERIC = "reference case without numeric confirmation"
    NOT_EXERCISED = "not exercised"
    CONVENTION = "convention"
    UNFOUNDED = "convention without precedent"   # declared, but nothing outside the schema
    # under test backs it: the math decides, the verdict keeps the convention's label


class Vjp(StrEnum):
    """PyTorch's vector-Jacobian product against the ONNX model's finite difference."""

    PASSED = "passed"
    FAILED = "failed"
    AT_JUMP = "at a jump"      # failed where the numeric witness found a tie/kink: a subgradient
    EMPTY = "compared nothing"   # every compared value was zero: not a pass
    EXPLAINED = "explained by a PyTorch convention"   # padding_idx...: both witnesses decide
    NOT_RUN = "not run"


@dataclass(frozen=True)
class Witness:
    outcome: A | N | B
    detail: str
    path: tuple[str, ...] = ()   # the function body's path (``X -> Sub -> Div -> Y``)
    source: str = ""     # autograd: whose autograd (``engine.pytorch_source``)
    coarse: bool = False   # numeric: differenced at float32's steps (or coarser) on every seed

    @property
    def says(self) -> Tag | None:
        if isinstance(self.outcome, A):
            return AUTOGRAD_SAYS[self.outcome]
        if isinstance(self.outcome, B):
            return BODY_SAYS[self.outcome]
        return NUMERIC_SAYS[self.outcome]


NO_BODY = Witness(B.NOT_APPLICABLE, "no function body")


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    supports: Tag | None
    rule: Rule
    reason: str
    finding: str = ""    # the reason before the schema's tag is named (what was found)


def judge(supports: Tag | None, tag: Tag) -> Verdict:
    """What the supported tag means against the schema's tag."""
    if supports is None:
        return INCONCLUSIVE
    if supports == Tag.UNKNOWN:   # only a convention supports unknown (body-dependent)
        return AGREE if tag == Tag.UNKNOWN else DISAGREE
    if tag == Tag.UNKNOWN:
        return PROPOSED
    return AGREE if supports == tag else DISAGREE


def _decision(supports: Tag | None, rule: Rule, reason: str, tag: Tag) -> Decision:
    """A row of the table against the schema's tag, its reason completed for a reader."""
    verdict = judge(supports, tag)
    finding = reason
    if supports is not None and verdict == DISAGREE and rule != Rule.BY_TYPE:
        reason += f", but the schema says {tag}"
    elif verdict == PROPOSED:
        reason += f" -> propose {supports}"
    return Decision(verdict, supports, rule, reason, finding)


def by_type_decision(tag: Tag, reason: str) -> Decision:
    """The by-type row: non-differentiable, whatever a witness says or whether there is a
    case at all (``engine.rules.by_type`` says when it applies and why). The one place a by-type
    verdict is made, for a case's parameters and a case-less op's alike."""
    return _decision(Tag.NONDIFF, Rule.BY_TYPE, reason, tag)


def decide(*, autograd: Witness, numeric: Witness, tag: Tag, by_type: str | None = None,
           problem: str | None = None, unfaithful: str | None = None,
           forward: str | None = None,
           vjp: Vjp = Vjp.NOT_RUN, vjp_detail: str = "", reference: bool = False,
           body: Witness = NO_BODY) -> Decision:
    """The verdict of one parameter (the module docstring's table). ``by_type``: why the
    schema's types alone decide this parameter (``engine.rules.by_type.type_reason``), or None;
    ``body``: the function-body witness, which can only flag a decision of both others;
    ``unfaithful``: why the run is not one of the schema version judged
    (``engine.versions.fidelity``): nothing it measured is evidence about that version."""
    d = _table(autograd=autograd, numeric=numeric, tag=tag, by_type=by_type, problem=problem,
               unfaithful=unfaithful, forward=forward, vjp=vjp, vjp_detail=vjp_detail,
               reference=reference)
    said = body.says
    if d.rule == Rule.BOTH and said is not None and said != d.supports:
        return Decision(INCONCLUSIVE, None, Rule.WITNESSES_DISAGREE,
                        f"witnesses disagree: autograd and numeric say {d.supports}, the "
                        f"function body says {said} ({body.detail}); {d.reason}")
    return d


def _table(*, autograd: Witness, numeric: Witness, tag: Tag, by_type: str | None,
           problem: str | None, unfaithful: str | None, forward: str | None, vjp: Vjp,
           vjp_detail: str,
           reference: bool) -> Decision:
    """The module docstring's table, before the function body is heard."""
    def done(supports: Tag | None, rule: Rule, reason: str) -> Decision:
        return _decision(supports, rule, reason, tag)

    if by_type is not None:   # the schema alone decides: no evidence is needed, none can differ
        return by_type_decision(tag, by_type)
    if problem:
        return done(None, Rule.AMBIGUOUS, f"ambiguous attribution: {problem}")
    if unfaithful:
        return done(None, Rule.UNFAITHFUL, unfaithful)
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
        if a == n and numeric.outcome == N.NONE:   # a fact of the case's types, not a measurement
            return done(a, Rule.NOTHING_TO_MEASURE, f"autograd: {autograd.detail}; numeric: "
                                                    f"nothing to measure ({numeric.detail})")
        if a == n:
            return done(a, Rule.BOTH, both)
        if a == Tag.DIFF and numeric.outcome == N.FLAT and numeric.coarse:
            # LSTM's initial_c -> Y_h reads flat in a float32 copy, |fd| 1e-3..3e-2 in float64
            return done(None, Rule.COARSE, f"{both}: inconclusive (float32 too coarse): a "
                                           "derivative this weak reads flat at float32's "
                                           "steps, so flat there is no evidence against "
                                           "autograd's gradient")
        if a == Tag.DIFF:
            return done(None, Rule.CONFLICT, f"{both}: PyTorch's gradient is a surrogate "
                                             "(straight-through?) the ONNX op does not have")
        return done(Tag.DIFF, Rule.NUMERIC_OVER_AUTOGRAD,
                    f"numeric witness: the ONNX function has a derivative that PyTorch does "
                    f"not track ({both})")
    if n is not None:
        # not exercised: PyTorch may well differentiate here, but nothing it says is about
        # this node alone (a constant, a computing op before it, a tensor shared by two inputs)
        why = ("PyTorch has no derivative for it" if autograd.outcome == A.UNSUPPORTED
               else "no autograd evidence about this node: this case's module does not "
                    "track it alone")
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


_RULE_WITNESSES: dict[Rule, tuple[Tag | None, Tag | None] | None] = {
    Rule.CONFLICT: (Tag.DIFF, Tag.NONDIFF),
    Rule.COARSE: (Tag.DIFF, Tag.NONDIFF),
    Rule.NUMERIC_OVER_AUTOGRAD: (Tag.NONDIFF, Tag.DIFF),
    Rule.VJP_FAILED: (Tag.DIFF, Tag.DIFF),
    Rule.NOT_EXERCISED: (None, None),
    Rule.BY_TYPE: None, Rule.AMBIGUOUS: None, Rule.FORWARD: None, Rule.UNFAITHFUL: None,
}


def rule_holds(rule: Rule, autograd: A, numeric: N, supports: Tag | None) -> bool:
    """Whether ``rule`` and ``supports`` are what ``decide``'s table gives for these two
    witness outcomes: how a record read back (a cache entry) is re-derived from its own
    witnesses, so an edited verdict, rule or support does not pass for a proof."""
    a, n = AUTOGRAD_SAYS[autograd], NUMERIC_SAYS[numeric]
    if rule == Rule.BOTH:
        return a is not None and a == n == supports
    if rule == Rule.NUMERIC_ONLY:
        return a is None and n is not None and supports == n
    if rule == Rule.AUTOGRAD_ONLY:
        return n is None and a is not None and supports == a
    if rule == Rule.NEEDS_NUMERIC:
        return n is None and a is not None and supports is None
    if rule == Rule.BY_TYPE:
        return supports == Tag.NONDIFF
    if rule == Rule.NOTHING_TO_MEASURE:
        return numeric == N.NONE and a is not None and a == n == supports
    if rule == Rule.WITNESSES_DISAGREE:   # both agreed; the function body said otherwise
        return a is not None and a == n and supports is None
    if rule == Rule.CONVENTION:   # the case's declaration decides: recheck compares it
        return True
    if rule == Rule.UNFOUNDED:    # the math decided: a witness says what it supports
        return supports is not None and supports in (a, n)
    want = _RULE_WITNESSES[rule]
    if rule == Rule.NUMERIC_OVER_AUTOGRAD:
        return want == (a, n) and supports == Tag.DIFF
    return (want is None or want == (a, n)) and supports is None


UNUSABLE = frozenset({Rule.AMBIGUOUS, Rule.UNFAITHFUL, Rule.FORWARD, Rule.VJP_FAILED,
                      Rule.CONFLICT})
"""Evidence no convention may decide over: the case itself is in question."""


def under_convention(d: Decision, applies: Applies, tag: Tag, op: str | None = None
                     ) -> Decision:
    """The verdict of a parameter its case declares under a convention: the convention's
    tag against the schema's, the reason saying both halves -- what the witnesses found
    and the mathematics (``applies.math``), then what the convention decides. Unusable
    evidence stays as it is (inconclusive, its own rule).

    A convention decides a parameter of ``op`` only with a precedent outside ``op``'s own
    schema (``Rule.founded_for``): citing the very tags under test would make ``agree``
    certain. Without one, the math decides -- a disagreement stays a disagreement, under
    the convention's label (rule ``convention without precedent``: reports count it with
    the conventions' and fix-tags withholds it unless asked), never ``agree``."""
    if d.rule in UNUSABLE:
        return d
    rule = applies.rule
    math = f"math: {d.finding or d.reason}; {applies.math}; convention '{rule.name}' ({rule.statement})"
    if op is not None and not rule.founded_for(op):
        if d.supports is None:   # neither the math nor the convention decides
            return d
        cited = "; ".join(p.text() for p in rule.precedents) or "none"
        return _decision(d.supports, Rule.UNFOUNDED,
                         f"{math}: no precedent outside {op}'s own schema (it cites {cited}"
                         + (f"; {rule.context}" if rule.context else "")
                         + f"), so it cannot decide: the math stands, {d.supports}", tag)
    return _decision(rule.implies, Rule.CONVENTION, f"{math}: {decides(rule)}", tag)


def is_failure(verdict: Verdict, rule: Rule, expected: Verdict | None) -> bool:
    """Whether one verdict fails a run: a disagreement, or an inconclusive verdict where
    evidence should have decided (witnesses in conflict, a failed check) -- unless the
    case declares exactly that verdict (a reviewed finding). The one rule for prove,
    verify-all and reports."""
    if expected == verdict:
        return False
    return verdict == DISAGREE or (verdict == INCONCLUSIVE and rule not in (
        Rule.NOT_EXERCISED, Rule.AMBIGUOUS, Rule.CONVENTION, Rule.COARSE))
