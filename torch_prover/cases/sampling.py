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
from .reference import node_op, onnx_opset, reference_op


def gridsample_bilinear(x, grid):
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def gridsample_bicubic_border(x, grid):
    return F.grid_sample(x, grid, mode="bicubic", padding_mode="border", align_corners=True)


def affinegrid_2d(theta):
    return F.affine_grid(theta, [1, 1, 3, 4], align_corners=False)


@reference_op("AffineGrid")
def affine_grid_ref(theta: torch.Tensor, size: list[int], align_corners: int) -> torch.Tensor:
    """AffineGrid: the base grid of ``size`` (align_corners as the schema) times theta^T;
    F.affine_grid computes exactly that."""
    return F.affine_grid(theta, size, align_corners=bool(align_corners))


def affinegrid_2d_ref(theta):
    return affine_grid_ref(theta, [1, 1, 3, 4], 0)


def resize_bilinear_scale(x):
    return F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)


def resize_bicubic_size(x):
    return F.interpolate(x, size=(5, 7), mode="bicubic", align_corners=True)


def resize_nearest_size(x):
    return F.interpolate(x, size=(4, 6), mode="nearest")


def upsample_nearest(x):
    return F.interpolate(x, scale_factor=2.0, mode="nearest")


def _upsample_emit(X, scales: list[float], mode: str):
    op = onnx_opset(18)
    return node_op("Upsample", 9)(X, op.Constant(value_floats=scales), mode=mode)


@reference_op("Upsample", emit=_upsample_emit, opset=9)
def upsample_ref(X: torch.Tensor, scales: list[float], mode: str) -> torch.Tensor:
    """Upsample-9, mode nearest: F.interpolate with the scales of the two spatial axes (the
    first two, N and C, are 1)."""
    return F.interpolate(X, scale_factor=tuple(scales[2:]), mode=mode)


def upsample_nearest_ref(x):
    return upsample_ref(x, [1.0, 1.0, 2.0, 2.0], "nearest")


def _linear_asymmetric_2d(X: torch.Tensor, scales: torch.Tensor,
                           out_size: list[int]) -> torch.Tensor:
    """Linear resampling of a 2-D ``X`` as Resize-10 and Upsample-9 compute it: output size
    floor(L * scale) per axis, output index i sampled at x_original = i / scale (asymmetric,
    the only transform before Resize-11), clamped to the last pixel L - 1 (so a sample past
    it has no derivative in scale), between its two neighbours. Differentiable in X and in
    scales (the sample positions); ``out_size`` states the size the node computes from
    scales, for the export's shapes, and is checked against it."""
    got = [int(n * s) for n, s in zip(X.shape, scales.detach().tolist())]
    if got != list(out_size):
        raise ValueError(f"out_size {list(out_size)} is not floor(L * scales) = {got}")
    y = X
    for dim in range(2):
        n = X.shape[dim]
        i = torch.arange(out_size[dim], dtype=X.dtype)
        pos = torch.clamp(i / scales[dim], max=n - 1)
        lo = pos.detach().floor().long().clamp(0, n - 1)
        w = (pos - lo).reshape([-1, 1] if dim == 0 else [1, -1])
        x0 = y.index_select(dim, lo)
        x1 = y.index_select(dim, (lo + 1).clamp(max=n - 1))
        y = x0 + w * (x1 - x0)
    return y


def _asymmetric_fake(X: torch.Tensor, scales: torch.Tensor, mode: str,
                     out_size: list[int]) -> torch.Tensor:
    """Shapes only, for the export: the reference reads scales to check out_size."""
    return X.new_empty(out_size)


def _resize10_emit(X, scales, mode: str, out_size: list[int]):
    return node_op("Resize", 10)(X, scales, mode=mode)


@reference_op("Resize", emit=_resize10_emit, fake=_asymmetric_fake, opset=10)
def resize_asymmetric(X: torch.Tensor, scales: torch.Tensor, mode: str,
                      out_size: list[int]) -> torch.Tensor:
    """Resize-10, mode linear, on a 2-D X: ``_linear_asymmetric_2d`` (out_size is no
    attribute: the node computes it from scales)."""
    return _linear_asymmetric_2d(X, scales, out_size)


