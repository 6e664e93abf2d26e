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
from torch_prover.engine.rules.verdict import (Decision, Rule, Witness, decide, is_failure,
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
    ("batchnormalization_training", "output 1"): Convention.STATE_OUTPUT,
    ("batchnormalization_training", "output 2"): Convention.STATE_OUTPUT,
    # issue 33: one question, one rule -- saved statistics as running ones, Range as Resize
    ("layernormalization_mean_invstd", "output 1"): Convention.STATE_OUTPUT,
    ("layernormalization_mean_invstd", "output 2"): Convention.STATE_OUTPUT,
    ("range_float", "input 0"): Convention.SHAPE_SETTING,
    ("range_float", "input 1"): Convention.SHAPE_SETTING,
    ("range_float", "input 2"): Convention.SHAPE_SETTING,
    ("hardmax_last", "input 0"): Convention.PIECEWISE_CONSTANT,
    ("hardmax_last", "output 0"): Convention.PIECEWISE_CONSTANT,
    ("hardmax_axis0", "input 0"): Convention.PIECEWISE_CONSTANT,
    ("hardmax_axis0", "output 0"): Convention.PIECEWISE_CONSTANT,
    ("resize_bilinear_scale", "input 2"): Convention.SHAPE_SETTING,
    # issue 33: Resize-10's and Upsample-9's scales under Resize-11+'s label
    ("resize_linear_scales_10", "input 1"): Convention.SHAPE_SETTING,
    ("upsample_linear_scales", "input 1"): Convention.SHAPE_SETTING,
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
    ("scan8_batch_running_sum", "input 2"): Convention.BODY_DEPENDENT,
    ("scan8_batch_running_sum", "output 1"): Convention.BODY_DEPENDENT,
    ("sequencemap_scale", "input 0"): Convention.BODY_DEPENDENT,
    ("sequencemap_scale", "output 0"): Convention.BODY_DEPENDENT,
    ("bernoulli_deterministic", "input 0"): Convention.SAMPLING,
    ("dropout_train_p0", "input 1"): Convention.SAMPLING,
    ("dequantizelinear_decomposed", "input 0"): Convention.QUANTIZED_STORAGE,
    ("dequantizelinear_fake_quant_uint8", "input 0"): Convention.QUANTIZED_STORAGE,
}
OLDER_ONLY = {
    ("batchnormalization_training", "output 3"): Convention.STATE_OUTPUT,
    ("batchnormalization_training", "output 4"): Convention.STATE_OUTPUT,
}
"""Issue 33: parameters only older versions have (BatchNormalization-7/-9's saved_mean and
saved_var; BatchNormalization-15, the case's own, has no output 3 or 4): their variants'
cells carry the label (test_versions_faithful.py checks the whole versions table)."""
FOUNDED = {(Convention.PIECEWISE_CONSTANT, "Hardmax"): True,
           (Convention.SHAPE_SETTING, "Resize"): False,
           (Convention.SHAPE_SETTING, "Range"): False,
           (Convention.SHAPE_SETTING, "Upsample"): False,
           (Convention.DATA_DEPENDENT_SHAPE, "Unique"): False,
           (Convention.STATE_OUTPUT, "BatchNormalization"): False,
           (Convention.STATE_OUTPUT, "LayerNormalization"): False,
           (Convention.BODY_DEPENDENT, "If"): True, (Convention.BODY_DEPENDENT, "Loop"): True,
           (Convention.BODY_DEPENDENT, "Scan"): True,
           (Convention.BODY_DEPENDENT, "SequenceMap"): True,
           (Convention.SAMPLING, "Bernoulli"): True, (Convention.SAMPLING, "Dropout"): True,
           (Convention.QUANTIZED_STORAGE, "DequantizeLinear"): True}
