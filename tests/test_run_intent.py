"""The op a script means against the op its run proves (pr/intent.py, issue 41 item 1).

Each script is written fresh here. What it means is what a reader of it sees: its file
name, docstring and the torch function it calls; what the graph holds is read from the
model the script wrote (onnx.load), not from the tool's record.
"""
from __future__ import annotations

import json
import textwrap
import os
import subprocess
import sys
from types import SimpleNamespace
from pathlib import Path

import onnx

from test_script_runner import run, write

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


def _without_torchscript(tmp_path, script, fmt):
    """``torch-prover run`` in a fresh Python with the harness on PYTHONPATH (the fork server
    of this test process may have started with TorchScript in place)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(HARNESS)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    done = subprocess.run([sys.executable, "-m", "torch_prover", "run", str(script),
                           "--format", fmt], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=900)
    return done.returncode, SimpleNamespace(out=done.stdout, err=done.stderr)


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
    script = write(tmp_path, "affine_grid_proof.py", AFFINE_GRID)
    code, out = _without_torchscript(tmp_path, script, "text")
    graph = {n.op_type for n in onnx.load(tmp_path / "ag.onnx").graph.node}
    assert "AffineGrid" not in graph      # the script asked for dynamo: exported as written
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


def test_a_torchscript_era_affine_grid_is_proved_with_the_tools_own_translation(
        tmp_path, monkeypatch, capsys):
    """The same script asking for TorchScript (dynamo=False), TorchScript made to raise: the
    runner re-exports with dynamo and its own AffineGrid translation (pr/translations.py), so
    the node survives and the verdicts are AffineGrid's. The math: the grid is linear in
    theta (grid = base @ theta^T), so theta and grid are differentiable -- theta against its
    tag (non-differentiable: a disagreement), as with TorchScript; size is int64 (by type)."""
    script = write(tmp_path, "affine_grid_proof.py",
                   AFFINE_GRID.replace("opset_version=20)", "opset_version=20, dynamo=False)"))
    code, out = _without_torchscript(tmp_path, script, "json")
    assert [n.op_type for n in onnx.load(tmp_path / "ag.onnx").graph.node] == ["AffineGrid"]
    assert code == 1, out.err                      # theta's tag is wrong: a disagreement
    rec = _doc(out)["cases"][0]
    assert (rec["op"], rec["case_kind"]) == ("AffineGrid", "natural")
    assert rec["script"]["target"]["status"] == "the op the script means"
    got = {p["name"]: (p["verdict"], p["supports"]) for p in rec["parameters"]}
    assert got == {"theta": ("disagree", "differentiable"), "size": ("agree", "non-differentiable"),
                   "grid": ("agree", "differentiable")}
    assert any("own translation of AffineGrid" in n for n in rec["script"]["runner_notes"])


CLAMP = """
    \"\"\"Clip-13: min and max move the output where x is clipped.\"\"\"
    import torch


    class M(torch.nn.Module):
        def forward(self, x, lo, hi):
            return torch.clamp(x, lo, hi)


    torch.manual_seed(0)
    x = torch.randn(3, 4, requires_grad=True)
    lo = (torch.randn({shape}) * 0.1 - 0.5).requires_grad_()
    hi = (torch.randn({shape}) * 0.1 + 0.5).requires_grad_()
    y = M()(x, lo, hi)
    y.backward(torch.ones_like(y))
    torch.onnx.export(M(), (x, lo, hi), "clip.onnx", opset_version=17, dynamo=False)
