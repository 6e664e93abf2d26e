"""Proof scripts as people write them: old opsets, helper nodes, ties and jumps in literals.

Each script is written fresh in the classic style (literal inputs, an explicit opset, a
hand-picked dy); the expected verdicts are the schema's tags and the math of the op.
"""
from __future__ import annotations

from test_script_runner import params, run, write

REPEAT_OPSET_11 = """
    import torch

    class M(torch.nn.Module):
        def forward(self, x):
            return x.repeat((2, 3))

    x = torch.randn(2, 3, requires_grad=True)
    y = M()(x)
    dy = torch.randn_like(y)
    torch.autograd.backward([y], grad_tensors=[dy])
    torch.onnx.export(M(), (x,), "repeat.onnx", opset_version=11,
                      input_names=["x"], output_names=["y"])
"""


def test_repeat_at_opset_11_proves_tile(tmp_path, monkeypatch, capsys):
    """The exporter writes Expand (value-preserving) then Tile: the script proves Tile, at
    the opset it asked for, with the TorchScript exporter (the dynamo exporter's minimum is
    18). Tile-6's tags are unknown: the evidence proposes input/output differentiable,
    repeats (int64) non-differentiable -- the latest schema's tags."""
    code, rec, out = run(tmp_path, monkeypatch, capsys, write(tmp_path, "r.py", REPEAT_OPSET_11))
    assert code == 0, out.err
    assert (rec["op"], rec["opset"], rec["exporter"]) == ("Tile", 11, "torchscript")
    p = params(rec)
    assert [(p[k]["name"], p[k]["verdict"], p[k]["supports"]) for k in sorted(p)] == [
        ("input", "proposed", "differentiable"), ("repeats", "proposed", "non-differentiable"),
        ("output", "proposed", "differentiable")]
    assert all(p[k]["verdict_latest"] == "agree" for k in p)


MAXPOOL_INDICES = """
    import torch

    m = torch.nn.MaxPool2d(2, return_indices=True)
    x = torch.randn(1, 1, 4, 4, requires_grad=True)
    y, idx = m(x)
    torch.autograd.backward([y], grad_tensors=[torch.randn_like(y)])
    torch.onnx.export(m, (x,), "maxpool.onnx", opset_version=13,
                      input_names=["x"], output_names=["y", "indices"])
"""


def test_maxpool_with_indices_proves_the_pooling_node(tmp_path, monkeypatch, capsys):
    """The exporter computes the indices with a second, 1x1 MaxPool plus Slice/Sub: the
    target is the MaxPool whose floating output is the script's y; the helper is listed."""
    code, rec, out = run(tmp_path, monkeypatch, capsys, write(tmp_path, "m.py", MAXPOOL_INDICES))
    assert code == 0, out.err
    assert rec["op"] == "MaxPool" and rec["helper_nodes"]
    p = params(rec)
    assert [(p[k]["name"], p[k]["verdict"]) for k in sorted(p)] == [
        ("X", "agree"), ("Y", "agree"), ("Indices", "agree")]
    assert "numeric check: off" not in out.out


REDUCE_MAX_TIES = """
    import torch

    x = torch.tensor([[1., 1., 0.], [2., 2., 2.]], requires_grad=True)

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.amax(x, dim=1)

    y = M()(x)
    y.backward(torch.ones_like(y))
    torch.onnx.export(M(), (x,), "reducemax.onnx", input_names=["x"])
"""


def test_reduce_max_with_tied_literals_agrees_and_names_the_tie(tmp_path, monkeypatch, capsys):
    """Max is differentiable almost everywhere (tagged so); the literal input ties, where a
    finite difference cannot match autograd's subgradient: the reason says so."""
    code, rec, out = run(tmp_path, monkeypatch, capsys, write(tmp_path, "t.py", REDUCE_MAX_TIES))
    assert code == 0, out.err
    x = params(rec)["input", 0]
    assert (x["verdict"], x["supports"]) == ("agree", "differentiable")
    assert "tie" in x["reason"]


ROUND_AT_3_5 = """
    import torch

    x = torch.tensor([0.2, 1.7, -2.4, 3.5], requires_grad=True)

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.round(x)

    y = M()(x)
    y.backward(torch.ones_like(y))
    torch.onnx.export(M(), (x,), "round.onnx", input_names=["x"])
"""


