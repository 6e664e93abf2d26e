"""Conv and ConvTranspose: module parameters (weight, bias) become initializers and still
carry gradients; the functional variants take the weight as a graph input.

DeformConv: torchvision.ops.deform_conv2d is its PyTorch home, and torchvision is not
installable here, so a reference written from the ONNX spec (and the onnx reference
evaluator, which samples with GridSample(align_corners=1, zeros padding)) binds to it.
"""
from typing import Optional

import torch
import torch.nn.functional as F

from ..case import Case, Custom, Float
from .reference import reference_op


class Conv2dBias(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 3, kernel_size=3, bias=True)
        # torch's default init draws in float32, and the last bit of its uniform draw
        # depends on the CPU kernel (FMA or not): draw in float64 on [0, 1) and scale in
        # separate steps, which round the same on every machine (machine-independent
        # evidence, docs/design.md)
        gen = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for p in self.conv.parameters():
                p.copy_((torch.rand(p.shape, generator=gen, dtype=torch.float64) * 2 - 1) / 4)

    def forward(self, x):
        return self.conv(x)


def conv_no_bias(x, w):
    return F.conv2d(x, w, stride=2, padding=1)


def conv_grouped_bias(x, w, b):
    return F.conv1d(x, w, b, groups=2, dilation=2)


class ConvTranspose2dBias(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.deconv = torch.nn.ConvTranspose2d(2, 3, kernel_size=3, stride=2, bias=True)
        # torch's default init draws in float32, and the last bit of its uniform draw
        # depends on the CPU kernel (FMA or not): draw in float64 on [0, 1) and scale in
        # separate steps, which round the same on every machine (machine-independent
        # evidence, docs/design.md)
        gen = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for p in self.deconv.parameters():
                p.copy_((torch.rand(p.shape, generator=gen, dtype=torch.float64) * 2 - 1) / 4)

    def forward(self, x):
        return self.deconv(x)


def convtranspose_no_bias(x, w):
    return F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1)


CASES = [
    Case("Conv", "conv2d_bias", Conv2dBias, (Float(1, 2, 5, 5),), ("x",)),
    Case("Conv", "conv_no_bias", conv_no_bias, (Float(1, 2, 5, 5), Float(3, 2, 3, 3)), ("x", "w")),
    Case("Conv", "conv_grouped_bias", conv_grouped_bias, (Float(1, 4, 7), Float(4, 2, 2), Float(4)),
         ("x", "w", "b")),
    Case("ConvTranspose", "convtranspose_bias", ConvTranspose2dBias, (Float(1, 2, 3, 3),), ("x",)),
    Case("ConvTranspose", "convtranspose_no_bias", convtranspose_no_bias,
         (Float(1, 2, 3, 3), Float(2, 3, 3, 3)), ("x", "w")),
]


# --------------------------------------------------------------------------- DeformConv

@reference_op("DeformConv")
def deform_conv(X: torch.Tensor, W: torch.Tensor, offset: torch.Tensor,
                B: Optional[torch.Tensor], mask: Optional[torch.Tensor],
                kernel_shape: list[int], pads: list[int], strides: list[int],
                dilations: list[int]) -> torch.Tensor:
    """2-D DeformConv, group = offset_group = 1: bilinear samples of X at the kernel taps
    moved by offset ([dh, dw] per tap), times mask, contracted with W, plus B."""
    n, _, ih, iw = X.shape
    kh, kw = kernel_shape
    oh, ow = offset.shape[-2:]
    off = offset.reshape(n, kh, kw, 2, oh, ow)
    tap_h = (torch.arange(kh, dtype=X.dtype) * dilations[0]).reshape(1, kh, 1, 1, 1)
    tap_w = (torch.arange(kw, dtype=X.dtype) * dilations[1]).reshape(1, 1, kw, 1, 1)
    out_h = (torch.arange(oh, dtype=X.dtype) * strides[0] - pads[0]).reshape(1, 1, 1, oh, 1)
    out_w = (torch.arange(ow, dtype=X.dtype) * strides[1] - pads[1]).reshape(1, 1, 1, 1, ow)
    pos_h = tap_h + out_h + off[:, :, :, 0]              # (n, kh, kw, oh, ow)
    pos_w = tap_w + out_w + off[:, :, :, 1]
    grid = torch.stack([pos_w / (iw - 1) * 2 - 1, pos_h / (ih - 1) * 2 - 1], dim=-1)
    samples = F.grid_sample(X, grid.reshape(n, kh * kw * oh, ow, 2), mode="bilinear",
                             padding_mode="zeros", align_corners=True)
    samples = samples.reshape(n, -1, kh, kw, oh, ow)
    if mask is not None:
        samples = samples * mask.reshape(n, 1, kh, kw, oh, ow)
    y = torch.einsum("nckhij,ockh->noij", samples, W)
    return y if B is None else y + B.reshape(1, -1, 1, 1)


def _offsets(*shape: int, bound: float = 0.4) -> Custom:
    """Offsets in (-bound, bound): samples stay within one pixel of the map."""
    return Custom(lambda gen, dt: ((torch.rand(shape, generator=gen, dtype=torch.float64) * 2
                                    - 1) * bound).to(dt))


def deformconv_mask_bias(x, w, offset, b, mask):
    return deform_conv(x, w, offset, b, mask, [2, 2], [0, 0, 0, 0], [1, 1], [1, 1])


def deformconv_plain(x, w, offset):
    return deform_conv(x, w, offset, None, None, [2, 2], [1, 1, 1, 1], [2, 2], [1, 1])


CASES += [
    Case("DeformConv", "deformconv_mask_bias", deformconv_mask_bias,
         (Float(1, 2, 4, 4), Float(3, 2, 2, 2), _offsets(1, 8, 3, 3), Float(3),
          Float(1, 4, 3, 3, low=0.2, high=1.0)),
         ("x", "w", "offset", "b", "mask"), kind="reference",
         translation=deform_conv.translation,
         notes="reference: torchvision.ops.deform_conv2d is not installable here; continuous "
               "random offsets keep taps (almost surely) off the integer grid, where bilinear "
               "weights have kinks"),
    Case("DeformConv", "deformconv_plain", deformconv_plain,
         (Float(1, 2, 4, 4), Float(3, 2, 2, 2), _offsets(1, 8, 3, 3)), ("x", "w", "offset"),
         kind="reference", translation=deform_conv.translation,
         notes="pads 1, strides 2; taps in the padding sample zeros (ONNX: out-of-bounds "
               "values are 0)"),
]
