"""Sigmoid exported by the dynamo exporter into an io.BytesIO."""
import io

import torch
import torch.nn as nn

model = nn.Sigmoid()
x = torch.randn(3, 4, requires_grad=True)
y = model(x)
y.backward(torch.ones_like(y))
buffer = io.BytesIO()
torch.onnx.export(model, (x,), buffer, opset_version=18, dynamo=True)
