"""Issue 26: contributor-style proof scripts, each run in all three formats.

The scripts (tests/data/scripts/) are written as a contributor writes a "Method 1" proof:
old opsets with the TorchScript exporter, the dynamo exporter at 18 and 23, an
io.BytesIO, ONNXProgram.save, export_params=False, Dropout in training mode, a float64
GELU, one tensor fed to two inputs, an op inside a small model, an op behind glue. For each, EXPECTED holds
the verdicts worked out beforehand from the schema version in force at the script's opset
(onnx.defs) and the math -- never copied from the tool's output:

- an unknown tag (Clip-11, TopK-10, Dropout-12, RMSNormalization-23) gets ``proposed``:
  differentiable where the output moves smoothly with the input, non-differentiable for an
  int64 / bool parameter (by type);
- a set tag gets ``agree`` where the math says the same (Tanh, Sigmoid, Exp, LogSoftmax,
  Gelu, Mul, HardSwish, Gemm), ``disagree`` where it does not (Clip-13's min and max: Y
  moves with them where X is clipped);
- a random draw's ratio (Dropout in training) says nothing: ``inconclusive``.

Each script runs once (its child process is the slow part, shared by the three formats);
``cli.main(["run", ...])`` then renders it in text, json and markdown, and each must end
with the same exit code, no internal error, and the expected verdicts in its own words.
"""
from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from torch_prover import cli
from torch_prover.pr import runner

SCRIPTS = Path(__file__).resolve().parent / "data" / "scripts"
P, A, D, I = "proposed", "agree", "disagree", "inconclusive"

# script -> (exit code, {(io, index): verdict})
EXPECTED: dict[str, tuple[int, dict[tuple[str, int], str]]] = {
    # Clip-11: every tag unknown; X, min and max all move Y (randn values on both sides
    # of +-0.5), so each is proposed differentiable
    "clip_opset11_torchscript.py": (0, {("input", 0): P, ("input", 1): P, ("input", 2): P,
                                        ("output", 0): P}),
    # Clip-13 tags min and max non-differentiable; dY/dmin = 1 where X < min
    "clip_opset13_tensor_bounds.py": (1, {("input", 0): A, ("input", 1): D, ("input", 2): D,
                                          ("output", 0): A}),
    # TopK-10: unknown tags; K and Indices are int64 (non-differentiable by type)
    "topk_opset10_torchscript.py": (0, {("input", 0): P, ("input", 1): P, ("output", 0): P,
                                        ("output", 1): P}),
    "logsoftmax_dynamo18.py": (0, {("input", 0): A, ("output", 0): A}),
    # RMSNormalization-23 (new in 23): unknown tags; Y = X / rms(X) * scale, smooth in both
    "rmsnorm_dynamo23.py": (0, {("input", 0): P, ("input", 1): P, ("output", 0): P}),
    "tanh_bytesio_torchscript.py": (0, {("input", 0): A, ("output", 0): A}),
    "sigmoid_bytesio_dynamo.py": (0, {("input", 0): A, ("output", 0): A}),
    "exp_program_save.py": (0, {("input", 0): A, ("output", 0): A}),
    # Gemm-13: A, B, C and Y differentiable; Y = X W^T + b is linear in each
    "linear_no_params.py": (0, {("input", 0): A, ("input", 1): A, ("input", 2): A,
                                ("output", 0): A}),
    # Dropout-12: unknown tags; output = data * mask / (1 - p) at a fixed draw (training
    # mode: PyTorch's gradient is mask / (1 - p), nonzero); ratio: a random draw's parameter,
    # nothing measured; training_mode and mask are bool (by type)
    "dropout_training.py": (0, {("input", 0): P, ("input", 1): I, ("input", 2): P,
                                ("output", 0): P, ("output", 1): P}),
    "gelu_float64.py": (0, {("input", 0): A, ("output", 0): A}),
    # Mul(x, x): each input is decided alone by the numeric witness (the shared tensor's
    # gradient is the sum over both), d(AB)/dA = B != 0
    "mul_one_tensor_twice.py": (0, {("input", 0): A, ("input", 1): A, ("output", 0): A}),
    "hardswish_in_model.py": (0, {("input", 0): A, ("output", 0): A}),
    # Tanh-13 of x and y assembled by glue: their gradients reach Tanh unchanged
    "tanh_after_glue.py": (0, {("input", 0): A, ("output", 0): A}),
    # issue 34: the ways torch 2.x steers people to write a proof.
    # torch.export.export (a dynamic batch dimension) then torch.onnx.export of the
    # ExportedProgram: Tanh-13's input and output are differentiable, tanh' = 1 - tanh^2 > 0
    "tanh_exported_program_dynamic.py": (0, {("input", 0): A, ("output", 0): A}),
    # ep.module() exported: Sigmoid-13, sigmoid' = s (1 - s) > 0
    "sigmoid_ep_module.py": (0, {("input", 0): A, ("output", 0): A}),
    # two torch.where (a two-sided clamp): two Where-16 nodes, each proved; on both the
    # condition is bool (non-differentiable by type), X and Y each pass through where
    # selected (derivative 1), the output is differentiable: the same verdicts on each node
    "where_twice_clamp.py": (0, {("input", 0): A, ("input", 1): A, ("input", 2): A,
                                 ("output", 0): A}),
    # Softplus-1 in bfloat16 (torch.autograd.grad): X and Y differentiable, softplus' =
    # sigmoid > 0; the dynamo exporter's Where(x > threshold, x, ...) guard around the node
    "softplus_bfloat16_grad.py": (0, {("input", 0): A, ("output", 0): A}),
    # the same in float32: dynamo's F.softplus, the guard around the node
    "softplus_dynamo_float32.py": (0, {("input", 0): A, ("output", 0): A}),
    # RotaryEmbedding-23 (new in 23, every tag unknown) through torch.onnx.ops under
    # torch.onnx.is_in_onnx_export(): X, cos_cache, sin_cache and Y move smoothly (rotations
    # by cos/sin products); position_ids is int64 (non-differentiable by type)
    "rotary_onnx_ops_in_export.py": (0, {("input", 0): P, ("input", 1): P, ("input", 2): P,
                                         ("input", 3): P, ("output", 0): P}),
}


