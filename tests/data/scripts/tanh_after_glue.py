"""Tanh of values moved by glue (Transpose, Concat, Slice) from two tensors, TorchScript at
opset 13: the glue only carries x and y to Tanh."""
import torch
import torch.nn as nn


class GlueThenTanh(nn.Module):
    def forward(self, x, y):
        z = torch.cat([x.t(), y], dim=0)[1:, :]
        return torch.tanh(z)


x = torch.randn(3, 4, requires_grad=True)
y = torch.randn(2, 3, requires_grad=True)
out = GlueThenTanh()(x, y)
out.backward(torch.ones_like(out))
torch.onnx.export(GlueThenTanh(), (x, y), "glue.onnx", opset_version=13, dynamo=False)
