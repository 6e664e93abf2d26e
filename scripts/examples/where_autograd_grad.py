# Where, proved with torch.autograd.grad instead of backward (the gradients are returned,
# not accumulated in .grad). The condition is a bool tensor: it cannot carry a gradient.
# Expected: condition non-differentiable, X and Y differentiable, output differentiable.

import torch


class Select(torch.nn.Module):
    def forward(self, condition, a, b):
        return torch.where(condition, a, b)


condition = torch.tensor([[True, False, True], [False, False, True]])
a = torch.randn(2, 3, requires_grad=True)
b = torch.randn(2, 3, requires_grad=True)
out = Select()(condition, a, b)
dy = torch.randn(2, 3)
grad_a, grad_b = torch.autograd.grad([out], [a, b], grad_outputs=[dy])
print("grad a:", grad_a)   # dy where condition is True
print("grad b:", grad_b)   # dy where condition is False

torch.onnx.export(Select(), (condition, a, b), "where.onnx", dynamo=True)
