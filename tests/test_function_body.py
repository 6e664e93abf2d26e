"""The third witness: ONNX's function bodies, the primitive ops' tags pushed through them.

Expectations come from the math of each op (ONNX's docs give the formulas), from the
tags of the installed onnx (read here from onnx.defs, not from the witness), and from the
catalogue's reviewed declarations (``expect=``) -- never from the witness's own output.
"""
from __future__ import annotations

import onnx
import onnx.defs
import pytest
from onnx import helper

from conftest import param
from torch_prover.cases import all_cases
from torch_prover.engine.bodies.body_survey import BodyCheck, schemas_with_body, survey
from torch_prover.engine.bodies.function_body import derive
from torch_prover.engine.rules.verdict import Rule, Witness, decide, is_failure
from torch_prover.output.body_text import body_summary
from torch_prover.output.report import proof_markdown, proof_text
from torch_prover.vocab import AutogradOutcome as A
from torch_prover.vocab import BodyOutcome as B
from torch_prover.vocab import NumericOutcome as N
from torch_prover.vocab import Tag, Verdict

FLOAT = helper.make_tensor_type_proto(onnx.TensorProto.FLOAT, None)
INT64 = helper.make_tensor_type_proto(onnx.TensorProto.INT64, None)


@pytest.fixture(scope="module")
def rows():
    return {(r.op, r.since_version, r.io, r.name): r for r in survey()}


def _tag(op: str, version: int, io: str, name: str) -> str:
    s = onnx.defs.get_schema(op, version)
    formals = s.inputs if io == "input" else s.outputs
    cat = next(p for p in formals if p.name == name).differentiation_category
    return {onnx.defs.OpSchema.DifferentiationCategory.Differentiable: Tag.DIFF,
            onnx.defs.OpSchema.DifferentiationCategory.NonDifferentiable: Tag.NONDIFF,
            onnx.defs.OpSchema.DifferentiationCategory.Unknown: Tag.UNKNOWN}[cat]


def test_layer_normalization_is_a_proposal(rows):
    """Y = (X - mean) / sqrt(var + eps) * Scale + B: Y is smooth in X, Scale and B, and
    Mean and InvStdDev are smooth in X; the schema leaves every tag unknown."""
    for io, name in (("input", "X"), ("input", "Scale"), ("input", "B"), ("output", "Y"),
                     ("output", "Mean"), ("output", "InvStdDev")):
        assert _tag("LayerNormalization", 17, io, name) == Tag.UNKNOWN
        r = rows["LayerNormalization", 17, io, name]
        assert (r.finding.outcome, r.check) == (B.DIFF, BodyCheck.PROPOSED), r.finding
    scale = rows["LayerNormalization", 17, "input", "Scale"].finding.path
    assert scale[0] == "Scale" and scale[-1] == "Y" and "Mul" in scale
    assert rows["LayerNormalization", 17, "input", "B"].finding.path[-1] == "Y"


def test_clip_min_max_contradict_their_tags(rows):
    """clip(x, min, max) is min where x < min and max where x > max, so d/dmin and d/dmax
    are 1 there; the installed onnx tags both non-differentiable."""
    for name in ("min", "max"):
        assert _tag("Clip", 13, "input", name) == Tag.NONDIFF
        r = rows["Clip", 13, "input", name]
        assert (r.finding.outcome, r.check) == (B.DIFF, BodyCheck.CONTRADICTING)
        assert r.finding.path[0] == name and r.finding.path[-1] == "output"
    r = rows["Clip", 13, "input", "input"]
    assert (r.finding.outcome, r.check) == (B.DIFF, BodyCheck.CONSISTENT)


