"""Issue 21, part 1: named conventions are data, declared by the cases, applied by the verdict
table, counted apart in reports and left out of fix-tags unless asked.

Expectations come from the cases' declarations (``Case.conventions``), the convention
table's implied tags, the schemas' tags and the hand-written fix-tags fixtures -- never
from the verdicts under test.
"""
import json
from pathlib import Path

import pytest
from fix_report import SRC, applied, param, record, tags_of

from torch_prover.cases import all_cases
from torch_prover.conventions import RULES, Applies, Convention
from torch_prover.engine.verdict import (Decision, Rule, Witness, decide, is_failure,
                                         under_convention)
from torch_prover.fix import patch
from torch_prover.fix.locate import read_tree
from torch_prover.fix.plan import Withheld, findings, plan
from torch_prover.fix.pr_text import pr_texts, summary
from torch_prover.vocab import AutogradOutcome as A
from torch_prover.vocab import NumericOutcome as N
from torch_prover.vocab import Tag, Verdict

MODELS = Path(__file__).resolve().parent.parent / "models"
DIFF, NONDIFF = "differentiable", "non-differentiable"

# The list: which parameters fall under which convention (issue 21, "Done when").
DECLARED = {
    ("batchnormalization_training", "output 1"): Convention.STATE_UPDATE,
    ("batchnormalization_training", "output 2"): Convention.STATE_UPDATE,
    ("hardmax_last", "input 0"): Convention.PIECEWISE_CONSTANT,
    ("hardmax_last", "output 0"): Convention.PIECEWISE_CONSTANT,
    ("hardmax_axis0", "input 0"): Convention.PIECEWISE_CONSTANT,
    ("hardmax_axis0", "output 0"): Convention.PIECEWISE_CONSTANT,
    ("resize_bilinear_scale", "input 2"): Convention.SHAPE_SETTING,
    ("unique_sorted", "input 0"): Convention.DATA_DEPENDENT_SHAPE,
    ("unique_sorted", "output 0"): Convention.DATA_DEPENDENT_SHAPE,
    ("unique_inverse_counts", "input 0"): Convention.DATA_DEPENDENT_SHAPE,
    ("unique_inverse_counts", "output 0"): Convention.DATA_DEPENDENT_SHAPE,
    ("if_torch_cond", "output 0"): Convention.BODY_DEPENDENT,
    ("loop_while_loop", "input 3"): Convention.BODY_DEPENDENT,
    ("loop_while_loop", "output 1"): Convention.BODY_DEPENDENT,
    ("loop_scripted_for", "input 2"): Convention.BODY_DEPENDENT,
    ("loop_scripted_for", "output 0"): Convention.BODY_DEPENDENT,
    ("scan_running_sum", "input 0"): Convention.BODY_DEPENDENT,
    ("scan_running_sum", "output 1"): Convention.BODY_DEPENDENT,
    ("sequencemap_scale", "input 0"): Convention.BODY_DEPENDENT,
    ("sequencemap_scale", "output 0"): Convention.BODY_DEPENDENT,
    ("bernoulli_deterministic", "input 0"): Convention.SAMPLING,
    ("dropout_train_p0", "input 1"): Convention.SAMPLING,
    ("dequantizelinear_decomposed", "input 0"): Convention.QUANTIZED_STORAGE,
    ("dequantizelinear_fake_quant_uint8", "input 0"): Convention.QUANTIZED_STORAGE,
}
IMPLIED = {Convention.PIECEWISE_CONSTANT: Tag.NONDIFF, Convention.SHAPE_SETTING: Tag.NONDIFF,
           Convention.DATA_DEPENDENT_SHAPE: Tag.NONDIFF, Convention.STATE_UPDATE: Tag.NONDIFF,
           Convention.BODY_DEPENDENT: Tag.UNKNOWN, Convention.SAMPLING: None,
           Convention.QUANTIZED_STORAGE: Tag.NONDIFF}
"""The issue: piecewise-constant like Floor (non-differentiable); Unknown "cannot be
statically determined" for a body-dependent parameter; no rule for sampling."""


def _record(case: str) -> dict:
    op = next(c.op for c in all_cases() if c.name == case)
    return json.loads((MODELS / op / case / "proof.json").read_text())


def _param(rec: dict, key: str) -> dict:
    io, _, index = key.partition(" ")
    return next(p for p in rec["parameters"] if (p["io"], p["index"]) == (io, int(index)))


def test_every_convention_is_a_row_with_its_rule_precedent_and_tag():
    assert set(RULES) == set(Convention)
    for name, rule in RULES.items():
        assert rule.statement and rule.precedent, name
        assert rule.implies == IMPLIED[name], name
    assert "onnx#2911" in RULES[Convention.PIECEWISE_CONSTANT].precedent
    assert "onnx#3011" in RULES[Convention.SHAPE_SETTING].precedent
    assert "onnx/defs/schema.h" in RULES[Convention.BODY_DEPENDENT].precedent
    assert "cannot be statically determined" in RULES[Convention.BODY_DEPENDENT].precedent


def test_a_declaration_needs_the_math_it_sets_aside():
    with pytest.raises(ValueError):
        Applies(Convention.SAMPLING, " ")


def test_the_catalogue_declares_each_listed_parameter():
    declared = {(c.name, k): a.convention for c in all_cases() for k, a in c.conventions.items()}
    for key, convention in DECLARED.items():
        assert declared.get(key) == convention, key


