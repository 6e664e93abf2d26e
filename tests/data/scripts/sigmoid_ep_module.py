"""Sigmoid exported from an ExportedProgram's module (``ep.module()``), the dynamo exporter
at opset 20."""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.sigmoid(x)


x = torch.randn(2, 5, requires_grad=True)
y = Model()(x)
y.backward(torch.ones_like(y))
ep = torch.export.export(Model(), (x,))
torch.onnx.export(ep.module(), (x,), "sigmoid_ep_module.onnx", opset_version=20, dynamo=True)