def test_a_path_through_an_if_branch(rows):
    """AffineGrid's body picks its 2-D or 3-D arithmetic with If; the grid is linear in
    theta (grid = base_grid @ theta^T), so theta's path runs through the If's branches."""
    r = rows["AffineGrid", 20, "input", "theta"]
    assert r.finding.outcome == B.DIFF
    assert "If" in r.finding.path and any(s.startswith("If/then_branch/")
                                          for s in r.finding.path)
    assert rows["AffineGrid", 20, "output", "grid"].finding.outcome == B.DIFF


def test_an_integer_path_is_no_gradient(rows):
    """A window is a function of its integer size alone: the body casts size to float
    and computes cosines, every primitive on that path tagged differentiable, but an
    integer carries no gradient, so the output is non-differentiable, as tagged."""
    for op in ("HammingWindow", "HannWindow", "BlackmanWindow"):
        assert _tag(op, 17, "output", "output") == Tag.NONDIFF
        out = rows[op, 17, "output", "output"]
        assert (out.finding.outcome, out.check) == (B.NONDIFF, BodyCheck.CONSISTENT)
        assert rows[op, 17, "input", "size"].finding.outcome == B.NOT_APPLICABLE


def test_the_case_types_decide():
    """The same Range-27 body with float inputs and with int64 ones: start + i * delta is
    smooth in start and delta, while limit only sets the length; int64 carries nothing."""
    node = helper.make_node("Range", ["s", "l", "d"], ["y"])
    floats = derive("Range", 27, node, [FLOAT] * 3)
    assert [floats.finding("input", i).outcome for i in range(3)] == [B.DIFF, B.NONDIFF, B.DIFF]
    assert "Loop" in floats.finding("input", 2).path
    ints = derive("Range", 27, node, [INT64] * 3)
    assert {ints.finding(io, i).outcome for io, i in (("input", 0), ("input", 1), ("input", 2),
                                                      ("output", 0))} == {B.NOT_APPLICABLE}


def test_an_unknown_tag_on_the_path_is_unknown_not_differentiable():
    """Celu-12's body is built at opset 12, where Div-7's inputs are tagged unknown: the
    path exists, but it is not a path of differentiable steps."""
    assert _tag("Div", 7, "input", "A") == Tag.UNKNOWN
    res = derive("Celu", 12, helper.make_node("Celu", ["x"], ["y"]), [FLOAT])
    assert res.finding("input", 0).outcome == B.UNKNOWN
    assert "Div-7" in res.finding("input", 0).detail


def test_an_op_without_a_body_says_so():
    res = derive("Abs", 13, helper.make_node("Abs", ["x"], ["y"]), [FLOAT])
    f = res.finding("input", 0)
    assert (f.outcome, f.detail) == (B.NOT_APPLICABLE, "no function body")


def test_a_body_onnx_cannot_build_is_said_so():
    """GroupNormalization's num_groups is required (no default): without it onnx's builder
    gives no body, and every parameter says so rather than guessing."""
    assert onnx.defs.get_schema("GroupNormalization", 21).attributes["num_groups"].required
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"])
    res = derive("GroupNormalization", 21, node, [FLOAT] * 3)
    for io, i in (("input", 0), ("input", 1), ("output", 0)):
        f = res.finding(io, i)
        assert f.outcome == B.NOT_BUILT and "builder returned no context-dependent body" in f.detail
    d = decide(autograd=Witness(A.GRAD, "a"), numeric=Witness(N.SMOOTH, "n"), tag=Tag.DIFF,
               body=Witness(f.outcome, f.detail))
    assert (d.verdict, d.rule) == (Verdict.AGREE, Rule.BOTH)


def test_every_schema_version_with_a_body_is_derived(rows):
    """Every ai.onnx schema version with a function body is in the survey and its body is
    built (SequenceMap's runs the node's own graph: body-dependent, said so)."""
    versions = {(s.name, s.since_version) for s in schemas_with_body()}
    assert versions == {(op, v) for op, v, _, _ in rows}
    assert not [r for r in rows.values() if r.finding.outcome == B.NOT_BUILT]
    seqmap = rows["SequenceMap", 17, "input", "input_sequence"].finding
    assert seqmap.outcome == B.UNKNOWN and "body-dependent" in seqmap.detail


