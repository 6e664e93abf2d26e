"""Clip with constant bounds, TorchScript at opset 11 (Clip-11: every tag unknown)."""
import torch
import torch.nn as nn


class ClipModel(nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=-0.5, max=0.5)


torch.manual_seed(0)
x = torch.randn(3, 4, requires_grad=True)
y = ClipModel()(x)
y.backward(torch.ones_like(y))
print("x.grad:", x.grad)
torch.onnx.export(ClipModel(), (x,), "clip11.onnx", opset_version=11, dynamo=False,
                  input_names=["x"], output_names=["y"])
