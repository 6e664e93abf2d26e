"""Tanh through torch.export first, with a dynamic batch dimension, then torch.onnx.export
of the ExportedProgram (the way torch 2.x's docs steer people to write it)."""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.tanh(x)


x = torch.randn(3, 4, requires_grad=True)
y = Model()(x)
y.backward(torch.ones_like(y))
batch = torch.export.Dim("batch")
ep = torch.export.export(Model(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: batch}})
torch.onnx.export(ep, (x,), "tanh_ep.onnx", opset_version=18)