@pytest.mark.parametrize("key", sorted(DECLARED))
def test_full_report_carries_the_convention_and_both_halves(key):
    """In the committed evidence (what verify-all writes): the convention named, its rule
    ``convention``, the verdict its implied tag gives against the schema's, and a reason with
    the math ("math: ...") and the convention's decision."""
    case, param_key = key
    p = _param(_record(case), param_key)
    convention = DECLARED[key]
    assert p["convention"] == convention and p["rule"] == Rule.CONVENTION
    implied = IMPLIED[convention]
    tag = Tag(p["tag"])
    want = (Verdict.INCONCLUSIVE if implied is None else
            Verdict.AGREE if implied == tag else
            Verdict.PROPOSED if tag == Tag.UNKNOWN else Verdict.DISAGREE)
    assert p["verdict"] == want
    assert p["reason"].startswith("math: ") and f"convention '{convention}'" in p["reason"]


def test_body_dependent_agrees_with_unknown():
    """If/Loop/Scan/SequenceMap: the tag is unknown, the convention implies unknown."""
    for case in ("if_torch_cond", "scan_running_sum", "sequencemap_scale", "loop_scripted_for"):
        rec = _record(case)
        body = [p for p in rec["parameters"] if p.get("convention") == "body-dependent"]
        assert body and all(p["tag"] == "unknown" and p["verdict"] == "agree" for p in body)


def _witnessed_d() -> Decision:
    return decide(autograd=Witness(A.GRAD, "x: nonzero gradient"),
                  numeric=Witness(N.SMOOTH, "smooth into output 0"), tag=Tag.NONDIFF)


def test_state_update_turns_a_math_disagreement_into_a_convention_agreement():
    math = _witnessed_d()
    assert math.verdict == Verdict.DISAGREE
    d = under_convention(math, Applies(Convention.STATE_UPDATE, "running_mean is smooth"),
                         Tag.NONDIFF)
    assert (d.verdict, d.supports, d.rule) == (Verdict.AGREE, Tag.NONDIFF, Rule.CONVENTION)
    assert "but the schema says" not in d.reason   # the math half names no tag twice
    assert d.reason.startswith("math: autograd: x: nonzero gradient")
    assert "running_mean is smooth" in d.reason and "state update" in d.reason


def test_body_dependent_against_a_set_tag_is_a_convention_disagreement():
    d = under_convention(_witnessed_d(), Applies(Convention.BODY_DEPENDENT, "smooth body"),
                         Tag.DIFF)
    assert (d.verdict, d.supports) == (Verdict.DISAGREE, Tag.UNKNOWN)


def test_sampling_decides_no_tag_and_fails_nothing():
    d = under_convention(_witnessed_d(), Applies(Convention.SAMPLING, "per draw vs average"),
                         Tag.NONDIFF)
    assert (d.verdict, d.supports, d.rule) == (Verdict.INCONCLUSIVE, None, Rule.CONVENTION)
    assert not is_failure(d.verdict, d.rule, None)


def test_unusable_evidence_is_not_decided_by_a_convention():
    d = decide(autograd=Witness(A.GRAD, "g"), numeric=Witness(N.SMOOTH, "s"), tag=Tag.NONDIFF,
               problem="x feeds inputs 0, 1")
    assert under_convention(d, Applies(Convention.STATE_UPDATE, "m"), Tag.NONDIFF) == d


# ----------------------------------------------------------------------------- fix-tags
def _conv(p: dict, name: str) -> dict:
    return {**p, "rule": "convention", "convention": name}


def _records():
    """Softmax, LogSoftmax and Hardmax share one generator in the fixture; only Hardmax's
    verdict is decided by a convention. ReduceSum's axes is a math proposal."""
    fam = [record(op, 13, f"{op.lower()}_basic",
                  param("input", 0, "input", DIFF, "disagree", NONDIFF))
           for op in ("Softmax", "LogSoftmax")]
    hard = record("Hardmax", 13, "hardmax_last",
                  _conv(param("input", 0, "input", DIFF, "disagree", NONDIFF),
                        "piecewise-constant"))
    axes = record("ReduceSum", 13, "reducesum_axes",
                  param("input", 1, "axes", "unknown", "proposed", NONDIFF))
    return [*fam, hard, axes]


def test_fix_tags_leaves_convention_decided_parameters_out_by_default(tmp_path):
    tree = read_tree(SRC)
    p = plan(tree, findings(_records()))
    assert [f.op for e in p.edits for f in e.findings] == ["ReduceSum"]
    why = {f.op: reason for f, reason, _ in p.withheld}
    assert why == {"Hardmax": Withheld.CONVENTION, "Softmax": Withheld.CONVENTION,
                   "LogSoftmax": Withheld.CONVENTION}
    diff = patch.unified_diff(patch.edited_texts(tree, p.edits))
    after = tags_of(applied(diff, tmp_path))
    assert after[("Hardmax", 13, "input", 0)] == tags_of(tree)[("Hardmax", 13, "input", 0)]
    assert "1 of them decided by a convention" in summary(p)


def test_fix_tags_include_conventions_labels_them_in_their_own_section():
    tree = read_tree(SRC)
    p = plan(tree, findings(_records()), include_conventions=True)
    assert sorted(f.op for e in p.edits for f in e.findings) == [
        "Hardmax", "LogSoftmax", "ReduceSum", "Softmax"]
    text, _ = pr_texts(p, "fix.patch", "fix-evidence.md")
    head, _, section = text.partition("## Decided by a convention, not the math")
    assert section, text
    assert "ReduceSum" in head and "Hardmax" not in head
    assert "Convention: **piecewise-constant**" in section and "Hardmax-13 input 0" in section
