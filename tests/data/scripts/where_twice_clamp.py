"""A two-sided clamp written with two torch.where: the same op (Where) twice in one model,
the dynamo exporter at opset 18."""
import torch


class TwoSidedClamp(torch.nn.Module):
    def forward(self, x, lo, hi):
        y = torch.where(x < lo, lo, x)
        return torch.where(y > hi, hi, y)


torch.manual_seed(0)
x = torch.randn(4, 5, requires_grad=True)
lo = torch.full((4, 5), -0.5, requires_grad=True)
hi = torch.full((4, 5), 0.5, requires_grad=True)
y = TwoSidedClamp()(x, lo, hi)
y.backward(torch.ones_like(y))
torch.onnx.export(TwoSidedClamp(), (x, lo, hi), "clamp.onnx", opset_version=18, dynamo=True)
