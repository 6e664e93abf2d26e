# A proof script in the TorchScript-era style: nn.Linear (its weight and bias are module
# parameters, so they become initializers of the exported graph), Tensor.backward with a
# dy, export to an *open file* at *opset 11* with input/output names. Run it through
# `torch-prover run`: ONNX Gemm's A, B and C are differentiable, and so is Y.

import torch
import torch.nn as nn


class MyModel(nn.Module):
    def __init__(self):
        super(MyModel, self).__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)


torch.manual_seed(0)
model = MyModel()

x = torch.randn(2, 4, requires_grad=True)
y = model(x)
dy = torch.ones(2, 3)
y.backward(dy)

print("x.grad", x.grad)
print("fc.weight.grad", model.fc.weight.grad)
print("fc.bias.grad", model.fc.bias.grad)

with open("gemm.onnx", "wb") as f:
    torch.onnx.export(model, x, f, opset_version=11,
                      input_names=["X"], output_names=["Y"])