"""Issue 26 part 7, worked out from onnx.defs before the table was rewritten: whether each
convention has a precedent outside the schema of the op the catalogue applies it to.
Hardmax: Floor/Ceil/Round/Sign's tags. Resize's scales: the only float shape-setting input
ONNX tags is Resize's own (Reshape's and Expand's shape are int64, decided by type); for
Range (issue 33) Resize-13's scales is a precedent outside it, and for Upsample-9's
scales (issue 33, item 4). Unique: its own tags, and
NonZero, whose X its int64 output decides by type. BatchNormalization's running and saved
stats: only its own tags; LayerNormalization's Mean/InvStdDev (issue 33): BatchNormalization
-15's running statistics are outside it. If/Loop/Scan/SequenceMap: schema.h's definition
of Unknown. Sampling implies no tag. DequantizeLinear's float8 x: QuantizeLinear defines a
float8 y as a rounded code. Issue 41 item 4: a precedent the catalogue's own evidence refutes
is no precedent -- Resize-13's scales (resize_bilinear_scale: smooth at a fixed size, declared
disagree) and BatchNormalization-15's running statistics (batchnormalization_training:
smooth in X, declared disagree) -- so Range, Upsample and LayerNormalization have none."""
MATH = {Convention.SHAPE_SETTING: Tag.DIFF, Convention.DATA_DEPENDENT_SHAPE: Tag.DIFF,
        Convention.STATE_OUTPUT: Tag.DIFF}
"""What the math gives where a convention cannot decide (the cases' declared math: scales
moves Y at a fixed size, Y gathers X, running_mean is smooth in X)."""
IMPLIED = {Convention.PIECEWISE_CONSTANT: Tag.NONDIFF, Convention.SHAPE_SETTING: Tag.NONDIFF,
           Convention.DATA_DEPENDENT_SHAPE: Tag.NONDIFF, Convention.STATE_OUTPUT: Tag.NONDIFF,
           Convention.BODY_DEPENDENT: Tag.UNKNOWN, Convention.SAMPLING: None,
           Convention.QUANTIZED_STORAGE: Tag.NONDIFF}
"""The issue: piecewise-constant like Floor (non-differentiable); Unknown "cannot be
statically determined" for a body-dependent parameter; no rule for sampling."""


def _record(case: str) -> dict:
    op = next(c.op for c in all_cases() if c.name == case)
    return json.loads((MODELS / op / case / "proof.json").read_text())


def _proved(proof_of, case: str) -> dict:
    """The record a proof of the catalogue case gives today (cached for the session: the
    catalogue test proves every case anyway)."""
    return proof_of(case).record()


def _param(rec: dict, key: str) -> dict:
    io, _, index = key.partition(" ")
    return next(p for p in rec["parameters"] if (p["io"], p["index"]) == (io, int(index)))


def test_every_convention_is_a_row_with_its_rule_precedent_and_tag():
    assert set(RULES) == set(Convention)
    for name, rule in RULES.items():
        assert rule.statement and rule.precedents, name
        assert rule.implies == IMPLIED[name], name
    assert "Floor-13 tags input X non-differentiable" in RULES[
        Convention.PIECEWISE_CONSTANT].precedent
    assert "onnx/defs/schema.h" in RULES[Convention.BODY_DEPENDENT].precedent
    assert "cannot be statically determined" in RULES[Convention.BODY_DEPENDENT].precedent


def test_no_convention_cites_the_tag_under_test_over_the_table():
    """Issue 26 part 7, over every row and every case that applies it: a tag precedent is a
    real onnx.defs tag of a parameter that can carry a gradient and that the types alone do
    not decide (else it says nothing about a convention); what decides a case's parameter is
    never a precedent of the case's own op; a row is founded for an op exactly as worked out
    beforehand (FOUNDED)."""
    import onnx.defs
    from torch_prover.engine.rules.by_type import type_reason
    from torch_prover.tags.schema import schema_tags
    for name, rule in RULES.items():
        for prec in rule.precedents:
            if not hasattr(prec, "tag"):
                assert prec.where and prec.says, (name, prec)
                continue
            schema = onnx.defs.get_schema(prec.op, prec.since)
            assert schema.since_version == prec.since, (name, prec)
            tags = schema_tags(prec.op, prec.since, "")
            formal = next(f for f in (tags.inputs if prec.io == "input" else tags.outputs)
                          if f.name == prec.name)
            assert formal.tag == prec.tag, (name, prec, formal.tag)
            assert formal.float_capable, (name, prec)
            assert type_reason(tags, formal, outputs_from_inputs=True) is None, (name, prec)
    applied = {(c.op, a.convention) for c in all_cases() for a in c.conventions.values()}
    assert {conv for _, conv in applied} == set(Convention)
    for op, conv in applied:
        rule = RULES[conv]
        assert all(p.op != op for p in rule.precedents_for(op)), (op, conv)
        assert rule.founded_for(op) == FOUNDED[conv, op], (op, conv)


