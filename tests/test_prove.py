"""End-to-end proofs of the issue-2 ops, an injected wrong tag, determinism."""
import dataclasses
import hashlib
import json

import onnx
import pytest
import torch

from torch_prover.case import Case, Float
from torch_prover.cases import find_case
from torch_prover.cases.arithmetic import add_self
from torch_prover.engine.prove import prove_case
from torch_prover.tags.schema import schema_tags

from conftest import param

# (case, {(io, index): (evidence, tag, verdict)}) -- the tags are ONNX's, read at opset 25
EXPECTED = {
    "reshape_basic": {("input", 0): ("grad", "differentiable", "agree"),
                      ("input", 1): ("constant", "non-differentiable", "agree"),
                      ("output", 0): ("grad", "differentiable", "agree")},
    "shape_dynamic": {("input", 0): ("no-grad", "non-differentiable", "agree"),
                      ("output", 0): ("integer", "non-differentiable", "agree")},
    "floor_basic": {("input", 0): ("zero-grad", "non-differentiable", "agree"),
                    ("output", 0): ("zero-grad", "non-differentiable", "agree")},
    "topk_values_indices": {("input", 0): ("grad", "differentiable", "agree"),
                            ("input", 1): ("constant", "non-differentiable", "agree"),
                            ("output", 0): ("grad", "differentiable", "agree"),
                            ("output", 1): ("integer", "non-differentiable", "agree")},
    "conv2d_bias": {("input", 0): ("grad", "differentiable", "agree"),
                    ("input", 1): ("grad", "differentiable", "agree"),
                    ("input", 2): ("grad", "differentiable", "agree")},
    "gather_index_select": {("input", 0): ("grad", "differentiable", "agree"),
                            ("input", 1): ("integer", "non-differentiable", "agree")},
    "where_bool_condition": {("input", 0): ("integer", "non-differentiable", "agree"),
                             ("input", 1): ("grad", "differentiable", "agree"),
                             ("input", 2): ("grad", "differentiable", "agree")},
    "concat_three": {("input", 2): ("grad", "differentiable", "agree")},
    "split_sizes": {("input", 1): ("constant", "non-differentiable", "agree"),
                    ("output", 1): ("grad", "differentiable", "agree")},
    "tile_2x3": {("input", 1): ("constant", "non-differentiable", "agree")},
    "add_broadcast": {("input", 1): ("grad", "differentiable", "agree")},
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_issue2_cases(proof_of, name):
    proof = proof_of(name)
    assert proof.invalid is None
    for (io, index), (evidence, tag, verdict) in EXPECTED[name].items():
        p = param(proof, io, index)
        assert (p.evidence, p.tag, p.verdict) == (evidence, tag, verdict), p.reason
    assert proof.status == "proved"


def test_model_is_checked_and_recorded(proof_of):
    proof = proof_of("conv2d_bias")
    onnx.checker.check_model(proof.model)
    assert [n.op_type for n in proof.model.graph.node].count("Conv") == 1
    rec = proof.record()
    assert rec["model"]["sha256"] == hashlib.sha256(proof.model_bytes).hexdigest()
    assert {p["source"] for p in rec["parameters"] if p["io"] == "input"} == {
        "x", "param conv.weight", "param conv.bias"}


def test_same_seed_same_record():
    case = find_case("Reshape")
    a, b = prove_case(case).record(), prove_case(case).record()
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def add_and_bypass(a, b):
    return a + b, torch.exp(a)


def test_ambiguous_wrapper_is_invalid_never_agree():
    """a reaches the second output around Add: its gradient mixes Add's and exp's."""
    proof = prove_case(Case("Add", "add_bypass", add_and_bypass, (Float(3, 4), Float(3, 4)),
                            ("a", "b")))
    assert proof.status == "invalid" and "without passing through the Add node" in proof.invalid
    assert all(p.verdict == "inconclusive" for p in proof.parameters)
    assert proof.failures


def test_a_tensor_feeding_both_inputs_is_decided_by_the_numeric_witness():
    """a + a: A and B are both a, so autograd cannot credit either; Add is smooth in each
    (the node's own differences), and its output's dy reaches a, which reaches the output
    only through Add."""
    proof = prove_case(Case("Add", "add_self", add_self, (Float(3, 4),), ("a",)))
    assert proof.status == "proved" and proof.invalid is None
    assert [(p.verdict, p.rule) for p in proof.parameters] == [
        ("agree", "numeric witness only"), ("agree", "numeric witness only"),
        ("agree", "both witnesses")]
    assert "pass a and a.detach().clone()" in proof.notes[0]


def test_injected_wrong_tag_disagrees():
    """Flip Reshape's `data` tag; the same evidence must now say disagree."""
    def flipped(op, opset, domain):
        tags = schema_tags(op, opset, domain)
        data = dataclasses.replace(tags.inputs[0], tag="non-differentiable")
        return dataclasses.replace(tags, inputs=(data,) + tags.inputs[1:])
    proof = prove_case(find_case("Reshape"), tags=flipped)
    p = param(proof, "input", 0)
    assert p.verdict == "disagree" and "schema says non-differentiable" in p.reason
    assert proof.status == "disagree" and proof.failures


def test_unknown_tag_is_proposed():
    def unknown(op, opset, domain):
        tags = schema_tags(op, opset, domain)
        return dataclasses.replace(tags, outputs=tuple(
            dataclasses.replace(f, tag="unknown") for f in tags.outputs))
    proof = prove_case(find_case("TopK"), tags=unknown)
    assert param(proof, "output", 0).verdict == "proposed"
    assert "propose differentiable" in param(proof, "output", 0).reason
    assert "propose non-differentiable" in param(proof, "output", 1).reason


class _PReLU(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.act = torch.nn.PReLU(num_parameters=3)

    def forward(self, x):
        return self.act(x)


def test_a_folded_parameter_is_judged_by_the_numeric_witness_and_says_how_to_keep_it():
    """TorchScript's constant folding turns PReLU's slope parameter into a constant: PyTorch's
    gradient can no longer be attributed to it, so only the node's own finite differences
    speak (PRelu is linear in the slope where x < 0: differentiable, as tagged), and the
    reason names the option that would keep the parameter."""
    from torch_prover.engine.rules.verdict import Rule
    proof = prove_case(Case("PRelu", "t_prelu_folded", _PReLU, (Float(2, 3, 4),), ("x",),
                            exporter="torchscript"))
    p = param(proof, "input", 1)
    assert p.evidence == "constant" and p.autograd.outcome == "not exercised"
    assert (p.verdict, p.rule, p.numeric.outcome) == ("agree", Rule.NUMERIC_ONLY, "smooth")
    assert "act.weight" in p.reason and "do_constant_folding=False" in p.reason
