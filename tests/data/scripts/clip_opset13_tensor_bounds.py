"""Clip with tensor bounds, TorchScript at opset 13 (Clip-13 tags min and max
non-differentiable, though Y moves with them where X is clipped)."""
import torch
import torch.nn as nn


class ClipModel(nn.Module):
    def forward(self, x, lo, hi):
        return torch.clamp(x, lo, hi)


torch.manual_seed(0)
x = torch.randn(3, 4, requires_grad=True)
lo = torch.tensor(-0.5, requires_grad=True)
hi = torch.tensor(0.5, requires_grad=True)
y = ClipModel()(x, lo, hi)
y.backward(torch.ones_like(y))
torch.onnx.export(ClipModel(), (x, lo, hi), "clip13.onnx", opset_version=13, dynamo=False)