def test_a_convention_without_precedent_never_agrees():
    """Where the convention cannot decide, the math does, under the convention's label."""
    agreeing = decide(autograd=Witness(A.GRAD, "x: nonzero gradient"),
                      numeric=Witness(N.SMOOTH, "smooth"), tag=Tag.NONDIFF)
    d = under_convention(agreeing, Applies(Convention.DATA_DEPENDENT_SHAPE, "Y gathers X"),
                         Tag.NONDIFF, "Unique")
    assert (d.verdict, d.supports, d.rule) == (Verdict.DISAGREE, Tag.DIFF, Rule.UNFOUNDED)
    assert "no precedent outside Unique's own schema" in d.reason
    # the same row decides a parameter of another op, where Unique's tags are a precedent
    other = under_convention(agreeing, Applies(Convention.DATA_DEPENDENT_SHAPE, "m"),
                             Tag.NONDIFF, "SomeOp")
    assert (other.verdict, other.rule) == (Verdict.AGREE, Rule.CONVENTION)


def test_a_declaration_needs_the_math_it_sets_aside():
    with pytest.raises(ValueError):
        Applies(Convention.SAMPLING, " ")


def test_the_catalogue_declares_each_listed_parameter():
    declared = {(c.name, k): a.convention for c in all_cases() for k, a in c.conventions.items()}
    for key, convention in {**DECLARED, **OLDER_ONLY}.items():
        assert declared.get(key) == convention, key


@pytest.mark.parametrize("key", sorted(DECLARED))
def test_full_report_carries_the_convention_and_both_halves(key, proof_of):
    """What a proof of the case records: the convention named; where it is founded, its
    rule ``convention`` and the verdict its implied tag gives against the schema's; where it
    has no precedent outside the op, the rule ``convention without precedent`` and the math's
    tag against the schema's (never agree); a reason with the math ("math: ...") and the
    convention."""
    case, param_key = key
    op = next(c.op for c in all_cases() if c.name == case)
    p = _param(_proved(proof_of, case), param_key)
    convention = DECLARED[key]
    founded = FOUNDED[convention, op]
    assert p["convention"] == convention
    implied = IMPLIED[convention] if founded else MATH[convention]
    assert p["rule"] == (Rule.CONVENTION if founded else Rule.UNFOUNDED)
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


def test_state_output_turns_a_math_disagreement_into_a_convention_agreement():
    math = _witnessed_d()
    assert math.verdict == Verdict.DISAGREE
    d = under_convention(math, Applies(Convention.STATE_OUTPUT, "running_mean is smooth"),
                         Tag.NONDIFF)
    assert (d.verdict, d.supports, d.rule) == (Verdict.AGREE, Tag.NONDIFF, Rule.CONVENTION)
    assert "but the schema says" not in d.reason   # the math half names no tag twice
    assert d.reason.startswith("math: autograd: x: nonzero gradient")
    assert "running_mean is smooth" in d.reason and "state output" in d.reason


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
    assert under_convention(d, Applies(Convention.STATE_OUTPUT, "m"), Tag.NONDIFF) == d


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


def test_fix_tags_withholds_a_convention_without_precedent_and_labels_it():
    """The math decided (rule `convention without precedent`), under the convention's
    label: withheld by default like any convention's verdict; with --include-conventions
    it is edited to the math's tag and labelled as such."""
    tree = read_tree(SRC)
    unfounded = {**param("input", 0, "cond", "unknown", "proposed", NONDIFF),
                 "rule": "convention without precedent", "convention": "body-dependent"}
    recs = [record("If", 25, "if_basic", unfounded)]
    assert [(f.op, why) for f, why, _ in plan(tree, findings(recs)).withheld] == [
        ("If", Withheld.CONVENTION)]
    p = plan(tree, findings(recs), include_conventions=True)
    text, _ = pr_texts(p, "fix.patch", "fix-evidence.md")
    assert ("Convention without precedent outside the op (the math decides, under its "
            "label): **body-dependent**") in text
