"""torch-prover run: classic proof scripts, run unmodified, proved as cases.

The example scripts in scripts/examples/ are written in other people's styles (open files,
opset 11, Tensor.backward, autograd.grad, positional export arguments, a Python int among
the export arguments); each must give the verdicts its header promises. Scripts that give
nothing to prove must exit 2 with one line, and still show what they printed.
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import onnx
import pytest
import torch

from torch_prover import cli
from torch_prover.pr.case import infer_op
from torch_prover.pr.directives import directives
from torch_prover.pr.runner import run_script

EXAMPLES = Path(__file__).resolve().parent.parent / "scripts" / "examples"
SHARED = Path("/work/shared/examples/reshape_method1.py")
OPERATORS_MD = Path("/work/shared/onnx-docs/Operators.md")


def run(tmp_path, monkeypatch, capsys, script, *extra, fmt="json"):
    """cli.main(["run", ...]) from tmp_path (where the script writes its model)."""
    monkeypatch.chdir(tmp_path)
    code = cli.main(["run", str(script), "--format", fmt, *extra])
    out = capsys.readouterr()
    rec = json.loads(out.out)["cases"][0] if fmt == "json" and code in (0, 1) else None
    return code, rec, out


def params(rec):
    return {(p["io"], p["index"]): p for p in rec["parameters"]}


def write(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- the ONNX example
@pytest.mark.filterwarnings(r"ignore:Using backward\(\) with create_graph=True")
def test_reshape_method1_unmodified(tmp_path, monkeypatch, capsys):
    """ONNX's own Method 1 example: its export to an open file fails on current PyTorch."""
    if SHARED.exists():
        assert SHARED.read_text() == (EXAMPLES / "reshape_method1.py").read_text()
    code, rec, out = run(tmp_path, monkeypatch, capsys, EXAMPLES / "reshape_method1.py",
                         "--out", str(tmp_path / "models"))
    assert code == 0, out.err
    p = params(rec)
    assert [(p[k]["name"], p[k]["evidence"], p[k]["verdict"]) for k in sorted(p)] == [
        ("data", "grad", "agree"), ("shape", "constant", "agree"), ("reshaped", "grad", "agree")]
    assert p["input", 0]["source"] == "x"
    model_file = tmp_path / "model.onnx"          # where the script asked, relative to cwd
    assert [n.op_type for n in onnx.load(model_file).graph.node] == ["Reshape"]
    script = rec["script"]
    assert script["export"]["file"] == str(model_file)
    assert any("open file" in n for n in script["runner_notes"])
    assert script["gradients"] == {"x": "nonzero (max |grad| 4)"}
    assert "tensor([[1., 2.]," in out.err          # the script's own prints, still shown
    assert (tmp_path / "models" / "Reshape" / "reshape_method1" / "proof.json").exists()


TANH_VERBOSE = """
    import torch
    class M(torch.nn.Module):
        def forward(self, x):
            return torch.tanh(x)
    x = torch.tensor([[0.5, -1.0, 2.0]], requires_grad=True)
    M()(x).backward(torch.ones(1, 3))
    torch.onnx.export(M(), (x,), "model.onnx", dynamo=False, opset_version=13, verbose=True)
"""


@pytest.mark.filterwarnings(r"ignore:Using backward\(\) with create_graph=True")
@pytest.mark.parametrize("name, source, node", [
    ("reshape_method1.py", None, "Reshape"),   # dynamo: pkg.torch.onnx.stack_trace
    ("tanh_verbose.py", TANH_VERBOSE, "Tanh")])  # TorchScript verbose=True: node doc_string
def test_evidence_is_the_same_wherever_the_script_sits(tmp_path, monkeypatch, capsys, name,
                                                       source, node):
    """Exporters write each node's Python stack trace, with the script's absolute path,
    into the model: a proof made in another checkout (CI's) would hash differently. The
    evidence copy drops it, so the bytes are the same from any directory."""
    models = []
    for where in ("a", "somewhere/much/deeper/b"):
        home = tmp_path / where
        home.mkdir(parents=True)
        script = home / name
        if source is None:
            script.write_bytes((EXAMPLES / name).read_bytes())
        else:
            script.write_text(textwrap.dedent(source), encoding="utf-8")
        code, _, out = run(home, monkeypatch, capsys, script, "--out", str(home / "models"))
        assert code == 0, out.err
        assert str(home).encode() in (home / "model.onnx").read_bytes()  # the script's own file
        models.append((home / "models" / node / name[:-3] / "model.onnx").read_bytes())
    assert models[0] == models[1]
    assert name.encode() not in models[0]


