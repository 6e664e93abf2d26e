"""GELU on float64 inputs, the dynamo exporter at opset 20 (Gelu-20)."""
import torch
import torch.nn as nn

model = nn.GELU()
x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
y = model(x)
y.backward(torch.ones_like(y))
torch.onnx.export(model, (x,), "gelu64.onnx", opset_version=20, dynamo=True)
