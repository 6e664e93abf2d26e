"""One tensor fed to both inputs of Mul (x * x), the dynamo exporter at opset 18."""
import torch
import torch.nn as nn


class Square(nn.Module):
    def forward(self, x):
        return x * x


x = torch.randn(3, 4, requires_grad=True)
y = Square()(x)
y.backward(torch.ones_like(y))
torch.onnx.export(Square(), (x,), "square.onnx", opset_version=18, dynamo=True)