def test_the_corpus_is_every_script():
    assert sorted(EXPECTED) == sorted(p.name for p in SCRIPTS.glob("*.py"))


def _text_verdicts(text: str) -> dict[tuple[str, int], str]:
    """Each parameter row of the text table: its verdict (a column of its own)."""
    found = {}
    for line in text.splitlines():
        m = re.match(r"^(input|output) (\d+)\s", line)
        if m:
            words = set(line.split())
            hit = [v for v in (A, D, P, I) if v in words]
            if len(hit) == 1:
                found[(m[1], int(m[2]))] = hit[0]
    return found


def _markdown_verdicts(md: str) -> dict[tuple[str, int], str]:
    found = {}
    for line in md.splitlines():
        m = re.match(r"^\| (input|output) (\d+) `", line)
        if m:
            cells = [c.strip().strip("*") for c in line.strip("|").split(" | ")]
            found[(m[1], int(m[2]))] = cells[4]
    return found


@pytest.fixture
def run_once(monkeypatch):
    """``run``'s proof made once per script: the three formats render the same proof."""
    made: dict[str, runner.ScriptProof] = {}
    real = runner.prove_script

    def cached(path, **kwargs):
        key = str(Path(path).resolve())
        if key not in made:
            made[key] = real(path, **kwargs)
        return made[key]
    monkeypatch.setattr(runner, "prove_script", cached)
    return made


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_script_in_every_format(name, tmp_path, monkeypatch, capsys, run_once):
    script = tmp_path / name
    shutil.copy(SCRIPTS / name, script)
    monkeypatch.chdir(tmp_path)
    code_want, verdicts = EXPECTED[name]
    outputs, codes = {}, {}
    for fmt in ("json", "text", "markdown"):
        codes[fmt] = cli.main(["run", name, "--format", fmt])
        out = capsys.readouterr()
        assert "internal error" not in out.err, (fmt, out.err)
        outputs[fmt] = out.out
    assert codes == {"json": code_want, "text": code_want, "markdown": code_want}, codes
    doc = json.loads(outputs["json"])
    rec = doc["cases"][0]
    got = {(p["io"], p["index"]): p["verdict"] for p in rec["parameters"]}
    assert got == verdicts, [(p["io"], p["index"], p["verdict"], p["reason"])
                             for p in rec["parameters"]]
    assert _text_verdicts(outputs["text"]) == verdicts, outputs["text"]
    assert f"status: {rec['status']}" in outputs["text"]
    assert _markdown_verdicts(outputs["markdown"]) == verdicts, outputs["markdown"]
    assert f"**Status: {rec['status']}" in outputs["markdown"]
    _particular(name, rec, tmp_path, outputs)


def _graph_ops(where: Path, name: str) -> list[str]:
    import onnx
    return [n.op_type for n in onnx.load(str(where / name), load_external_data=False).graph.node]


