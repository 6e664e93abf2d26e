"""Zero at a script's own inputs is not the op's math (issue 41 item 5; engine/numeric/redraw.py).

Expectations from the math: Max(a, b) has derivative 1 into whichever input is the maximum,
so ``a`` is differentiable wherever it is selected, and a script whose every ``a`` is below
every ``b`` never shows it; Sign is piecewise constant, zero wherever it has a derivative,
so re-drawing cannot make it smooth.
"""
from __future__ import annotations

import numpy as np
import onnx
import onnx.helper as oh

from test_script_runner import params, run, write
from torch_prover.engine.numeric.redraw import measure_redrawn, redraw_feeds

MAX = """
    \"\"\"Max: both inputs are differentiable.\"\"\"
    import torch


    class M(torch.nn.Module):
        def forward(self, a, b):
            return torch.maximum(a, b)


    a = (torch.rand(2, 3) {a}).requires_grad_()
    b = (torch.rand(2, 3) + 1.0).requires_grad_()
    y = M()(a, b)
    y.backward(torch.randn_like(y))
    torch.onnx.export(M(), (a, b), "max.onnx", input_names=["a", "b"], dynamo=True)
"""


def test_max_whose_inputs_never_select_a_is_not_a_disagreement(tmp_path, monkeypatch, capsys):
    script = write(tmp_path, "max_proof.py", MAX.format(a="- 2.0"))
    code, rec, out = run(tmp_path, monkeypatch, capsys, script)
    assert code == 0, out.err
    p = params(rec)
    a = p["input", 0]
    assert (a["verdict"], a["rule"]) == ("inconclusive", "not exercised")
    assert "re-drawn points" in a["reason"]
    assert p["input", 1]["verdict"] == "agree"


def test_max_whose_inputs_select_a_agrees(tmp_path, monkeypatch, capsys):
    """The control: with a above b everywhere, a is the one selected and agrees."""
    script = write(tmp_path, "max_proof.py", MAX.format(a="+ 3.0"))
    code, rec, out = run(tmp_path, monkeypatch, capsys, script)
    assert code == 0, out.err
    assert params(rec)["input", 0]["verdict"] == "agree"


def _node(op: str, inputs: list[str]) -> onnx.ModelProto:
    vi = [oh.make_tensor_value_info(n, onnx.TensorProto.DOUBLE, [2, 3]) for n in inputs]
    g = oh.make_graph([oh.make_node(op, inputs, ["y"])], "g", vi,
                      [oh.make_tensor_value_info("y", onnx.TensorProto.DOUBLE, [2, 3])])
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", 13)])


def test_redrawn_points_show_a_selecting_branch_and_keep_a_flat_op_flat():
    """Hand-built nodes: Max's a, never the maximum in the given feeds, is smooth at the
    re-drawn points; Sign's input stays flat at every one."""
    low = {"a": np.full((2, 3), -5.0), "b": np.ones((2, 3))}
    got = measure_redrawn(_node("Max", ["a", "b"]), 0, [low])
    assert got.exercised("input", 0) > 0 and got.exercised("input", 1) > 0
    sign = measure_redrawn(_node("Sign", ["a"]), 0, [{"a": np.ones((2, 3))}])
    assert sign.exercised("input", 0) == 0
    drawn = redraw_feeds({"a": np.zeros(3), "i": np.arange(3), "c": np.zeros(3, bool)}, 0)
    assert drawn["a"].any() and (drawn["i"] == np.arange(3)).all() and drawn["c"].dtype == bool


SIGN = """
    import torch


    class M(torch.nn.Module):
        def forward(self, x):
            return torch.sign(x)


    x = torch.randn(2, 3, requires_grad=True)
    y = M()(x)
    y.backward(torch.randn_like(y))
    torch.onnx.export(M(), (x,), "sign.onnx", input_names=["x"], dynamo=True)
"""


def test_sign_stays_decided(tmp_path, monkeypatch, capsys):
    """Sign's input is flat wherever measured, re-drawn or not: its tag (non-differentiable)
    is agreed, not made inconclusive."""
    script = write(tmp_path, "sign_proof.py", SIGN)
    code, rec, out = run(tmp_path, monkeypatch, capsys, script)
    assert code == 0, out.err
    assert params(rec)["input", 0]["verdict"] == "agree"