def resize_linear_scales_10(x, scales):
    return resize_asymmetric(x, scales, "linear", [5, 6])


def _upsample9_emit(X, scales, mode: str, out_size: list[int]):
    return node_op("Upsample", 9)(X, scales, mode=mode)


@reference_op("Upsample", emit=_upsample9_emit, fake=_asymmetric_fake, opset=9)
def upsample_asymmetric(X: torch.Tensor, scales: torch.Tensor, mode: str,
                        out_size: list[int]) -> torch.Tensor:
    """Upsample-9, mode linear, on a 2-D X: the same function as Resize-10's
    (``_linear_asymmetric_2d``)."""
    return _linear_asymmetric_2d(X, scales, out_size)


def upsample_linear_scales(x, scales):
    return upsample_asymmetric(x, scales, "linear", [5, 6])


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


@reference_op("Resize")
def resize_crop_all_axes(X: torch.Tensor, roi: torch.Tensor, scales: Optional[torch.Tensor],
                         sizes: list[int], coordinate_transformation_mode: str,
                         mode: str) -> torch.Tensor:
    """``resize_crop`` over every axis (no ``axes`` attribute, which Resize-18 introduced):
    roi = [starts..., ends...] of all axes; an axis of length 1 resized to 1 samples
    0.5 * (start + end) * (1 - 1) = 0, its only pixel, whatever roi says."""
    k = X.dim()
    y = X
    for a, size in enumerate(sizes):
        if X.shape[a] == 1 and size == 1:
            continue
        y = _crop_linear_1d(y, a, roi[a], roi[k + a], size)
    return y


def resize_crop_roi_all_axes(x, roi):
    return resize_crop_all_axes(x, roi, None, [1, 1, 3, 3], "tf_crop_and_resize", "linear")


