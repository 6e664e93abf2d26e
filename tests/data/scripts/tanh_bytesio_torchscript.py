"""Tanh exported by the TorchScript exporter into an io.BytesIO: no file at all."""
import io

import torch
import torch.nn as nn

model = nn.Tanh()
x = torch.randn(3, 4, requires_grad=True)
y = model(x)
y.backward(torch.ones_like(y))
buffer = io.BytesIO()
torch.onnx.export(model, (x,), buffer, opset_version=13, dynamo=False)
print("exported", len(buffer.getvalue()) > 0)