def test_every_contradiction_is_a_reviewed_finding(rows):
    """A body that contradicts a tag points at a parameter the catalogue already declares
    a disagreement for, with its math (``expect=``): no false alarm."""
    declared = {(c.op, key) for c in all_cases() for key, e in c.expect.items()
                if e.verdict == "disagree"}
    contra = [r for r in rows.values() if r.check == BodyCheck.CONTRADICTING]
    assert contra
    for r in contra:
        assert (r.op, f"{r.io} {r.index}") in declared, r


# ----------------------------------------------------------------------------- the verdict
def _decide(a, n, body, tag=Tag.DIFF):
    return decide(autograd=Witness(a, "autograd says"), numeric=Witness(n, "numeric says"),
                  tag=tag, body=Witness(body, "body says"))


def test_a_body_against_both_witnesses_is_flagged_never_agree():
    d = _decide(A.GRAD, N.SMOOTH, B.NONDIFF)
    assert (d.verdict, d.rule, d.supports) == (Verdict.INCONCLUSIVE, Rule.WITNESSES_DISAGREE,
                                               None)
    assert is_failure(d.verdict, d.rule, None)
    d = _decide(A.ZERO, N.FLAT, B.DIFF, tag=Tag.NONDIFF)
    assert (d.verdict, d.rule) == (Verdict.INCONCLUSIVE, Rule.WITNESSES_DISAGREE)


@pytest.mark.parametrize("a,n,body,verdict,rule", [
    (A.GRAD, N.SMOOTH, B.DIFF, Verdict.AGREE, Rule.BOTH),
    (A.GRAD, N.SMOOTH, B.UNKNOWN, Verdict.AGREE, Rule.BOTH),
    (A.GRAD, N.SMOOTH, B.NOT_APPLICABLE, Verdict.AGREE, Rule.BOTH),
    (A.UNSUPPORTED, N.SMOOTH, B.NONDIFF, Verdict.AGREE, Rule.NUMERIC_ONLY),   # one witness
])
def test_the_body_decides_nothing_alone(a, n, body, verdict, rule):
    d = _decide(a, n, body)
    assert (d.verdict, d.rule) == (verdict, rule)


# ----------------------------------------------------------------------------- the record
def test_a_case_records_the_third_witness(proof_of):
    proof = proof_of("clip_tensor_bounds")
    p = param(proof, "input", 1)
    assert p.function_body.outcome == B.DIFF
    assert p.function_body.path[0] == "min" and p.function_body.path[-1] == "output"
    rec = proof.record()
    assert rec["function_body"] == {"schema": "Clip-13", "kind": "context-dependent",
                                    "opset": 13}
    w = rec["parameters"][1]["witnesses"]["function_body"]
    assert w["outcome"] == "differentiable" and w["path"] == list(p.function_body.path)
    line = body_summary(rec)
    assert line.startswith("function body (Clip-13, context-dependent, opset 13): ")
    assert "input 1 min differentiable (min -> " in line
    assert "function body (Clip-13" in proof_text(rec, width=None)
    assert line in proof_markdown(rec)


def test_a_case_without_a_body_says_so(proof_of):
    rec = proof_of("relu_basic").record()   # Relu-14 has a body; its case runs at opset 25
    assert rec["function_body"]["schema"] == "Relu-14"
    rec = proof_of("reshape_basic").record()
    w = rec["parameters"][0]["witnesses"]["function_body"]
    assert (w["outcome"], w["detail"]) == ("not applicable", "no function body")
    assert rec["function_body"] == {"schema": f"Reshape-{rec['schema_version']}",
                                    "kind": None, "opset": None}
    assert body_summary(rec) == (f"function body: not applicable for Reshape-"
                                 f"{rec['schema_version']}: no function body")
