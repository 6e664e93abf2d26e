"""verdict.decide is pure: one test per row of the two-witness table (module docstring).

Each expectation is the table's row, written out here: the witnesses' outcomes in, the
supported tag and verdict out.
"""
import pytest

from torch_prover.engine.rules.verdict import Rule, Vjp, Witness, decide
from torch_prover.vocab import AutogradOutcome as A
from torch_prover.vocab import NumericOutcome as N
from torch_prover.vocab import Tag, Verdict

D, ND, U = Tag.DIFF, Tag.NONDIFF, Tag.UNKNOWN


def d(a, n, tag=D, **kw):
    return decide(autograd=Witness(a, "autograd says"), numeric=Witness(n, "numeric says"),
                  tag=tag, **kw)


@pytest.mark.parametrize("a,n,supports,rule", [
    (A.GRAD, N.SMOOTH, D, Rule.BOTH),
    (A.ZERO, N.FLAT, ND, Rule.BOTH),
    (A.NONE, N.JUMP, ND, Rule.BOTH),
    (A.DETACHED, N.NONE, ND, Rule.NOTHING_TO_MEASURE),   # nothing measured: not "both"
    (A.GRAD, N.FLAT, None, Rule.CONFLICT),
    (A.ZERO, N.SMOOTH, D, Rule.NUMERIC_OVER_AUTOGRAD),
    (A.UNSUPPORTED, N.SMOOTH, D, Rule.NUMERIC_ONLY),
    (A.NOT_EXERCISED, N.FLAT, ND, Rule.NUMERIC_ONLY),
    (A.GRAD, N.NOT_RUN, D, Rule.AUTOGRAD_ONLY),
    (A.ZERO, N.NOT_RUN, ND, Rule.AUTOGRAD_ONLY),
    (A.UNSUPPORTED, N.NOT_RUN, None, Rule.NOT_EXERCISED),
    (A.NOT_EXERCISED, N.ABSENT, None, Rule.NOT_EXERCISED),
])
def test_each_row_of_the_table(a, n, supports, rule):
    got = d(a, n)
    assert (got.supports, got.rule) == (supports, rule)
    want = Verdict.INCONCLUSIVE if supports is None else (
        Verdict.AGREE if supports == D else Verdict.DISAGREE)
    assert got.verdict == want


def test_against_the_tag():
    assert d(A.GRAD, N.SMOOTH, tag=ND).verdict == Verdict.DISAGREE
    assert d(A.GRAD, N.SMOOTH, tag=U).verdict == Verdict.PROPOSED
    assert "propose differentiable" in d(A.GRAD, N.SMOOTH, tag=U).reason
    assert "but the schema says non-differentiable" in d(A.GRAD, N.SMOOTH, tag=ND).reason


def test_a_refusal_decides_nothing_alone():
    """BatchNormalization's running stats: PyTorch refuses, the node is smooth -> D."""
    assert d(A.UNSUPPORTED, N.SMOOTH).verdict == Verdict.AGREE
    assert "numeric witness only" in d(A.UNSUPPORTED, N.SMOOTH).reason


def test_vjp_states():
    assert d(A.GRAD, N.SMOOTH, vjp=Vjp.FAILED, vjp_detail="1 vs 2").verdict == Verdict.INCONCLUSIVE
    assert d(A.GRAD, N.SMOOTH, vjp=Vjp.AT_JUMP, vjp_detail="tie").verdict == Verdict.AGREE
    assert d(A.GRAD, N.SMOOTH, vjp=Vjp.PASSED, vjp_detail="ok").verdict == Verdict.AGREE


def test_a_reference_case_needs_the_numeric_witness():
    got = d(A.GRAD, N.NOT_RUN, reference=True)
    assert (got.verdict, got.rule) == (Verdict.INCONCLUSIVE, Rule.NEEDS_NUMERIC)


def test_ambiguity_and_forward_mismatch_win_over_the_witnesses():
    assert d(A.GRAD, N.SMOOTH, problem="x feeds inputs 0, 1").verdict == Verdict.INCONCLUSIVE
    assert d(A.GRAD, N.SMOOTH, forward="output 0 differs").verdict == Verdict.INCONCLUSIVE


def test_the_schema_types_decide_even_when_the_model_mismatches():
    """HammingWindow's int64 size: non-differentiable by type, whatever the export did."""
    got = d(A.INTEGER, N.INTEGER, tag=ND, by_type="int64 only", forward="output 0 differs")
    assert (got.verdict, got.rule) == (Verdict.AGREE, Rule.BY_TYPE)


def test_by_type():
    """An input whose schema allows only integer types is N whatever the case shows."""
    got = d(A.NOT_EXERCISED, N.ABSENT, tag=ND, by_type="tensor(int64)")
    assert (got.supports, got.rule, got.verdict) == (ND, Rule.BY_TYPE, Verdict.AGREE)
    assert d(A.INTEGER, N.INTEGER, tag=D, by_type="int64").verdict == Verdict.DISAGREE


def test_integer_evidence_on_a_float_capable_parameter_decides_nothing():
    """Mod on int64 says nothing about Mod's float divisor: not a disagreement."""
    assert d(A.INTEGER, N.INTEGER, tag=ND).verdict == Verdict.INCONCLUSIVE
