"""Sampling and rearrangement: GridSample, AffineGrid, Resize, Upsample, Col2Im, DepthToSpace.

GridSample's grid and AffineGrid's theta are tagged non-differentiable, yet the bilinear
sampler is piecewise linear in the sample position and the affine grid is linear in theta:
PyTorch differentiates both, and ONNX finite differences agree. Grid points are continuous
uniforms in (-0.9, 0.9): almost surely no sample sits on a pixel boundary (a kink).

Resize's roi is read only by coordinate_transformation_mode=tf_crop_and_resize, which
F.interpolate has no mode for: ``resize_crop_roi`` is a reference case.
"""
from typing import Optional

import torch
import torch.nn.functional as F

from ..case import Case, Expect, Float, Fixed
from ..conventions import Applies, Convention
from .reference import reference_op


def gridsample_bilinear(x, grid):
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def gridsample_bicubic_border(x, grid):
    return F.grid_sample(x, grid, mode="bicubic", padding_mode="border", align_corners=True)


def affinegrid_2d(theta):
    return F.affine_grid(theta, [1, 1, 3, 4], align_corners=False)


def resize_bilinear_scale(x):
    return F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)


def resize_bicubic_size(x):
    return F.interpolate(x, size=(5, 7), mode="bicubic", align_corners=True)


def resize_nearest_size(x):
    return F.interpolate(x, size=(4, 6), mode="nearest")


def upsample_nearest(x):
    return F.interpolate(x, scale_factor=2.0, mode="nearest")


def _crop_linear_1d(x: torch.Tensor, dim: int, start: torch.Tensor, end: torch.Tensor,
                    size: int) -> torch.Tensor:
    """Linear resampling of ``x`` along ``dim`` at tf_crop_and_resize coordinates
    start*(L-1) + i*(end-start)*(L-1)/(size-1); outside [0, L-1]: 0 (extrapolation_value)."""
    n = x.shape[dim]
    i = torch.arange(size, dtype=x.dtype)
    pos = start * (n - 1) + i * (end - start) * (n - 1) / (size - 1)
    lo = pos.detach().floor().clamp(0, n - 1)
    w = pos - lo
    shape = [1] * x.dim()
    shape[dim] = size
    lo_i = lo.long()
    x0 = x.index_select(dim, lo_i)
    x1 = x.index_select(dim, (lo_i + 1).clamp(max=n - 1))
    inside = ((pos >= 0) & (pos <= n - 1)).reshape(shape)
    y = x0 + w.reshape(shape) * (x1 - x0)
    return torch.where(inside, y, torch.zeros_like(y))


@reference_op("Resize")
def resize_crop(X: torch.Tensor, roi: torch.Tensor, scales: Optional[torch.Tensor],
                sizes: list[int], axes: list[int], coordinate_transformation_mode: str,
                mode: str) -> torch.Tensor:
    """Resize with mode=linear, coordinate_transformation_mode=tf_crop_and_resize and
    extrapolation_value 0, over ``axes``; roi = [starts..., ends...] (normalized), one
    start and one end per axis, as ``axes`` orders them."""
    k = len(axes)
    y = X
    for j, (a, size) in enumerate(zip(axes, sizes)):
        y = _crop_linear_1d(y, a, roi[j], roi[k + j], size)
    return y


def resize_crop_roi(x, roi):
    return resize_crop(x, roi, None, [3, 3], [2, 3], "tf_crop_and_resize", "linear")


def col2im_fold(x):
    return F.fold(x, output_size=(3, 4), kernel_size=2)


def col2im_fold_strided(x):
    return F.fold(x, output_size=(4, 5), kernel_size=(2, 3), stride=(2, 1), padding=(1, 0),
                   dilation=(1, 1))


def depthtospace_pixel_shuffle(x):
    return F.pixel_shuffle(x, 2)


_GRID = Expect("disagree", "grid is tagged non-differentiable, but the sampled value moves "
                           "with the sample position (bilinear/bicubic weights are smooth in "
                           "it between pixel boundaries): PyTorch gives a nonzero gradient "
                           "and ONNX finite differences confirm it")
_THETA = Expect("disagree", "theta is tagged non-differentiable, but the grid is linear in "
                            "theta (grid = base @ theta^T): PyTorch gives a nonzero gradient "
                            "and ONNX finite differences confirm it")
_SCALES = ("F.interpolate takes scale_factor only as a Python float: it exports as a float "
           "constant")
_SCALES_MOVE = ("linear interpolation samples X at (y + 0.5) / scale - 0.5: at a fixed output "
                "size the sampling points, hence Y, move continuously with scales (the Resize "
                "node's own finite differences in the lifted scales are nonzero); with "
                "mode=nearest or align_corners the derivative is zero")
