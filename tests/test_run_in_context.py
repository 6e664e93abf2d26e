"""Proofs in context: scripts whose op sits among others, shares a tensor, or was folded
away, and exports the runner must leave exactly as the script wrote them.

Each script is written fresh for these tests. Expected verdicts come from the math and the
schema: HardSwish's X and Y, MatMul's A, B and Y, Gemm's A, B, C are differentiable, and
so tagged; an op the module computes on parameters only is a constant once folded. Every
note the runner makes about an exporter's behaviour is checked here against the installed
torch, not against the runner's own output.
"""
from __future__ import annotations

import json

import io
import subprocess
import sys

import onnx
import pytest
import torch

from test_script_runner import params, run, write
from torch_prover.engine.export import quiet

LINEAR_HARDSWISH = """
    import torch

    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Hardswish()).double()
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    y = model(x)
    y.backward(torch.randn_like(y))
    torch.onnx.export(model, (x,), "linear_hardswish.onnx", input_names=["x"],
                      output_names=["y"])
"""


def test_op_in_context_is_the_one_computing_the_output(tmp_path, monkeypatch, capsys):
    """HardSwish's X is Gemm's output: autograd's gradients are about Gemm, so the numeric
    witness alone decides X (differentiable: HardSwish is x*relu6(x+3)/6, smooth off +-3);
    not an invalid case. The note names Gemm and how to prove it."""
    script = write(tmp_path, "linear_hardswish.py", LINEAR_HARDSWISH)
    code, rec, out = run(tmp_path, monkeypatch, capsys, script)
    assert code == 0, out.err
    assert (rec["op"], rec["script"]["op_from"], rec["invalid"]) == ("HardSwish", "graph", None)
    p = params(rec)
    assert (p["input", 0]["verdict"], p["input", 0]["rule"]) == ("agree",
                                                                 "numeric witness only")
    assert p["input", 0]["witnesses"]["autograd"]["outcome"] == "not exercised"
    assert p["output", 0]["verdict"] == "agree"
    assert rec["script"]["other_ops"] == [{"op": "Gemm", "node": 0, "moves_values": False}]
    code, _, out = run(tmp_path, monkeypatch, capsys, script, fmt="text")
    assert code == 0
    assert ("the graph also computes with Gemm: prove it with --op Gemm, or every computing "
            "node with --all-ops") in out.out


def test_all_ops_proves_every_computing_node(tmp_path, monkeypatch, capsys):
    """Gemm in context: its inputs are the script's x and the Linear's parameters (direct,
    so both witnesses speak); its output reaches y through HardSwish."""
    script = write(tmp_path, "linear_hardswish.py", LINEAR_HARDSWISH)
    code, rec, out = run(tmp_path, monkeypatch, capsys, script, "--all-ops",
                         "--out", str(tmp_path / "ev"))
    assert code == 0, out.err
    proofs = json.loads(out.out)["cases"]   # the script's node first, then --all-ops's
    assert rec == proofs[0]
    assert [r["op"] for r in proofs] == ["HardSwish", "Gemm"]
    gemm = params(proofs[1])
    for i, source in enumerate(("x", "param 0.weight", "param 0.bias")):
        assert (gemm["input", i]["source"], gemm["input", i]["verdict"],
                gemm["input", i]["rule"]) == (source, "agree", "both witnesses")
    assert gemm["output", 0]["verdict"] == "agree"
    assert rec["script"]["all_ops"] is True
    assert (tmp_path / "ev" / "Gemm" / "linear_hardswish_gemm" / "proof.json").is_file()
    assert (tmp_path / "ev" / "HardSwish" / "linear_hardswish" / "proof.json").is_file()


X_XT = """
    import torch

    class Gram(torch.nn.Module):
        def forward(self, x):
            return x @ x.T

    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    y = Gram()(x)
    y.backward(torch.randn_like(y))
    torch.onnx.export(Gram(), (x,), "gram.onnx", input_names=["x"], output_names=["y"])
"""


