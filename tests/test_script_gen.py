"""torch-prover script: a catalogue case as a standalone proof script that reproduces prove.

Running a script costs an export and a probe, so this checks a sample chosen to cover each
path of the generator -- a function model, a Module class with parameters, two outputs of
which one is int64, the TorchScript exporter with dynamic axes and no dy at all, a
reference op (custom op + translation table), a case whose seed-0 inputs alone would show
a zero gradient -- against ``prove``. scripts/sweep_scripts.py runs every catalogue case.
"""
from __future__ import annotations

import json

import pytest
import torch

from torch_prover import cli
from torch_prover.case import Case, Custom, Float, Int, Fixed
from torch_prover.cases import all_cases
from torch_prover.pr.gen import _inputs, compare_records, literal, render_case
from torch_prover.pr.source import ScriptGenError

SAMPLE = ["reshape_basic", "conv2d_bias", "topk_values_indices", "shape_dynamic",
          "shrink_default", "min_three_broadcast",
          "loop_while_loop"]   # dynamo rebinds torch.jit.trace; body-dependent, 2 unexercised


def case_named(name: str) -> Case:
    found = [c for c in all_cases() if c.name == name]
    if not found:
        pytest.skip(f"case {name} is not in the catalogue")
    return found[0]


@pytest.mark.parametrize("name", SAMPLE)
def test_script_reproduces_prove(name, proof_of, tmp_path, monkeypatch, capsys):
    case = case_named(name)
    script = tmp_path / f"{name}.py"
    assert cli.main(["script", case.op, "--case", name, "-o", str(script)]) == 0
    text = script.read_text()
    assert "torch_prover" not in text            # standalone: torch, onnx (onnxscript)
    assert f"# torch-prover: op={case.op}" in text
    monkeypatch.chdir(tmp_path)
    code = cli.main(["run", str(script), "--format", "json"])
    out = capsys.readouterr()
    ran = json.loads(out.out)["cases"][0]
    proved = proof_of(name).record()
    assert compare_records(proved, ran) == []
    assert code == (1 if proof_of(name).failures else 0), out.err
    assert (tmp_path / "model.onnx").exists()     # the script writes its model
    assert ".grad =" in out.err                   # and prints the gradients


def test_generated_script_reads_like_method_1():
    text = render_case(case_named("topk_values_indices"))
    for piece in ('"""Differentiability proof for ONNX TopK', "class Model(torch.nn.Module):",
                  "y0, y1 = model(x)", "y0.retain_grad()",
                  "# y1 (int64) carries no gradient, so it gets no dy",
                  "torch.autograd.backward([y0], grad_tensors=[dy0])",
                  'print("x.grad =", x.grad)', 'model, (x,), "model.onnx"',
                  "onnx.checker.check_model(model_proto)"):
        assert piece in text, piece
    compile(text, "topk.py", "exec")


def test_no_output_with_a_gradient_still_calls_backward():
    text = render_case(case_named("shape_dynamic"))
    assert "try:\n    torch.autograd.backward([y0]" in text
    assert "dynamo=False" in text and "dynamic_axes=" in text


def test_reference_case_carries_its_reference():
    text = render_case(case_named("shrink_default"))
    assert "def shrink_reference(input: Tensor" in text
    assert "shrink = as_onnx_op('proof::shrink', shrink_reference)" in text
    assert "shrink.op: shrink_to_onnx," in text
    assert "custom_translation_table=TRANSLATION" in text


def _clip_custom(x, k):
    return torch.clamp(x, -1.0, 1.0) * k


def _with_specials(gen, float_dtype):
    x = torch.randn((2, 3), generator=gen, dtype=torch.float64)
    x[0, 1], x[1, 2] = float("inf"), float("nan")
    return x.to(float_dtype)


def test_inputs_are_the_catalogue_draws():
    """Generator draws where the spec is one, exact literals otherwise (inf, nan, ints)."""
    case = Case("Clip", "clip_custom_inputs", _clip_custom,
                (Float(2, 3, low=-2.0, high=2.0), Int(3, high=5), Custom(_with_specials), Float(4),
                 Fixed([[1, 2]])), ("a", "b", "c", "d", "e"))
    lines = _inputs(case, list(case.names), seed=1)
    assert "torch.randint(0, 5, (3,), generator=gen, dtype=torch.int64)" in lines[2]
    assert 'float("inf")' in lines[3] and 'float("nan")' in lines[3]
    assert lines[4].startswith("d = torch.tensor([")       # drawn after a Custom: a literal
    scope = {"torch": torch}
    exec("\n".join(lines), scope)
    for name, want in zip(case.names, case.build_inputs(1)):
        got = scope[name].detach()
        assert got.dtype == want.dtype and torch.equal(got.nan_to_num(), want.nan_to_num())


def test_literal_round_trips():
    for t in (torch.tensor(2.5, dtype=torch.float64), torch.empty(0, 3),
              torch.tensor([[True, False]]), torch.arange(40, dtype=torch.float32) / 7):
        again = eval(literal(t), {"torch": torch})
        assert again.dtype == t.dtype and again.shape == t.shape and torch.equal(again, t)


def test_unknown_case_is_a_usage_error(capsys):
    assert cli.main(["script", "Reshape", "--case", "nope"]) == 2
    assert "reshape_basic" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["resize_linear_scales_10", "scan8_batch_running_sum"])
def test_a_lowered_reference_case_is_refused_with_the_command_that_proves_it(name):
    """Its node is emitted in torch_prover.next and moved below opset 18 by the prover: a
    plain torch.onnx.export cannot reproduce that."""
    case = case_named(name)
    with pytest.raises(ScriptGenError) as err:
        render_case(case)
    assert "lowered" in str(err.value)
    assert f"torch-prover prove {case.op} --case {name}" in str(err.value)
