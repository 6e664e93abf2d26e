"""The dynamo exporter's ONNXProgram, saved by the script with ONNXProgram.save."""
import torch
import torch.nn as nn


class ExpModel(nn.Module):
    def forward(self, x):
        return torch.exp(x)


x = torch.randn(3, 4, requires_grad=True)
y = ExpModel()(x)
y.backward(torch.ones_like(y))
onnx_program = torch.onnx.export(ExpModel(), (x,), opset_version=20, dynamo=True)
onnx_program.save("exp20.onnx")