_ROI_MOVES = ("tf_crop_and_resize samples X at start*(L-1) + i*(end-start)*(L-1)/(size-1): at a "
              "fixed output size the linear weights move with roi, dY/dstart = (x1 - x0)*(L-1)"
              "*(1 - i/(size-1)) between the two neighbours x0, x1 (nonzero); the schema tags "
              "roi non-differentiable")
_SCALES_EMPTY = ("sizes sets the output size, so from Resize-11 scales is empty or absent (\"it "
                 "is an error if both are specified\"): perturbing it moves nothing")
_NEAREST_10 = ("; Resize-10 has no sizes, and there this nearest mode copies input pixels: a move "
               "of scales that keeps the output size changes no value (a zero derivative in "
               "nearest mode only, where linear and cubic have one)")
_ROI = ("roi is used only by coordinate_transformation_mode=tf_crop_and_resize, which "
        "F.interpolate has no mode for")

CASES = [
    Case("GridSample", "gridsample_bilinear", gridsample_bilinear,
         (Float(1, 2, 3, 4), Float(1, 2, 3, 2, low=-0.9, high=0.9)), ("x", "grid"),
         expect={"input 1": _GRID}),
    Case("GridSample", "gridsample_bicubic_border", gridsample_bicubic_border,
         (Float(1, 1, 4, 4), Float(1, 3, 2, 2, low=-0.9, high=0.9)), ("x", "grid"),
         expect={"input 1": _GRID}),
    Case("AffineGrid", "affinegrid_2d", affinegrid_2d, (Float(1, 2, 3),), ("theta",),
         exporter="torchscript", expect={"input 0": _THETA},
         notes="the dynamo exporter decomposes affine_grid into MatMul/Reshape; the "
               "TorchScript exporter emits AffineGrid (opset 20)"),
    Case("Resize", "resize_bilinear_scale", resize_bilinear_scale, (Float(1, 2, 2, 3),), ("x",),
         conventions={"input 2": Applies(Convention.SHAPE_SETTING, _SCALES_MOVE)},
         expect={"input 2": Expect("disagree", "the 'shape-setting input' convention has no "
                                   "precedent outside Resize's own tags (the other shape inputs "
                                   "are int64, non-differentiable by type), so the math "
                                   "decides: the Resize node's finite differences in scales are "
                                   "nonzero at a fixed output size; tagged non-differentiable")},
         unexercised={"input 1": _ROI},
         fails_at={10: "Resize-10's linear mode samples at x / scale (asymmetric), "
                       "F.interpolate(bilinear, align_corners=False) at (x + 0.5) / scale - 0.5 "
                       "(half_pixel, from Resize-11): another function"}),
    Case("Resize", "resize_bicubic_size", resize_bicubic_size, (Float(1, 1, 3, 4),), ("x",),
         unexercised={"input 1": _ROI, "input 2": _SCALES_EMPTY},
         fails_at={10: "Resize-10 has neither sizes nor the cubic mode (both from Resize-11)"}),
    Case("Resize", "resize_nearest_size", resize_nearest_size, (Float(1, 1, 2, 3),), ("x",),
         unexercised={"input 1": _ROI, "input 2": _SCALES_EMPTY + _NEAREST_10}),
    Case("Resize", "resize_crop_roi", resize_crop_roi,
         (Float(1, 2, 4, 4), Fixed([0.1, 0.2, 0.8, 0.9])), ("x", "roi"), kind="reference",
         translation=resize_crop.translation,
         expect={"input 1": Expect("disagree", _ROI_MOVES)},
         fails_at={10: "Resize-10 has no roi, sizes or tf_crop_and_resize (from Resize-11)"},
         notes="reference: F.interpolate has no tf_crop_and_resize mode. roi (axes 2, 3) is "
               "chosen so that every sample position (0.3, 1.35, 2.4 and 0.6, 1.65, 2.7 on a "
               "4-pixel axis) lies strictly between pixels and inside the image: no kink "
               "near the point; sizes [3, 3] keep the output shape fixed while roi moves"),
    Case("Upsample", "upsample_nearest", upsample_nearest, (Float(1, 1, 2, 3),), ("x",),
         exporter="torchscript", opset=9, unexercised={"input 1": _SCALES},
         fails_at={10: "Upsample-10 is deprecated (Resize replaces it): onnx.checker refuses "
                       "every model that uses it"},
         notes="Upsample is deprecated since opset 10: only the TorchScript exporter at opset "
               "9 emits it"),
    Case("Col2Im", "col2im_fold", col2im_fold, (Float(1, 4, 6),), ("x",)),
    Case("Col2Im", "col2im_fold_strided", col2im_fold_strided, (Float(1, 6, 9),), ("x",)),
    Case("DepthToSpace", "depthtospace_pixel_shuffle", depthtospace_pixel_shuffle,
         (Float(1, 8, 2, 3),), ("x",)),
]