def test_round_at_a_rounding_boundary_agrees_and_names_the_jump(tmp_path, monkeypatch, capsys):
    """Round is piecewise constant (tagged non-differentiable); 3.5 sits on a jump."""
    code, rec, out = run(tmp_path, monkeypatch, capsys, write(tmp_path, "r.py", ROUND_AT_3_5))
    assert code == 0, out.err
    x = params(rec)["input", 0]
    assert (x["verdict"], x["supports"]) == ("agree", "non-differentiable")
    assert "1/step" in x["reason"] and "moved" in x["reason"]


RETAIN_GRAD_IN_FORWARD = """
    import torch

    class M(torch.nn.Module):
        def forward(self, x):
            y = torch.sigmoid(x)
            y.retain_grad()          # an old habit: inspect the output's grad later
            return y

    x = torch.randn(3, 4, requires_grad=True)
    y = M()(x)
    y.backward(torch.randn(3, 4))
    print("y.grad is set:", y.grad is not None)
    torch.onnx.export(M(), (x,), "sigmoid.onnx", input_names=["x"], output_names=["y"])
"""


def test_retain_grad_in_forward(tmp_path, monkeypatch, capsys):
    """retain_grad() inside forward (fails under torch.export's tracing when taken
    literally): Sigmoid's X and Y are differentiable, as tagged."""
    code, rec, out = run(tmp_path, monkeypatch, capsys,
                         write(tmp_path, "s.py", RETAIN_GRAD_IN_FORWARD))
    assert code == 0, out.err
    assert rec["op"] == "Sigmoid"
    p = params(rec)
    assert [(p[k]["verdict"], p[k]["rule"]) for k in sorted(p)] == [
        ("agree", "both witnesses"), ("agree", "both witnesses")]


def test_run_writes_no_evidence_unless_asked(tmp_path, monkeypatch, capsys):
    """A contributor runs a script inside another checkout: no stray ./models appears."""
    from torch_prover import cli
    script = write(tmp_path, "s.py", RETAIN_GRAD_IN_FORWARD)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", str(script), "--format", "json"]) == 0
    capsys.readouterr()
    assert not (tmp_path / "models").exists()
    marker = tmp_path / "ran"
    script.write_text(script.read_text() + f"\nopen({str(marker)!r}, 'w').close()\n")
    assert cli.main(["run", str(script), "--out", "/proc/torch-prover-evidence"]) == 2
    assert "cannot write there" in capsys.readouterr().err
    assert not marker.exists(), "the script ran although its output could not be written"


LSTM_FOLDED = """
    import torch

    torch.manual_seed(0)
    lstm = torch.nn.LSTM(3, 2)
    x = torch.randn(4, 1, 3, requires_grad=True)
    y, (h, c) = lstm(x)
    y.backward(torch.randn_like(y))
    torch.onnx.export(lstm, (x,), "lstm.onnx", opset_version=14, dynamo=False,
                      input_names=["x"]{extra})
"""


def test_following_the_folding_hint_proves_the_weights(tmp_path, monkeypatch, capsys):
    """TorchScript folds an LSTM's weights into constants and the report says which option
    keeps them; following it must give a better proof, not an invalid one. ONNX's B is
    PyTorch's bias_ih and bias_hh concatenated (glue only), and initial_h/c are zeros built
    from x's Shape (no gradient path): neither is ambiguous. W, R, B are differentiable by
    the math (the recurrence is smooth in them), as tagged."""
    folded = write(tmp_path, "folded.py", LSTM_FOLDED.format(extra=""))
    code, rec, out = run(tmp_path, monkeypatch, capsys, folded)
    p = params(rec)
    assert "do_constant_folding=False" in p["input", 1]["reason"]
    assert p["input", 1]["witnesses"]["autograd"]["outcome"] == "not exercised"
    kept = write(tmp_path, "kept.py", LSTM_FOLDED.format(extra=", do_constant_folding=False"))
    code, rec, out = run(tmp_path, monkeypatch, capsys, kept)
    assert rec["invalid"] is None, rec["invalid"]
    p = params(rec)
    for i, name in ((1, "W"), (2, "R"), (3, "B")):
        assert (p["input", i]["name"], p["input", i]["verdict"], p["input", i]["rule"]) == (
            name, "agree", "both witnesses")
    assert "bias_ih_l0" in p["input", 3]["source"] and "bias_hh_l0" in p["input", 3]["source"]