def test_text_and_markdown_reports(tmp_path, monkeypatch, capsys):
    code, _, out = run(tmp_path, monkeypatch, capsys, EXAMPLES / "floor_zero_grad.py",
                       fmt="text")
    assert code == 0
    assert out.out.index("tensor([[0., 0., 0.],") < out.out.index("status: proved")
    assert "TorchScript exporter (dynamo=False) at opset 13" in out.out
    code, _, out = run(tmp_path, monkeypatch, capsys, EXAMPLES / "floor_zero_grad.py",
                       fmt="markdown")
    assert code == 0
    md = out.out
    for piece in ("```python", "class FloorModel(nn.Module):",
                  "| parameter | PyTorch tensor | evidence | tag | verdict |",
                  "| input 0 `X` | `x` | zero-grad | non-differentiable | agree |",
                  "numeric check (onnxruntime)", "evidence copy sha256 `", "torch 2.", "onnxruntime",
                  "How torch-prover ran the script", "script output"):
        assert piece in md, piece


# --------------------------------------------------------------------------- old habits
def test_linear_opset11_open_file_parameters(tmp_path, monkeypatch, capsys):
    """nn.Linear at opset 11 to an open file: TorchScript, parameters as initializers."""
    code, rec, out = run(tmp_path, monkeypatch, capsys, EXAMPLES / "gemm_linear_opset11.py")
    assert code == 0, out.err
    assert (rec["op"], rec["exporter"], rec["opset"]) == ("Gemm", "torchscript", 11)
    p = params(rec)
    assert [p["input", i]["source"] for i in range(3)] == ["X", "param fc.weight", "param fc.bias"]
    assert {p[k]["evidence"] for k in p} == {"grad"}
    # Gemm-11 leaves its tags unknown (13 tags them): the evidence proposes differentiable
    assert {p[k]["verdict"] for k in p} == {"proposed"}
    assert onnx.load(tmp_path / "gemm.onnx").graph.node[0].op_type == "Gemm"
    assert rec["script"]["backward"][0]["api"] == "Tensor.backward"


def test_two_outputs_one_dy(tmp_path, monkeypatch, capsys):
    code, rec, out = run(tmp_path, monkeypatch, capsys, EXAMPLES / "topk_partial_dy.py")
    assert code == 0, out.err
    p = params(rec)
    assert [(p[k]["name"], p[k]["evidence"], p[k]["verdict"]) for k in sorted(p)] == [
        ("X", "grad", "agree"), ("K", "constant", "agree"),
        ("Values", "grad", "agree"), ("Indices", "integer", "agree")]
    assert rec["script"]["backward"][0]["targets"] == ["output 0 with a dy"]
    assert rec["script"]["renamed"] == {"values": "y0", "indices": "y1"}


def test_autograd_grad_and_bool_condition(tmp_path, monkeypatch, capsys):
    code, rec, out = run(tmp_path, monkeypatch, capsys, EXAMPLES / "where_autograd_grad.py")
    assert code == 0, out.err
    p = params(rec)
    assert [p["input", i]["evidence"] for i in range(3)] == ["integer", "grad", "grad"]
    assert {p[k]["verdict"] for k in p} == {"agree"}
    assert rec["script"]["backward"][0]["api"] == "torch.autograd.grad"
    assert rec["script"]["gradients"]["a"].startswith("nonzero")


def test_python_int_among_export_arguments(tmp_path, monkeypatch, capsys):
    code, rec, out = run(tmp_path, monkeypatch, capsys, EXAMPLES / "gather_index_arg.py")
    assert code == 0, out.err
    p = params(rec)
    assert (p["input", 0]["source"], p["input", 1]["evidence"]) == ("data", "integer")
    assert {p[k]["verdict"] for k in p} == {"agree"}