def _particular(name: str, rec: dict, where: Path, outputs: dict[str, str]) -> None:
    """What each script is in the corpus for, beyond its verdicts."""
    export = rec["script"]["export"]
    if name in ("tanh_bytesio_torchscript.py", "sigmoid_bytesio_dynamo.py"):
        assert (export["sink"], export["file"]) == ("an io.BytesIO", None)
        assert export["file_sha256"]      # the bytes the script holds, hashed
        assert "io.BytesIO" in outputs["text"] and "io.BytesIO" in outputs["markdown"]
    if name == "exp_program_save.py":
        saved = where / "exp20.onnx"
        assert export["sink"] == "ONNXProgram.save"
        assert export["file"] == str(saved)
        assert export["file_sha256"] == hashlib.sha256(saved.read_bytes()).hexdigest()
        assert "not written to a file" not in outputs["text"]
        assert export["file_sha256"] in outputs["text"]
    if name == "linear_no_params.py":
        assert any("export_params=False made the module's parameters weight, bias graph "
                   "inputs" in c for c in export["evidence_copy"])
        sources = {p["index"]: p["source"] for p in rec["parameters"] if p["io"] == "input"}
        assert sources[1] == "param weight" and sources[2] == "param bias"
    if name == "dropout_training.py":
        assert export["training"] is True
        assert rec["script"]["isolation"]["module_how"].endswith("in training mode")
        assert rec["numeric"]["drawn"] == {"0": "Dropout"}
        assert "no VJP compared" in rec["numeric"]["vjp_skipped"]
        assert rec["numeric"]["forward_ok"] is True
        assert "precision" not in rec["numeric"]      # the draw is not rounding noise
    if name == "gelu_float64.py":
        assert rec["numeric"]["precision"]["computed"] == "float32"
        assert not any("surrogate" in p["reason"] for p in rec["parameters"])
        x = next(p for p in rec["parameters"] if p["io"] == "input")
        assert "computed these float64 values at float32 resolution" in x["reason"]
    if name == "mul_one_tensor_twice.py":
        rules = {p["index"]: p["rule"] for p in rec["parameters"] if p["io"] == "input"}
        assert rules == {0: "numeric witness only", 1: "numeric witness only"}
    if name == "tanh_after_glue.py":   # issue 26 part 6: glue is not a computing op
        for text in (outputs["text"], outputs["markdown"]):
            assert "computes with" not in text
            assert "Transpose, Concat, Slice only move values" in text
        assert {o["op"]: o["moves_values"] for o in rec["script"]["other_ops"]} == {
            "Transpose": True, "Concat": True, "Slice": True}
    if name in ("tanh_exported_program_dynamic.py", "sigmoid_ep_module.py"):
        # the module crossed as the program's own graph, no train() called on it
        assert rec["script"]["isolation"]["module"] == "torch.export"
        assert "ExportedProgram's module" in rec["script"]["isolation"]["module_how"]
    if name == "where_twice_clamp.py":
        nodes = rec["script"]["nodes"]
        where = [i for i, n in enumerate(_graph_ops(where, "clamp.onnx")) if n == "Where"]
        assert nodes["op"] == "Where" and nodes["nodes"] == where and len(where) == 2
        assert all(p["verdict"] is not None and not p["per_node"] for p in nodes["parameters"])
        assert "Where is used by 2 nodes" in outputs["text"]
        assert "numeric check: off" not in outputs["text"]
        assert len(json.loads(outputs["json"])["cases"]) == 2      # one record per node
    if name.startswith("softplus_"):
        guard = [n for n in rec["notes"] if "exporter's guard" in n]
        assert len(guard) == 1 and "selected the bypass" in guard[0], rec["notes"]
        x = next(p for p in rec["parameters"] if p["io"] == "input")
        assert x["rule"] == "numeric witness only"
    if name == "softplus_bfloat16_grad.py":
        assert any("float32 copy of the bfloat16 model" in n for n in rec["notes"])
    if name == "rotary_onnx_ops_in_export.py":
        # one line saying where the node came from, not advice to keep ops the eager
        # branch computes; the autograd witness is the module's computation, not onnx.X's
        (line,) = rec["script"]["missing_ops"]
        assert "written by torch.onnx.ops" in line and "to keep it" not in line
        assert "pytorch operator onnx." not in outputs["text"]
    if name == "hardswish_in_model.py":
        assert rec["op"] == "HardSwish"
        assert "--op Gemm" in outputs["text"]