def test_a_tensor_feeding_both_inputs_costs_only_their_autograd_witness(
        tmp_path, monkeypatch, capsys):
    """x @ x.T: A and B are both x, so x's gradient is the sum over them and neither may
    claim it; MatMul is bilinear, so the node's own differences find each smooth. Y's dy
    reaches x, which reaches y only through MatMul: Y keeps both witnesses."""
    code, rec, out = run(tmp_path, monkeypatch, capsys, write(tmp_path, "gram.py", X_XT))
    assert code == 0, out.err
    assert rec["invalid"] is None and rec["status"] == "proved"
    p = params(rec)
    for i in (0, 1):
        assert (p["input", i]["verdict"], p["input", i]["rule"]) == ("agree",
                                                                     "numeric witness only")
    assert (p["output", 0]["verdict"], p["output", 0]["rule"]) == ("agree", "both witnesses")
    (note,) = rec["notes"]
    assert "pass x and x.detach().clone()" in note
    code, _, out = run(tmp_path, monkeypatch, capsys, write(tmp_path, "gram.py", X_XT),
                       fmt="text")
    assert "note: x feeds inputs 0, 1 of the node" in out.out


SOFTPLUS_PARAM = """
    import torch
    import torch.nn.functional as F

    class Scale(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.raw = torch.nn.Parameter(torch.randn(4, dtype=torch.float64))

        def forward(self, x):
            return x * F.softplus(self.raw)

    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    y = Scale()(x)
    y.backward(torch.randn_like(y))
    torch.onnx.export(Scale(), (x,), "scale.onnx", input_names=["x"]{extra})
"""


def test_an_op_folded_away_is_named_with_how_to_keep_it(tmp_path, monkeypatch, capsys):
    """softplus(self.raw) reads a parameter only: the exporter's optimizer folds it into a
    constant, leaving Mul(x, constant). The report names Softplus; following its advice
    (optimize=False) keeps the Softplus node, and then nothing is reported missing."""
    folded = write(tmp_path, "scale.py", SOFTPLUS_PARAM.format(extra=""))
    code, rec, out = run(tmp_path, monkeypatch, capsys, folded)
    # the script calls F.softplus, which the graph lacks: not a proof of what it computes,
    # exit 2 (pr/intent.py), and the record says what was proved instead
    assert code == 2 and rec is None
    rec = json.loads(out.out)["cases"][0]
    assert rec["script"]["target"]["status"] == "not in the graph"
    assert rec["script"]["target"]["meant"] == ["Softplus"]
    assert rec["op"] == "Mul"
    (line,) = rec["script"]["missing_ops"]
    assert line.startswith("the module computes Softplus (aten.softplus)")
    assert "folded into a constant" in line and "optimize=False" in line
    assert "Softplus" not in {n.op_type for n in onnx.load(tmp_path / "scale.onnx").graph.node}
    kept = write(tmp_path, "kept.py", SOFTPLUS_PARAM.format(extra=", optimize=False"))
    code, rec, out = run(tmp_path, monkeypatch, capsys, kept, "--op", "Mul")
    assert "Softplus" in {n.op_type for n in onnx.load(tmp_path / "scale.onnx").graph.node}
    assert rec["script"]["missing_ops"] == []


DYNAMO_OPSET_14 = """
    import torch

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    x = torch.randn(2, 4, requires_grad=True)
    model(x).sum().backward()
    torch.onnx.export(model, (x,), "linear14.onnx", dynamo=True, opset_version=14,
                      export_params=False, input_names=["x"])
"""


def _opset(model: onnx.ModelProto) -> int:
    return {o.domain: o.version for o in model.opset_import}[""]


def _python_writes(tmp_path, body: str, name: str) -> bytes:
    """What ``python script.py`` leaves in its directory."""
    where = tmp_path / "plain"
    where.mkdir()
    script = write(where, "script.py", body)
    subprocess.run([sys.executable, str(script)], cwd=where, check=True,
                   capture_output=True, timeout=600)
    return (where / name).read_bytes()


