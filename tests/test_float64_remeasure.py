"""Flat in float32 is not zero (issue 41 item 5; engine/numeric/redraw.py's float64 re-measure).

Expectations from the math: central differences of hand-built nodes in onnx.reference, at
ONNX's own points (the installed onnx's RNN tests, collected as verify-all collects them) cast
to double, never the tool's output. RNN-22's Y_h moves with R by 1.6e-6 (test_rnn_seq_length)
and 5.5e-6 (test_simple_rnn_bidirectional) per unit of a random direction in float64, and by
exactly 0 in float32 (tanh saturates below float32's resolution); Sign is zero wherever it has
a derivative, in any precision; tanh(9.5) has the derivative sech^2(9.5) = 2.2e-8, which float32
rounds to zero (torch's tanh(9.5) is 1.0f) and float64 does not.
"""
from __future__ import annotations

import numpy as np
import onnx
import onnx.helper as oh
import pytest
from onnx.reference import ReferenceEvaluator

from test_script_runner import params, run, write
from torch_prover.engine.numeric.redraw import float64_node, measure_float64, measure_redrawn
from torch_prover.engine.onnx_points.store import installed_tests


def _fd(node: onnx.NodeProto, feeds: dict, wrt: str, dtype, opset: int, h: float) -> float:
    """max |central difference| of every output along a seeded direction in ``wrt``, every
    floating value cast to ``dtype`` (onnx.reference: float64 where asked)."""
    feeds = {k: v.astype(dtype) if v.dtype.kind == "f" else v for k, v in feeds.items()}
    et = oh.np_dtype_to_tensor_dtype(np.dtype(dtype))
    vi = [oh.make_tensor_value_info(n, oh.np_dtype_to_tensor_dtype(x.dtype), x.shape)
          for n, x in feeds.items()]
    outs = [oh.make_tensor_value_info(o, et, None) for o in node.output if o]
    ev = ReferenceEvaluator(oh.make_model(oh.make_graph([node], "g", vi, outs),
                                          opset_imports=[oh.make_opsetid("", opset)]))
    x = feeds[wrt]
    v = np.random.default_rng(0).standard_normal(x.shape).astype(dtype)
    a = ev.run(None, {**feeds, wrt: (x + h * v).astype(dtype)})
    b = ev.run(None, {**feeds, wrt: (x - h * v).astype(dtype)})
    return max(float(np.abs((p.astype(np.float64) - q) / (2 * h)).max()) for p, q in zip(a, b))


@pytest.fixture(scope="module")
def rnn_tests(tmp_path_factory):
    tests, _ = installed_tests(tmp_path_factory.mktemp("points"), ["RNN"])
    return {t.name: t for t in tests if getattr(t, "op", None) == "RNN"}


@pytest.mark.parametrize("name", ["test_rnn_seq_length", "test_simple_rnn_bidirectional"])
def test_rnn_r_is_flat_in_float32_and_smooth_in_float64_at_onnx_points(rnn_tests, name):
    t = rnn_tests[name]
    model = t.proto()
    feeds = dict(zip([i.name for i in model.graph.input], t.data_sets[0][0]))
    node = model.graph.node[0]
    r = list(node.input).index("R")
    # the math, by hand: nonzero in float64 at both steps, exactly zero in float32
    for h in (1e-3, 1e-4):
        assert 1e-7 < _fd(node, feeds, "R", np.float64, 22, h) < 1e-4
        assert _fd(node, feeds, "R", np.float32, 22, h) == 0.0
    # the tool's float64 re-measure at the same points sees it, and says what computed it
    w, how = measure_float64(model, 0, feeds)
    assert w is not None and how.ran and how.schema == "RNN-22"
    assert how.runtime in ("onnxruntime", "onnx.reference") and how.computed == "float64"
    assert w.input(r).outcome.value == "smooth"
    assert f"float64 ({how.runtime}, RNN-22" in how.words()
    seen = measure_redrawn(model, 0, [feeds], flat={("input", r)})
    assert seen.in_float64("input", r) and not seen.smooth   # no re-draw needed


def _sign() -> tuple[onnx.ModelProto, dict]:
    vi = [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3])]
    g = oh.make_graph([oh.make_node("Sign", ["x"], ["y"])], "g", vi,
                      [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3])])
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", 13)]), {"x": x}


def test_a_truly_flat_input_stays_flat_in_float64():
    model, feeds = _sign()
    assert _fd(model.graph.node[0], feeds, "x", np.float64, 13, 1e-4) == 0.0
    w, how = measure_float64(model, 0, feeds)
    assert how.ran and how.schema == "Sign-13" and w.input(0).outcome.value == "flat"
    seen = measure_redrawn(model, 0, [feeds], flat={("input", 0)})
    assert not seen.in_float64("input", 0) and seen.exercised("input", 0) == 0


def test_no_float64_where_the_schema_admits_no_double():
    """DequantizeLinear-10's x_scale is tensor(float) only (onnx.defs): no float64 copy."""
    schema = onnx.defs.get_schema("DequantizeLinear", 10)
    assert schema.inputs[1].type_str == "tensor(float)"
    vi = [oh.make_tensor_value_info("x", onnx.TensorProto.INT8, [3]),
          oh.make_tensor_value_info("s", onnx.TensorProto.FLOAT, [])]
    g = oh.make_graph([oh.make_node("DequantizeLinear", ["x", "s"], ["y"])], "g", vi,
                      [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [3])])
    model = oh.make_model(g, opset_imports=[oh.make_opsetid("", 10)])
    model.ir_version = 7       # what onnxruntime reads
    got = float64_node(model, 0, {"x": np.array([1, -2, 3], np.int8),
                                  "s": np.array(0.5, np.float32)})
    assert got.model is None and "admits no double" in got.why and got.schema == \
        "DequantizeLinear-10"


TANH = """
    \"\"\"Tanh: its input is differentiable.\"\"\"
    import torch


    class M(torch.nn.Module):
        def forward(self, x):
            return torch.tanh(x)


    x = torch.full((2, 3), 9.5, requires_grad=True)
    y = M()(x)
    y.backward(torch.randn_like(y))
    torch.onnx.export(M(), (x,), "tanh.onnx", input_names=["x"], dynamo=True)
"""


def test_run_names_float64_where_a_script_saturates_float32(tmp_path, monkeypatch, capsys):
    """tanh(9.5) in torch's float32 is 1.0 exactly: autograd's gradient and float32's
    differences are zero at the script's inputs; float64's derivative is sech^2(9.5) = 2.2e-8,
    not zero."""
    import torch
    x = torch.tensor(9.5, requires_grad=True)
    torch.tanh(x).backward()
    assert torch.tanh(torch.tensor(9.5)).item() == 1.0 and x.grad.item() == 0.0
    assert 1e-8 < 1 / np.cosh(9.5) ** 2 < 1e-7
    script = write(tmp_path, "tanh_proof.py", TANH)
    code, rec, out = run(tmp_path, monkeypatch, capsys, script)
    x = params(rec)["input", 0]
    assert (x["verdict"], x["rule"]) == ("inconclusive", "not exercised"), x
    assert "smooth at the same inputs in float64 (" in x["reason"] and "Tanh-13" in x["reason"]
    assert code == 0, out.err
