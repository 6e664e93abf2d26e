"""F.softplus in float32 with the default (dynamo) exporter at opset 18: it writes
Where(x * beta > threshold, x, Softplus(x)), a guard around the target op."""
import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def forward(self, x):
        return F.softplus(x)


torch.manual_seed(0)
x = torch.randn(3, 4, requires_grad=True)
y = Model()(x)
y.backward(torch.ones_like(y))
torch.onnx.export(Model(), (x,), "softplus.onnx", opset_version=18)