"""


def test_a_torchscript_era_clamp_is_clip_only_where_its_bounds_are_scalars(tmp_path):
    """TorchScript made to raise. 0-d bounds: the runner's own translation writes Clip (Clip's
    min and max are scalars) and the run proves it; Clip-13 tags min and max
    non-differentiable, but dY/dmin = 1 where x < min: a disagreement, exit 1, as with
    TorchScript (tests/data/scripts/clip_opset13_tensor_bounds.py). Elementwise bounds are
    not Clip's meaning: no Clip node (Max, Min, read from the file), and the run names Clip
    as decomposed, exit 2."""
    scalar = write(tmp_path, "clip_proof.py", CLAMP.format(shape="()"))
    code, out = _without_torchscript(tmp_path, scalar, "json")
    assert [n.op_type for n in onnx.load(tmp_path / "clip.onnx").graph.node] == ["Clip"]
    assert code == 1, out.err
    rec = _doc(out)["cases"][0]
    assert rec["op"] == "Clip" and rec["script"]["target"]["status"] == "the op the script means"
    assert {p["name"]: p["verdict"] for p in rec["parameters"]} == {
        "input": "agree", "min": "disagree", "max": "disagree", "output": "agree"}
    elementwise = write(tmp_path, "clip_proof.py", CLAMP.format(shape="3, 4"))
    code, out = _without_torchscript(tmp_path, elementwise, "text")
    graph = {n.op_type for n in onnx.load(tmp_path / "clip.onnx").graph.node}
    assert "Clip" not in graph and {"Max", "Min"} <= graph
    assert code == 2
    first = out.out.splitlines()[0]
    assert first.startswith("NOT PROVED AS MEANT") and "Clip" in first and "does not have" in first


def test_pixel_unshuffle_is_named_as_decomposed_without_torchscript(tmp_path):
    """pixel_unshuffle has no ONNX op of its meaning (SpaceToDepth orders the channels
    otherwise: block offset first, torch's channel first), so no translation: both
    exporters write Reshape/Transpose/Reshape. With TorchScript made to raise, the run names
    SpaceToDepth as not in the graph and exits 2."""
    script = write(tmp_path, "space_to_depth_proof.py", """
        import torch
        import torch.nn.functional as F


        class M(torch.nn.Module):
            def forward(self, x):
                return F.pixel_unshuffle(x, 2)


        x = torch.randn(1, 2, 4, 4, requires_grad=True)
        y = M()(x)
        y.backward(torch.randn_like(y))
        torch.onnx.export(M(), (x,), "pu.onnx", opset_version=17, dynamo=False)
    """)
    code, out = _without_torchscript(tmp_path, script, "text")
    assert "SpaceToDepth" not in {n.op_type for n in onnx.load(tmp_path / "pu.onnx").graph.node}
    assert code == 2
    first = out.out.splitlines()[0]
    assert first.startswith("NOT PROVED AS MEANT") and "SpaceToDepth" in first
    assert "does not have" in first


def test_an_rnn_the_script_calls_but_never_names_is_named_as_decomposed():
    """torch 2.13's dynamo exporter writes nn.RNN as MatMul/Tanh (nn.GRU and nn.LSTM as
    their ONNX ops): a script calling nn.RNN without naming the op anywhere means RNN, so a
    proof of the Tanh in its graph is "not in the graph", never a proof of RNN's tags."""
    import warnings

    import torch

    from torch_prover.pr.intent import TargetStatus, target
    source = textwrap.dedent("""
        import torch
        m = torch.nn.RNN(3, 4)
        x = torch.randn(2, 1, 3, requires_grad=True)
        torch.onnx.export(m, (x,), "model.onnx", dynamo=True)
    """)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = {n.op_type for n in torch.onnx.export(
            torch.nn.RNN(3, 4), (torch.randn(2, 1, 3),), dynamo=True,
            verbose=False).model_proto.graph.node}
    assert "RNN" not in graph and "Tanh" in graph
    found = target(source, Path("proof.py"), "Tanh", graph, (), "graph")
    assert found.status is TargetStatus.ABSENT and found.meant == ("RNN",)
    gru = target(source.replace("RNN", "GRU"), Path("proof.py"), "GRU", {"GRU"}, (), "graph")
    assert gru.status is TargetStatus.MEANT and gru.meant == ("GRU",)
