"""Numeric confirmation can pass, can fail, and says which runtime ran."""
import copy

import pytest

import onnx
import torch

from torch_prover.engine.numeric import numeric
from torch_prover.case import Case, Float
from torch_prover.cases import find_case
from torch_prover.engine.prove import prove_case

from conftest import param


def test_float64_errors_are_tight(proof_of):
    for name in ("conv2d_bias", "gather_index_select"):
        n = proof_of(name).numeric
        assert n.forward_ok and n.forward_max_abs_err < 1e-5
        assert n.vjp and all(c.ok and c.rel_err < 1e-6 for c in n.vjp.values()), n.vjp


def test_reference_fallback_when_onnxruntime_lacks_the_kernel(proof_of):
    """onnxruntime has no float64 Conv: the reference evaluator runs, and the record says so."""
    rec = proof_of("conv2d_bias").record()
    assert rec["numeric"]["runtime"] == "reference"
    assert "onnxruntime" in rec["numeric"]["why"]
    assert proof_of("reshape_basic").record()["numeric"]["runtime"] == "onnxruntime"


def _check(model, proof):
    run = proof.probe.runs[0]
    feeds = {n: t.numpy() for n, t in zip(proof.case.names, run.inputs)}
    grads = {n: g for n, g in zip(proof.case.names, run.input_grads) if g is not None}
    return numeric.check(model, feeds=feeds, expected_outputs=list(run.outputs),
                         dy=list(run.dy), grads=grads, zero_grads=set(), initializers=set(),
                         float_dtype="float64")


def test_tampered_model_fails_forward(proof_of):
    proof = proof_of("add_broadcast")
    model = copy.deepcopy(proof.model)
    next(n for n in model.graph.node if n.op_type == "Add").op_type = "Sub"
    res = _check(model, proof)
    assert not res.forward_ok


def test_tampered_derivative_fails_vjp(proof_of):
    """Reshape fed x + 1e-3 sin(1000 x) - 1e-3 sin(1000 x0): the same values at the
    sample x0, but a derivative off by cos(1000 x)."""
    proof = proof_of("reshape_basic")
    model = copy.deepcopy(proof.model)
    g = model.graph
    reshape = next(n for n in g.node if n.op_type == "Reshape")
    x0 = proof.probe.runs[0].inputs[0].numpy()
    const = onnx.numpy_helper.from_array((1e-3 * torch.sin(torch.tensor(x0) * 1000)).numpy(), "c0")
    g.initializer.append(const)
    k = onnx.numpy_helper.from_array(torch.tensor(1000.0, dtype=torch.float64).numpy(), "k")
    eps = onnx.numpy_helper.from_array(torch.tensor(1e-3, dtype=torch.float64).numpy(), "eps")
    g.initializer.extend([k, eps])
    nodes = [onnx.helper.make_node("Mul", ["x", "k"], ["xk"]),
             onnx.helper.make_node("Sin", ["xk"], ["s"]),
             onnx.helper.make_node("Mul", ["s", "eps"], ["se"]),
             onnx.helper.make_node("Sub", ["se", "c0"], ["wiggle"]),
             onnx.helper.make_node("Add", ["x", "wiggle"], ["xw"])]
    reshape.input[0] = "xw"
    for i, n in enumerate(nodes):
        g.node.insert(i, n)
    res = _check(model, proof)
    assert res.forward_ok                      # same values at the sample point...
    assert not res.vjp["x"].ok                 # ...but the derivative is off by cos(1000x)
    assert res.vjp["x"].rel_err > 1e-3


def test_failed_check_makes_verdict_inconclusive(monkeypatch):
    real = numeric.check

    def off_by_two(model, **kw):
        kw["grads"] = {k: 2 * v for k, v in kw["grads"].items()}
        return real(model, **kw)
    monkeypatch.setattr(numeric, "check", off_by_two)
    proof = prove_case(find_case("Reshape"))
    p = param(proof, "input", 0)
    assert (p.verdict, p.rule) == ("inconclusive", "VJP check failed")
    assert "rel err" in p.reason and proof.failures and proof.status == "failed"


def test_no_numeric_leaves_the_record_without_a_block():
    proof = prove_case(find_case("Reshape"), numeric=False)
    assert proof.record()["numeric"] is None
    assert param(proof, "input", 0).verdict == "agree"


def clamp_scalar_bounds(x, lo, hi):
    return torch.clamp(x, lo, hi)


def test_zero_dim_inputs_are_perturbed():
    """0-d graph inputs (a scalar clip bound) must survive the finite-difference shift."""
    from torch_prover.case import Fixed
    case = Case("Clip", "clip_0d", clamp_scalar_bounds,
                (Float(3, 4), Fixed(-0.3), Fixed(0.4)), ("x", "lo", "hi"), exporter="torchscript")
    proof = prove_case(case)
    vjp = proof.numeric.vjp
    assert set(vjp) == {"x", "lo", "hi"} and all(c.ok for c in vjp.values()), vjp


def test_no_runtime_is_recorded_not_skipped(monkeypatch):
    """Neither runtime can run the model: the record says so and why, and nothing is
    decided on autograd alone -- a run of no runtime is not a run of the schema version
    (engine/versions/fidelity.py): every verdict but a by-type one is inconclusive, and the proof
    fails."""
    def refuse(self, model, kind):
        raise RuntimeError(f"{kind} cannot load this")
    monkeypatch.setattr(numeric.Runner, "__init__", refuse)
    proof = prove_case(find_case("Reshape"))
    rec = proof.record()
    assert rec["numeric"]["runtime"] is None
    assert "onnxruntime cannot load this" in rec["numeric"]["why"]
    assert "reference cannot load this" in rec["numeric"]["why"]
    assert [p["kind"] for p in rec["fidelity"]["problems"]] == [
        "no runtime implements the version"]
    p = param(proof, "input", 0)
    assert (p.verdict, p.rule, p.supports) == ("inconclusive",
                                               "not a run of its schema version", None)
    assert param(proof, "input", 1).rule == "by type"   # shape: int64, whatever ran
    assert proof.status == "failed"


def test_a_runtime_refusal_is_recorded_by_its_reason_not_its_cpp_frame():
    """onnxruntime 1.31 refuses opset 27 with a message that starts with its build's source
    path and a C++ signature; the record's 300 characters must hold the reason instead."""
    import onnx
    import onnx.helper as h
    import onnxruntime as ort
    from torch_prover.errors import describe
    x = h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])
    y = h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])
    model = h.make_model(h.make_graph([h.make_node("Relu", ["x"], ["y"])], "g", [x], [y]),
                         opset_imports=[h.make_opsetid("", 27)], ir_version=13)
    with pytest.raises(Exception) as caught:
        ort.InferenceSession(model.SerializeToString())
    raw, shown = str(caught.value), describe(caught.value)
    assert "onnxruntime_src" in raw             # what the runtime says, frame first
    assert "onnxruntime_src" not in shown and "Opset 27 is under development" in shown
    assert len(shown) <= 300
