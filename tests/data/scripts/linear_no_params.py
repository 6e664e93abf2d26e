"""nn.Linear with export_params=False (TorchScript, opset 13): the graph's inputs are x and
the module's own weight and bias."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(4, 3)
x = torch.randn(2, 4, requires_grad=True)
y = model(x)
y.backward(torch.ones_like(y))
torch.onnx.export(model, (x,), "linear_no_params.onnx", export_params=False,
                  opset_version=13, dynamo=False)
