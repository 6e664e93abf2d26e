"""Softplus in bfloat16, its gradient taken with torch.autograd.grad, the dynamo exporter
(the default) at opset 18."""
import torch
import torch.nn as nn

model = nn.Softplus()
x = torch.randn(3, 4, dtype=torch.bfloat16, requires_grad=True)
y = model(x)
dy = torch.ones_like(y)
(dx,) = torch.autograd.grad(y, x, dy)
print("dx", dx.float().abs().max().item())
torch.onnx.export(model, (x,), "softplus_bf16.onnx", opset_version=18)
