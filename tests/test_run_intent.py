"""The op a script means against the op its run proves (pr/intent.py, issue 41 item 1).

Each script is written fresh here. What it means is what a reader of it sees: its file
name, docstring and the torch function it calls; what the graph holds is read from the
model the script wrote (onnx.load), not from the tool's record.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import onnx

from test_script_runner import run, write
from torch_prover import cli

EINSUM = """
    \"\"\"Einsum: both operands are differentiable (Method 1 proof).\"\"\"
    import torch


    class M(torch.nn.Module):
        def forward(self, a, b):
            return {body}


    a = torch.randn(2, 3, requires_grad=True)
    b = torch.randn(3, 4, requires_grad=True)
    y = M()(a, b)
    y.backward(torch.randn_like(y))
    torch.onnx.export(M(), (a, b), "einsum.onnx", input_names=["a", "b"], dynamo=True)
"""

AFFINE_GRID = """
    \"\"\"AffineGrid-20: theta is differentiable.\"\"\"
    import torch
    import torch.nn.functional as F


    class M(torch.nn.Module):
        def forward(self, theta):
            return F.affine_grid(theta, [1, 1, 3, 4], align_corners=False)


    theta = torch.randn(1, 2, 3, requires_grad=True)
    y = M()(theta)
    y.backward(torch.randn_like(y))
    torch.onnx.export(M(), (theta,), "ag.onnx", input_names=["theta"], opset_version=20)
"""

HARNESS = Path(__file__).resolve().parent / "data" / "no_torchscript"


def _doc(out) -> dict:
    return json.loads(out.out)


def test_a_script_naming_einsum_whose_graph_ends_in_sigmoid_is_not_proved(
        tmp_path, monkeypatch, capsys):
    """The graph holds Einsum then Sigmoid; the graph's target is the op at its output. The
    script names Einsum (file name, docstring, its call): the run must not exit 0 as a proof
    of Sigmoid, and must name both in its first line; --op settles it."""
    script = write(tmp_path, "einsum_proof.py",
                   EINSUM.format(body='torch.sigmoid(torch.einsum("ij,jk->ik", a, b))'))
    code, _, out = run(tmp_path, monkeypatch, capsys, script)
    graph = [n.op_type for n in onnx.load(tmp_path / "einsum.onnx").graph.node]
    assert graph == ["Einsum", "Sigmoid"]
    assert code == 2
    doc = _doc(out)
    rec = doc["cases"][0]
    assert (rec["op"], rec["status"]) == ("Sigmoid", "not the op meant")
    target = rec["script"]["target"]
    assert (target["status"], target["meant"]) == ("another op", ["Einsum"])
    assert {w for op, w in target["signals"]} >= {"file name", "docstring", "calls torch.einsum"}
    code, _, out = run(tmp_path, monkeypatch, capsys, script, fmt="text")
    first = out.out.splitlines()[0]
    assert code == 2 and first.startswith("NOT PROVED AS MEANT")
    assert "Einsum" in first and "Sigmoid" in first and "--op Einsum" in first
    code, _, out = run(tmp_path, monkeypatch, capsys, script, fmt="markdown")
    assert code == 2 and out.out.startswith("> **NOT PROVED AS MEANT")
    code, rec, _ = run(tmp_path, monkeypatch, capsys, script, "--op", "Einsum")
    assert code == 0 and rec["op"] == "Einsum"
    assert rec["script"]["target"]["status"] == "settled"
    assert {p["verdict"] for p in rec["parameters"]} == {"agree"}


def test_sigmoid_before_einsum_proves_einsum(tmp_path, monkeypatch, capsys):
    """Einsum at the output, Sigmoid before it: the module calls both by name, the graph's
    output op is Einsum, which the script names: proved as meant, exit 0."""
    script = write(tmp_path, "einsum_proof.py",
                   EINSUM.format(body='torch.einsum("ij,jk->ik", torch.sigmoid(a), b)'))
    code, rec, out = run(tmp_path, monkeypatch, capsys, script)
    assert code == 0, out.err
    assert rec["op"] == "Einsum" and rec["script"]["target"]["status"] == "the op the script means"


def test_affine_grid_decomposed_without_torchscript_is_named(tmp_path, monkeypatch, capsys):
    """With TorchScript made to raise (tests/data/no_torchscript), F.affine_grid is exported
    by dynamo, which decomposes it: the graph the script wrote has no AffineGrid node, so
    whatever op the run falls back on is not the op meant: exit 2, AffineGrid named as not
    in the graph, in the first line."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(HARNESS)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    script = write(tmp_path, "affine_grid_proof.py", AFFINE_GRID)
    monkeypatch.chdir(tmp_path)
    code = cli.main(["run", str(script), "--format", "text"])
    out = capsys.readouterr()
    graph = {n.op_type for n in onnx.load(tmp_path / "ag.onnx").graph.node}
    if "AffineGrid" in graph:       # an own translation keeps it (issue 41 item 2)
        assert code in (0, 1)
        return
    assert code == 2
    first = out.out.splitlines()[0]
    assert first.startswith("NOT PROVED AS MEANT") and "AffineGrid" in first
    assert "does not have" in first


def test_a_name_the_script_cannot_mean_is_not_read_as_one(tmp_path, monkeypatch, capsys):
    """"exp" in exp_program_save.py abbreviates "exported"; the script computes no Exp and
    the graph has none: the word names nothing, and the Tanh proof stands."""
    script = write(tmp_path, "exp_program_save.py", """
        import torch

        class M(torch.nn.Module):
            def forward(self, x):
                return torch.tanh(x)

        x = torch.randn(3, requires_grad=True)
        M()(x).backward(torch.ones(3))
        torch.onnx.export(M(), (x,), "m.onnx", input_names=["x"], dynamo=True)
    """)
    code, rec, out = run(tmp_path, monkeypatch, capsys, script)
    assert code == 0, out.err
    assert rec["op"] == "Tanh"
    assert rec["script"]["target"]["meant"] == ["Tanh"]
