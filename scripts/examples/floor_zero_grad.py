# Floor is piecewise constant: PyTorch's gradient is zero everywhere, which is ONNX's
# convention for "non-differentiable". Old habits on show: retain_grad() inside forward,
# the exporter's optional arguments passed positionally as torch 1.x allowed
# (export_params, verbose), and opset 13.

import torch
import torch.nn as nn


class FloorModel(nn.Module):
    def forward(self, x):
        y = torch.floor(x)
        y.retain_grad()
        return y


model = FloorModel()
x = torch.tensor([[0.5, -1.5, 2.25], [3.75, -0.25, 1.5]], requires_grad=True)
y = model(x)
torch.autograd.backward([y], grad_tensors=[torch.ones_like(y)])
print(x.grad)   # all zeros
print(y.grad)

torch.onnx.export(model, (x,), "floor.onnx", True, False, opset_version=13)