@reference_op("DepthToSpace")
def depth_to_space(input: torch.Tensor, blocksize: int, mode: str) -> torch.Tensor:
    """DepthToSpace in DCR mode (the schema's formula): reshape to (N, b, b, C/b^2, H, W),
    transpose (0, 3, 4, 1, 5, 2), reshape to (N, C/b^2, H*b, W*b)."""
    n, c, h, w = input.shape
    b = blocksize
    t = input.reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2)
    return t.reshape(n, c // (b * b), h * b, w * b)


def depthtospace_dcr(x):
    return depth_to_space(x, 2, "DCR")


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
_SCALES_MOVE_ASYMMETRIC = (
    "linear interpolation before Resize-11 samples X at i / scale (asymmetric), clamped to the "
    "last pixel: at a fixed output size floor(L * scale) the interior sampling points, hence Y, "
    "move continuously with scales (the node's own finite differences in scales are nonzero); "
    "with mode=nearest the derivative is zero")
_ASYMMETRIC_POINT = (
    "X is 2-D (onnxruntime's linear kernel refuses 4-D scales whose two outer values move off "
    "1, as the witness's moves do); scales (1.68, 1.52) on a 3 x 4 X give 5.04 -> 5 and 6.08 "
    "-> 6 rows and columns, 19% and 15% below the next size, so the witness's upward moves keep "
    "the shape; the sample positions (0.6, 1.19, 1.79 and 0.66, 1.32, 1.97, 2.63) sit between "
    "pixels, the last row and column past L - 1 are clamped")
_ROI = ("roi is used only by coordinate_transformation_mode=tf_crop_and_resize, which "
        "F.interpolate has no mode for")

def _asymmetric_case(op: str, model, ref, opset: int, why: str) -> Case:
    """A reference case of the asymmetric linear mode at ``opset`` (Resize-10, Upsample-9),
    at the point _ASYMMETRIC_POINT describes, its scales under the Resize label."""
    return Case(op, model.__name__, model, (Float(3, 4), Fixed([1.68, 1.52])), ("x", "scales"),
                kind="reference", translation=ref.translation, opset=opset,
                opsets=(opset, opset), float_dtype=torch.float32,
                conventions={"input 1": Applies(Convention.SHAPE_SETTING,
                                                _SCALES_MOVE_ASYMMETRIC)},
                notes=f"{why}; its node lowered from the dynamo exporter's opset 18, in float32 "
                      f"(onnxruntime has no float64 {op}-{opset} kernel). {_ASYMMETRIC_POINT}")


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
               "TorchScript exporter emits AffineGrid (opset 20). Without TorchScript: the "
               "reference affine_grid_ref",
         without_torchscript={"model": affinegrid_2d_ref, "kind": "reference",
                              "translation": affine_grid_ref.translation}),
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
         translation=resize_crop.translation, opsets=(18, 28),
         expect={"input 1": Expect("disagree", _ROI_MOVES)},
         notes="reference: F.interpolate has no tf_crop_and_resize mode. roi (axes 2, 3) is "
               "chosen so that every sample position (0.3, 1.35, 2.4 and 0.6, 1.65, 2.7 on a "
               "4-pixel axis) lies strictly between pixels and inside the image: no kink "
               "near the point; sizes [3, 3] keep the output shape fixed while roi moves. Opsets "
               "18 on: its axes attribute is Resize-18's (resize_crop_roi_all_axes covers "
               "Resize-11 and -13)"),
    Case("Resize", "resize_crop_roi_all_axes", resize_crop_roi_all_axes,
         (Float(1, 1, 4, 4), Fixed([0.0, 0.0, 0.1, 0.2, 1.0, 1.0, 0.8, 0.9])), ("x", "roi"),
         kind="reference", translation=resize_crop_all_axes.translation, opsets=(11, 28),
         expect={"input 1": Expect("disagree", _ROI_MOVES)},
         notes="reference, as resize_crop_roi without the axes attribute (Resize-18 on), so "
               "its node is Resize-11's and -13's too: roi and sizes over all four axes, N "
               "and C of length 1 (an axis of length 1 samples its only pixel whatever roi "
               "says). Opsets 11 on: Resize-10 has no roi"),
    _asymmetric_case("Resize", resize_linear_scales_10, resize_asymmetric, 10,
                     "reference: Resize-10's linear mode is asymmetric, which F.interpolate has "
                     "no mode for (resize_bilinear_scale@10 is refused as another function)"),
    _asymmetric_case("Upsample", upsample_linear_scales, upsample_asymmetric, 9,
                     "reference: Upsample-9's scales as a graph input (the TorchScript export "
                     "of F.interpolate makes it a constant), linear mode, the same function as "
                     "Resize-10's; Upsample-7 takes scales as an attribute, so opset 9 only"),
    Case("Upsample", "upsample_nearest", upsample_nearest, (Float(1, 1, 2, 3),), ("x",),
         exporter="torchscript", opset=9, unexercised={"input 1": _SCALES},
         fails_at={10: "Upsample-10 is deprecated (Resize replaces it): onnx.checker refuses "
                       "every model that uses it"},
         notes="Upsample is deprecated since opset 10: only the TorchScript exporter at opset "
               "9 emits it. Without TorchScript: the reference upsample_ref, its node lowered "
               "from the dynamo exporter's opset 18 (engine/next_opset.py), in float32 "
               "(onnxruntime has no float64 Upsample-7 kernel)",
         without_torchscript={"model": upsample_nearest_ref, "kind": "reference", "opset": 9,
                              "translation": upsample_ref.translation,
                              "float_dtype": torch.float32}),
    Case("Col2Im", "col2im_fold", col2im_fold, (Float(1, 4, 6),), ("x",)),
    Case("Col2Im", "col2im_fold_strided", col2im_fold_strided, (Float(1, 6, 9),), ("x",)),
    Case("DepthToSpace", "depthtospace_pixel_shuffle", depthtospace_pixel_shuffle,
         (Float(1, 8, 2, 3),), ("x",), opsets=(11, 28),
         notes="F.pixel_shuffle exports mode CRD, which exists from DepthToSpace-11 on (see "
               "depthtospace_dcr for DepthToSpace-1)"),
    Case("DepthToSpace", "depthtospace_dcr", depthtospace_dcr, (Float(1, 8, 2, 3),), ("x",),
         kind="reference", translation=depth_to_space.translation,
         notes="reference: F.pixel_shuffle exports mode CRD, which DepthToSpace-1 lacks (it "
               "is DCR only); DCR is DepthToSpace-11's default, so the relabelled node at "
               "opsets 7-10 drops it (engine/adapter_table.py)"),
]