# --------------------------------------------------------------------------- nothing to prove
NO_BACKWARD = """\
    import torch
    x = torch.randn(3, requires_grad=True)
    print("forward only:", torch.exp(x).shape)
    torch.onnx.export(torch.nn.ReLU(), (x,), "m.onnx", dynamo=False)
"""
NO_EXPORT = """\
    import torch
    x = torch.randn(3, requires_grad=True)
    torch.exp(x).sum().backward()
    print("grad:", x.grad.shape)
"""
RAISES = """\
    import torch
    print("about to fail")
    y = 1 / 0
"""
TWO_OPS = """\
    import torch
    class M(torch.nn.Module):
        def forward(self, x, y):
            return torch.sigmoid(x) * y
    x, y = torch.randn(2, 3, requires_grad=True), torch.randn(2, 3, requires_grad=True)
    torch.autograd.backward([M()(x, y)], grad_tensors=[torch.ones(2, 3)])
    torch.onnx.export(M(), (x, y), "m.onnx", dynamo=False, input_names=["x", "y"])
"""


TWO_OUTPUTS = """\
    import torch
    class M(torch.nn.Module):
        def forward(self, x, y):
            return torch.sigmoid(x), torch.tanh(y)
    x, y = torch.randn(2, 3, requires_grad=True), torch.randn(2, 3, requires_grad=True)
    torch.autograd.backward(list(M()(x, y)), grad_tensors=[torch.ones(2, 3)] * 2)
    torch.onnx.export(M(), (x, y), "m.onnx", dynamo=False, input_names=["x", "y"])
"""


@pytest.mark.parametrize("body, message, shown", [
    (NO_BACKWARD, "never calls torch.autograd.backward", "forward only: torch.Size([3])"),
    (NO_EXPORT, "never calls torch.onnx.export", "grad: torch.Size([3])"),
    (RAISES, "raised ZeroDivisionError: division by zero (line 3 of script.py)",
     "about to fail"),
    (TWO_OUTPUTS, "cannot tell which op the script proves: the graph computes with Sigmoid, "
                  "Tanh; pass --op (Sigmoid or Tanh)", ""),
], ids=["no-backward", "no-export", "raises", "two-outputs"])
def test_nothing_to_prove_exits_2(tmp_path, monkeypatch, capsys, body, message, shown):
    code, _, out = run(tmp_path, monkeypatch, capsys, write(tmp_path, "script.py", body),
                       fmt="text")
    assert code == 2
    assert message in out.err and len(out.err.strip().splitlines()) == 1, out.err
    assert shown in out.out
    # the instrumentation is gone, whatever the script did
    assert torch.onnx.export.__module__ == "torch.onnx"
    assert torch.autograd.backward.__module__ == "torch.autograd"


def test_op_option_decides_and_is_checked(tmp_path, monkeypatch, capsys):
    script = write(tmp_path, "script.py", TWO_OPS)
    code, rec, out = run(tmp_path, monkeypatch, capsys, script)
    assert (code, rec["op"], rec["script"]["op_from"]) == (0, "Mul", "graph")  # the output's
    assert rec["script"]["other_ops"] == [{"op": "Sigmoid", "node": 0, "moves_values": False}]
    code, rec, out = run(tmp_path, monkeypatch, capsys, script, "--op", "mul")
    assert code == 0, out.err
    p = params(rec)
    assert (p["input", 0]["source"], p["input", 0]["evidence"]) == ("x via Sigmoid", "grad")
    assert rec["script"]["op_from"] == "--op"
    code, _, out = run(tmp_path, monkeypatch, capsys, script, "--op", "Conv")
    assert code == 2 and "has no Conv node (it has: Mul, Sigmoid)" in out.err


def test_script_directive_names_the_op(tmp_path, monkeypatch, capsys):
    script = write(tmp_path, "script.py", TWO_OPS + "    # torch-prover: op=Sigmoid\n")
    code, rec, _ = run(tmp_path, monkeypatch, capsys, script)
    assert (rec["op"], rec["script"]["op_from"]) == ("Sigmoid", "script directive")
    # Sigmoid in context: x reaches it directly (both witnesses); its output reaches the
    # script's output through Mul, so only the numeric witness speaks for Y; y, which
    # reaches the output around Sigmoid, feeds no input of it: nothing is ambiguous
    assert code == 0 and rec["status"] == "proved" and rec["invalid"] is None
    p = params(rec)
    assert (p["input", 0]["rule"], p["output", 0]["rule"]) == ("both witnesses",
                                                              "numeric witness only")
    with pytest.raises(cli.UsageError, match="unknown script directive"):
        directives("# torch-prover: opp=Sigmoid\n")


