"""HardSwish inside a small model (Linear -> HardSwish), the dynamo exporter at opset 18."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 5), nn.Hardswish())
x = torch.randn(3, 4, requires_grad=True)
y = model(x)
y.backward(torch.ones_like(y))
torch.onnx.export(model, (x,), "mlp.onnx", opset_version=18, dynamo=True)
