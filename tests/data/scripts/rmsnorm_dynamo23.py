"""nn.RMSNorm with the dynamo exporter at opset 23: RMSNormalization-23, new in 23, every
tag unknown."""
import torch
import torch.nn as nn

model = nn.RMSNorm(6, eps=1e-5)
with torch.no_grad():
    model.weight.copy_(torch.linspace(0.5, 1.5, 6))
x = torch.randn(3, 6, requires_grad=True)
y = model(x)
y.backward(torch.randn_like(y))
torch.onnx.export(model, (x,), "rmsnorm23.onnx", opset_version=23, dynamo=True)
