"""A reference op's module crosses to the prover without TorchScript (pr/module.py, step 3).

``torch-prover script`` writes a reference op as a custom op while exporting and its
differentiable reference otherwise (``as_onnx_op``). ``torch.export`` of such a module holds
the custom op, which the prover's process does not have; ``torch.jit.trace`` ran the
reference instead. With TorchScript made to raise (issue 41: 80 catalogue scripts lost
their autograd probe so), the module is exported again with ``torch.compiler.is_exporting()``
False. The expectation is PyTorch's own autograd of the reference function, called directly.
"""
from __future__ import annotations

import pytest
import torch

from torch_prover.pr.module import load_module, param_table, save_module
from torch_prover.pr.wire import ModuleFormat


def _reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.maximum(a, b) * torch.tanh(b)


def _op():
    if not hasattr(torch.ops.i41test, "ref"):
        torch.library.custom_op("i41test::ref", lambda a, b: _reference(a, b).detach().clone(),
                                mutates_args=(), schema="(Tensor a, Tensor b) -> Tensor"
                                ).register_fake(lambda a, b: torch.empty_like(a))
    return torch.ops.i41test.ref.default


class Model(torch.nn.Module):
    def forward(self, a, b):
        if torch.compiler.is_exporting():       # as the generated scripts' as_onnx_op
            return _op()(a, b)
        return _reference(a, b)


def test_a_reference_op_module_is_exported_with_its_reference_when_torchscript_raises(
        tmp_path, monkeypatch):
    def gone(*args, **kwargs):
        raise RuntimeError("TorchScript removed")
    monkeypatch.setattr(torch.jit, "trace", gone)
    a, b = torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)
    saved = save_module(Model(), [a, b], [True, True], ((a, b), {}), True, tmp_path)
    assert saved.format is ModuleFormat.EXPORTED_PROGRAM, saved.why
    assert "reference ops run as their references" in saved.how
    assert "i41test.ref" in saved.why and "TorchScript" in saved.why
    assert torch.compiler.is_exporting() is False
    loaded = load_module(tmp_path, saved, param_table(Model()))
    x, y = a.clone().requires_grad_(), b.clone().requires_grad_()
    dy = torch.randn(3, 4, dtype=torch.float64)
    torch.autograd.backward(loaded(x, y), dy)
    u, v = a.clone().requires_grad_(), b.clone().requires_grad_()
    torch.autograd.backward(_reference(u, v), dy)
    torch.testing.assert_close((x.grad, y.grad), (u.grad, v.grad))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")    # torch.jit.save's, as in a run
def test_with_torchscript_the_module_is_traced_as_before(tmp_path):
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    saved = save_module(Model(), [a, b], [True, True], ((a, b), {}), True, tmp_path)
    assert saved.format is ModuleFormat.TORCHSCRIPT and "i41test.ref" in saved.why


class FakeQuant(torch.nn.Module):
    def forward(self, x):
        import torch.ao.quantization.fx._decomposed  # noqa: F401 (registers the ops)
        q = torch.ops.quantized_decomposed.quantize_per_tensor(x, 0.1, 3, 0, 255, torch.uint8)
        return torch.ops.quantized_decomposed.dequantize_per_tensor(q, 0.1, 3, 0, 255,
                                                                    torch.uint8)


def test_torchs_own_fake_quantization_ops_cross_as_a_graph(tmp_path, monkeypatch):
    """quantized_decomposed ops are torch's, not the script's: the prover's process has
    them (the loader imports the module registering them), so no TorchScript is needed."""
    monkeypatch.setattr(torch.jit, "trace", lambda *a, **k: (_ for _ in ()).throw(
        RuntimeError("TorchScript removed")))
    x = torch.randn(3, 4)
    saved = save_module(FakeQuant(), [x], [False], ((x,), {}), True, tmp_path)
    assert saved.format is ModuleFormat.EXPORTED_PROGRAM and not saved.why, saved.why
    loaded = load_module(tmp_path, saved, param_table(FakeQuant()))
    torch.testing.assert_close(loaded(x), FakeQuant()(x), rtol=0, atol=0)