@pytest.mark.skipif(not OPERATORS_MD.exists(), reason=f"{OPERATORS_MD} not available")
def test_tags_from_operators_md(tmp_path, monkeypatch, capsys):
    """Floor's X tagged differentiable in a PR's Operators.md: the zero gradient disagrees."""
    text = OPERATORS_MD.read_text(encoding="utf-8")
    start = text.index('<a name="Floor"></a>')
    head, tail = text[:start], text[start:]
    flipped = head + tail.replace("<dt><tt>X</tt> (non-differentiable)",
                                  "<dt><tt>X</tt> (differentiable)", 1)
    (tmp_path / "Operators.md").write_text(flipped, encoding="utf-8")
    code, rec, _ = run(tmp_path, monkeypatch, capsys, EXAMPLES / "floor_zero_grad.py",
                       "--tags-from", str(tmp_path / "Operators.md"))
    assert code == 1
    assert params(rec)["input", 0]["verdict"] == "disagree"
    assert "Operators.md" in rec["tags_from"]


# --------------------------------------------------------------------------- pieces
def test_run_script_captures_backward_and_export(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    script = write(tmp_path, "s.py", """\
        import io, torch
        x = torch.randn(4, requires_grad=True)
        y = torch.nn.Tanh()(x)
        y.backward(torch.ones(4))
        buf = io.BytesIO()
        torch.onnx.export(torch.nn.Tanh(), x, buf, opset_version=9)
        print(len(buf.getvalue()) > 0)
    """)
    run_ = run_script(script)
    assert run_.error is None and run_.output == "True\n"
    assert [b.api for b in run_.backward] == ["Tensor.backward"]
    (call,) = run_.exports
    assert (call.exporter, call.target) == ("torchscript", None)
    assert [n.op_type for n in call.model.graph.node] == ["Tanh"]


def _graph(*nodes, inputs=("x",), outputs=("y",)):
    vi = onnx.helper.make_tensor_value_info
    g = onnx.helper.make_graph(
        [onnx.helper.make_node(op, ins, outs) for op, ins, outs in nodes], "g",
        [vi(n, onnx.TensorProto.FLOAT, None) for n in inputs],
        [vi(n, onnx.TensorProto.FLOAT, None) for n in outputs])
    return onnx.helper.make_model(g)


def test_infer_op_skips_glue_and_shape_arithmetic():
    cast = _graph(("Cast", ["x"], ["c"]), ("IsInf", ["c"], ["y"]))
    assert infer_op(cast, {"x"})[0] == "IsInf"
    zeros = _graph(("Shape", ["x"], ["s"]), ("Constant", [], ["one"]),
                   ("Concat", ["s", "one"], ["shape"]), ("ConstantOfShape", ["shape"], ["y"]))
    assert infer_op(zeros, {"x"}) == ("ConstantOfShape", ["Shape", "Concat", "ConstantOfShape"])
    only_glue = _graph(("Constant", [], ["s"]), ("Reshape", ["x", "s"], ["y"]))
    assert infer_op(only_glue, {"x"})[0] == "Reshape"
    two = _graph(("Sigmoid", ["x"], ["s"]), ("Mul", ["s", "z"], ["y"]), inputs=("x", "z"))
    assert infer_op(two, {"x", "z"}) == ("Mul", ["Sigmoid", "Mul"])   # computes the output
    reshaped = _graph(("Sigmoid", ["x"], ["s"]), ("Mul", ["s", "z"], ["m"]),
                      ("Constant", [], ["shape"]), ("Reshape", ["m", "shape"], ["y"]),
                      inputs=("x", "z"))
    assert infer_op(reshaped, {"x", "z"})[0] == "Mul"                   # past glue
    side_by_side = _graph(("Sigmoid", ["x"], ["y"]), ("Tanh", ["z"], ["w"]),
                          inputs=("x", "z"), outputs=("y", "w"))
    assert infer_op(side_by_side, {"x", "z"}) == (None, ["Sigmoid", "Tanh"])


def test_placeholder_export_input_and_export_params_false(tmp_path, monkeypatch, capsys):
    """Two export-tutorial habits: a zeros dummy input (LayerNorm of constant rows is
    degenerate) and export_params=False (a model nothing can run)."""
    script = write(tmp_path, "ln.py", """\
        import torch
        ln = torch.nn.LayerNorm(4)
        x = torch.randn(3, 4, requires_grad=True)
        ln(x).backward(torch.randn(3, 4))
        dummy_input = torch.zeros(3, 4)
        torch.onnx.export(ln, (dummy_input,), "ln.onnx", opset_version=17, export_params=False)
    """)
    code, rec, out = run(tmp_path, monkeypatch, capsys, script)
    assert code == 0, out.err
    notes = " ".join(rec["script"]["runner_notes"])
    assert "placeholder input(s) (input)" in notes
    assert "export_params=True" in rec["script"]["export"]["evidence_copy"][0]
    p = params(rec)
    assert [p["input", i]["evidence"] for i in range(3)] == ["grad"] * 3
    assert rec["script"]["consistency"] == []


def test_an_opset_6_model_is_not_proved_by_a_runtime_of_another_version(tmp_path, monkeypatch,
                                                                      capsys):
    """Issue 28, finding 12: `run`, `prove --opset` and `verify-all --versions` apply one rule
    (engine/versions/runtimes.py). Relu-6 at opset 6: onnxruntime guarantees opsets 7 and above, and
    onnx.reference computes Relu-14 -- so the script's model proves nothing of Relu-6, and
    `prove --opset 6` is refused for the same reason."""
    script = write(tmp_path, "relu6.py", """\
        import torch
        x = torch.randn(3, 4, requires_grad=True)
        m = torch.nn.ReLU()
        y = m(x)
        y.backward(torch.ones_like(y))
        torch.onnx.export(m, (x,), "relu6.onnx", opset_version=6, dynamo=False)
        """)
    code, rec, out = run(tmp_path, monkeypatch, capsys, script)
    assert code == 1, out.err
    assert (rec["opset"], rec["schema_version"], rec["status"]) == (6, 6, "failed")
    (problem,) = rec["fidelity"]["problems"]
    assert problem["kind"] == "no runtime implements the version"
    assert "opsets 7 and above" in problem["detail"] and "Relu-14" in problem["detail"]
    assert {p["verdict"] for p in rec["parameters"]} == {"inconclusive"}
    assert cli.main(["prove", "Relu", "--opset", "6", "--no-write"]) == 2
    assert "below 7 no runtime implements a schema version" in capsys.readouterr().err


SOFTPLUS = '''import torch
class M(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.softplus(x)
x = torch.randn(3, 4, requires_grad=True)
y = M()(x)
y.backward(torch.ones_like(y))
torch.onnx.export(M(), (x,), "softplus.onnx", dynamo=True)
'''


def test_the_op_the_module_calls_is_the_target_not_the_exporters_wrapper(tmp_path, monkeypatch,
                                                                       capsys):
    """The dynamo exporter writes softplus(x) as Where(x > 20, x, Softplus(x)): the graph
    ends with Where, whose X the condition never selects at the script's points (flat: a
    false 'disagree' when Where was the target). The module calls one op by name, softplus,
    whose ai.onnx op is in the graph: that is the target. x reaching the output through
    Where's X branch is the exporter's guard around it, not an ambiguity: the node's own
    witness decides X and Y (issue 34), and the record says whether a probe point took the
    bypass -- never a verdict about Where."""
    code, rec, out = run(tmp_path, monkeypatch, capsys, write(tmp_path, "softplus.py",
                                                                  SOFTPLUS))
    assert rec["op"] == "Softplus", out.err
    assert rec["script"]["op_from"] == "the module's ATen op"
    assert rec["script"]["op_inferred"] == "Where"
    assert all(p["verdict"] != "disagree" for p in rec["parameters"])
    assert rec["invalid"] is None and code == 0
    assert {p["io"]: p["rule"] for p in rec["parameters"]} == {
        "input": "numeric witness only", "output": "numeric witness only"}
    assert any("exporter's guard" in n for n in rec["notes"])
