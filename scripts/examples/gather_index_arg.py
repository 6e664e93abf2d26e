# Gather with a forward that also takes a Python int (the axis). The int is part of the
# export arguments, so it becomes a constant of the graph; the int64 indices stay a graph
# input. Expected: data differentiable, indices non-differentiable, output differentiable.

import torch


class Pick(torch.nn.Module):
    def forward(self, data, indices, axis):
        return torch.index_select(data, axis, indices)


model = Pick()
data = torch.randn(5, 3, requires_grad=True)
indices = torch.tensor([4, 0, 2])
out = model(data, indices, 0)
out.backward(torch.randn(3, 3))
print("data.grad:", data.grad)    # rows 4, 0, 2 carry dy; rows 1 and 3 stay zero

torch.onnx.export(model, (data, indices, 0), "gather.onnx",
                  input_names=["data", "indices"], output_names=["picked"])
