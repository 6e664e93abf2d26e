"""LogSoftmax with the dynamo exporter at opset 18 (LogSoftmax-13 in force)."""
import torch
import torch.nn as nn

model = nn.LogSoftmax(dim=-1)
x = torch.randn(2, 5, requires_grad=True)
y = model(x)
y.backward(torch.randn_like(y))
torch.onnx.export(model, (x,), "logsoftmax18.onnx", opset_version=18, dynamo=True)
