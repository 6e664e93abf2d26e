"""The library surface (docs/design.md §3): torch_prover.prove(fn_or_module, inputs, op=...)."""
import torch

import torch_prover
from torch_prover.output import report


def test_prove_a_function():
    proof = torch_prover.prove(lambda a, b: a * b, [torch.randn(2, 3), torch.randn(2, 3)],
                               op="Mul")
    assert proof.status == "proved"
    assert [(p.name, p.evidence, p.verdict) for p in proof.parameters] == [
        ("A", "grad", "agree"), ("B", "grad", "agree"), ("C", "grad", "agree")]
    assert "status: proved" in report.proof_text(proof.record())


def test_prove_a_module_instance_with_parameters():
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(1, 2, 3)
    proof = torch_prover.prove(conv, [torch.randn(1, 1, 5, 5)], op="conv")  # any case
    assert proof.op == "Conv" and proof.numeric.runtime == "onnxruntime"   # float32 in ORT
    assert [p.source for p in proof.parameters if p.io == "input"] == [
        "x0", "param weight", "param bias"]
    assert all(p.verdict == "agree" for p in proof.parameters)
