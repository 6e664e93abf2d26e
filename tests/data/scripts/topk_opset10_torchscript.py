"""TopK, TorchScript at opset 10 (TopK-10: every tag unknown); only Values gets a dy."""
import torch
import torch.nn as nn


class TopKModel(nn.Module):
    def forward(self, x):
        return torch.topk(x, 2, dim=1)


torch.manual_seed(0)
x = torch.randn(3, 5, requires_grad=True)
values, indices = TopKModel()(x)
values.backward(torch.ones_like(values))
torch.onnx.export(TopKModel(), (x,), "topk10.onnx", opset_version=10, dynamo=False)
