"""RotaryEmbedding-23 through torch.onnx.ops when exporting, eager reference otherwise."""
import torch


def rope_reference(x, cos, sin):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Rope(torch.nn.Module):
    def forward(self, x, cos, sin, pos):
        if torch.onnx.is_in_onnx_export():
            return torch.onnx.ops.rotary_embedding(x, cos, sin, pos)
        c, s = cos[pos], sin[pos]
        return rope_reference(x, c, s)


torch.manual_seed(0)
x = torch.randn(1, 2, 3, 8, requires_grad=True)   # (batch, heads, seq, head_size)
cos = torch.randn(3, 4, requires_grad=True)
sin = torch.randn(3, 4, requires_grad=True)
pos = torch.arange(3).unsqueeze(0)
y = Rope()(x, cos, sin, pos)
y.backward(torch.ones_like(y))
torch.onnx.export(Rope(), (x, cos, sin, pos), "rope23.onnx", opset_version=23, dynamo=True)