def test_the_scripts_file_is_what_python_writes(tmp_path, monkeypatch, capsys):
    """dynamo=True at opset 14 is exported by torch's dynamo exporter and converted down, and
    export_params=False leaves the weights out: the script's file after `run` is byte for
    byte what `python script.py` writes; the proof runs an evidence copy with the weights."""
    expected = _python_writes(tmp_path, DYNAMO_OPSET_14, "linear14.onnx")
    written = onnx.load_from_string(expected)
    assert _opset(written) == 14 and not written.graph.initializer
    code, rec, out = run(tmp_path, monkeypatch, capsys, write(tmp_path, "s.py", DYNAMO_OPSET_14))
    assert code == 0, out.err
    assert (tmp_path / "linear14.onnx").read_bytes() == expected
    e = rec["script"]["export"]
    assert (rec["exporter"], rec["opset"], e["exporter"]) == ("dynamo", 14, "dynamo")
    assert e["options"]["export_params"] is True
    (why,) = e["evidence_copy"]
    assert why.startswith("export_params=True: the script's export_params=False left bias, "
                          "weight out of its model")
    assert not any("as the script asked" in n for n in rec["script"]["runner_notes"])
    code, _, out = run(tmp_path, monkeypatch, capsys, write(tmp_path, "s.py", DYNAMO_OPSET_14),
                       fmt="text")
    import hashlib
    file_sha = hashlib.sha256(expected).hexdigest()
    assert out.out.count(file_sha) == 1 and f"the script's file linear14.onnx: sha256 " \
        f"{file_sha}" in out.out
    assert out.out.count("evidence copy sha256 ") == 1


def test_export_params_false_model_cannot_run(tmp_path):
    """The evidence copy's reason: written to a path with export_params=False, the model
    lacks its parameters and a runtime refuses it (to an io.BytesIO, torch 2.13 keeps them:
    then no copy is made)."""
    import onnxruntime
    with quiet():
        torch.onnx.export(torch.nn.Linear(4, 3).eval(), (torch.randn(2, 4),),
                          tmp_path / "m.onnx", export_params=False)
    with pytest.raises(Exception, match="weight"):
        onnxruntime.InferenceSession(str(tmp_path / "m.onnx"))
    buf = io.BytesIO()
    with quiet():
        torch.onnx.export(torch.nn.Linear(4, 3).eval(), (torch.randn(2, 4),), buf,
                          export_params=False)
    onnxruntime.InferenceSession(buf.getvalue())


def test_dynamo_exporter_takes_a_bytesio_but_not_an_open_file(tmp_path):
    """The runner's open-file note: the dynamo exporter refuses an open file and takes a
    path or an io.BytesIO -- on the installed torch."""
    buf = io.BytesIO()
    with quiet():
        torch.onnx.export(torch.nn.Tanh().eval(), (torch.randn(3),), buf)
    assert onnx.load_from_string(buf.getvalue()).graph.node[0].op_type == "Tanh"
    with open(tmp_path / "m.onnx", "wb") as f, pytest.raises(TypeError), quiet():
        torch.onnx.export(torch.nn.Tanh().eval(), (torch.randn(3),), f)


BYTESIO = """
    import io
    import torch

    x = torch.randn(3, requires_grad=True)
    torch.tanh(x).backward(torch.ones(3))
    buf = io.BytesIO()
    torch.onnx.export(torch.nn.Tanh(), (x,), buf, input_names=["x"])
    open("tanh.onnx", "wb").write(buf.getvalue())
"""


def test_a_bytesio_export_runs_as_written(tmp_path, monkeypatch, capsys):
    code, rec, out = run(tmp_path, monkeypatch, capsys, write(tmp_path, "b.py", BYTESIO))
    assert code == 0, out.err
    assert rec["script"]["runner_notes"] == [] and rec["script"]["export"]["evidence_copy"] == []
    assert rec["exporter"] == "dynamo"


DYNAMO_OPSET_11 = """
    import torch

    x = torch.randn(3, requires_grad=True)
    torch.tanh(x).backward(torch.ones(3))
    torch.onnx.export(torch.nn.Tanh(), (x,), "tanh11.onnx", opset_version=11)
"""


def test_an_opset_the_dynamo_exporter_cannot_convert_to(tmp_path, monkeypatch, capsys):
    """Asked for opset 11, torch's dynamo exporter cannot convert Tanh down (no adapter)
    and writes opset 18; the script's file keeps that, the evidence copy is TorchScript's
    opset 11, and the record says which and why."""
    code, rec, out = run(tmp_path, monkeypatch, capsys, write(tmp_path, "t.py", DYNAMO_OPSET_11))
    assert code == 0, out.err
    assert _opset(onnx.load(tmp_path / "tanh11.onnx")) == 18
    assert (rec["exporter"], rec["opset"]) == ("torchscript", 11)
    (why,) = rec["script"]["export"]["evidence_copy"]
    assert "asked for opset 11, wrote opset 18" in why
