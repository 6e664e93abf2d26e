"""verdict.decide is pure: evidence x tag x numeric gate -> verdict."""
import pytest

from torch_prover.verdict import Gate, decide, supported_tag


def d(evidence, tag, **kw):
    kw.setdefault("detail", "nonzero gradient")
    kw.setdefault("dtype", "float64")
    return decide(evidence=evidence, tag=tag, subject="x", **kw)[0]


@pytest.mark.parametrize("evidence,dtype,supports", [
    ("grad", "float64", "differentiable"), ("zero-grad", "float64", "non-differentiable"),
    ("no-grad", "float64", "non-differentiable"), ("integer", "int64", "non-differentiable"),
    ("constant", "int64", "non-differentiable"), ("constant", "float32", None),
    ("absent", None, None), ("detached", "float64", "non-differentiable")])
def test_supported_tag(evidence, dtype, supports):
    assert supported_tag(evidence, dtype) == supports


def test_agree_disagree_proposed():
    assert d("grad", "differentiable") == "agree"
    assert d("grad", "non-differentiable") == "disagree"
    assert d("grad", "unknown") == "proposed"
    assert d("integer", "differentiable", dtype="int64") == "disagree"
    assert d("zero-grad", "differentiable") == "disagree"


def test_not_exercised_is_inconclusive_never_agree():
    assert d("absent", "differentiable", dtype=None) == "inconclusive"
    assert d("constant", "differentiable", dtype="float32") == "inconclusive"


def test_numeric_gate():
    assert d("grad", "differentiable", gate=Gate("failed", "fd 1 vs 2")) == "inconclusive"
    assert d("grad", "differentiable", gate=Gate("passed", "ok")) == "agree"
    assert d("grad", "differentiable", gate=Gate("no-runtime", "none")) == "agree"
    assert d("grad", "differentiable", gate=Gate("no-runtime", "none"), reference=True) == "inconclusive"
    assert d("grad", "differentiable", gate=Gate("off", "off"), reference=True) == "inconclusive"


def test_ambiguous_wins():
    assert d("grad", "differentiable", problem="x feeds inputs 0, 1") == "inconclusive"


def test_integer_evidence_on_a_float_capable_parameter_decides_nothing():
    """Mod on int64 says nothing about Mod's float divisor: not a disagreement."""
    assert d("integer", "differentiable", dtype="int64", float_capable=True) == "inconclusive"
    assert d("integer", "non-differentiable", dtype="int64", float_capable=True) == "inconclusive"
    assert d("integer", "non-differentiable", dtype="int64", float_capable=False) == "agree"


def test_forward_mismatch_taints_integer_evidence_too():
    gate = Gate("forward-mismatch", "output 0 differs in 1 of 12 elements")
    assert d("integer", "non-differentiable", dtype="uint8", gate=gate) == "inconclusive"
