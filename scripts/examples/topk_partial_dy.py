# TopK has two outputs: Values (float) and Indices (int64). Only Values can take a dy, so
# the backward pass gets one dy for two outputs. The export names both outputs and goes to
# a path with the default (dynamo) exporter.
# Expected: X differentiable, K non-differentiable (an int64 constant), Values
# differentiable, Indices non-differentiable.

import torch


class TopK(torch.nn.Module):
    def forward(self, x):
        return torch.topk(x, k=2, dim=-1)


model = TopK()
x = torch.tensor([[0.3, -1.2, 2.5, 0.7],
                  [1.1, 0.4, -0.8, 1.9]], requires_grad=True)
values, indices = model(x)
dy = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
torch.autograd.backward([values], grad_tensors=[dy])

print("x.grad:", x.grad)       # nonzero where the top-2 values came from
print("indices:", indices)     # int64: no gradient can flow through it

torch.onnx.export(model, (x,), "topk.onnx", input_names=["x"],
                  output_names=["values", "indices"])
