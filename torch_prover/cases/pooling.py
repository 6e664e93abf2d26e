"""Pooling: AveragePool, MaxPool, GlobalAveragePool (natural); MaxPool's Indices output,
GlobalMaxPool, GlobalLpPool, MaxUnpool, RoiAlign and MaxRoiPool (reference ops).

Natural exports that miss the op: ``F.max_pool2d(return_indices=True)`` exports *two*
MaxPool nodes (the second, 1x1, turns ONNX's flat indices into PyTorch's per-plane ones);
``F.adaptive_max_pool2d(x, 1)`` exports ReduceMax (dynamo) or MaxPool (TorchScript);
``F.lp_pool2d`` exports Pow/AveragePool/...; ``F.max_unpool2d`` exports ScatterND (dynamo)
and fails with TorchScript. Those get references written from the ONNX spec.
Max inputs are continuous normals: no ties, so the max is locally smooth.
"""
from typing import Optional

import torch
import torch.nn.functional as F

from ..case import Case, Custom, Float, Fixed
from .reference import onnx_opset, reference_op

Tensor = torch.Tensor


def averagepool_2d(x):
    return F.avg_pool2d(x, kernel_size=2, stride=2)


def averagepool_pad(x):
    return F.avg_pool2d(x, kernel_size=3, stride=1, padding=1, count_include_pad=False)


def maxpool_2d(x):
    return F.max_pool2d(x, kernel_size=2, stride=2)


def maxpool_dilated_pad(x):
    return F.max_pool2d(x, kernel_size=2, stride=1, padding=1, dilation=2)


def globalaveragepool(x):
    return F.adaptive_avg_pool2d(x, 1)


@reference_op("GlobalAveragePool")
def global_average_pool(X: Tensor) -> Tensor:
    """GlobalAveragePool: the mean over every spatial axis, kept as size 1."""
    return X.mean(dim=tuple(range(2, X.dim())), keepdim=True)


def globalaveragepool_ref(x):
    return global_average_pool(x)


# --------------------------------------------------------------------------- references
def globalmaxpool_adaptive(x):
    return F.adaptive_max_pool2d(x, 1)


def _max_pool_emit(X, kernel_shape: list[int], strides: list[int]):
    return onnx_opset().MaxPool(X, kernel_shape=kernel_shape, strides=strides)


@reference_op("MaxPool", emit=_max_pool_emit)
def max_pool_indices(X: Tensor, kernel_shape: list[int],
                     strides: list[int]) -> tuple[Tensor, Tensor]:
    """MaxPool with its Indices output: ONNX indices are flat over the whole N*C*H*W tensor
    (storage_order 0), PyTorch's over one H*W plane; the offset n*C*H*W + c*H*W converts."""
    y, idx = F.max_pool2d(X, kernel_shape, strides, return_indices=True)
    n, c, h, w = X.shape
    plane = torch.arange(n * c, dtype=idx.dtype).reshape(n, c, 1, 1) * (h * w)
    return y, idx + plane


def maxpool_indices(x):
    return max_pool_indices(x, [2, 2], [2, 2])


@reference_op("GlobalMaxPool")
def global_max_pool(X: Tensor) -> Tensor:
    return X.amax(dim=tuple(range(2, X.dim())), keepdim=True)


def globalmaxpool_2d(x):
    return global_max_pool(x)


@reference_op("GlobalLpPool", opset=21)
def global_lp_pool(X: Tensor, p: int) -> Tensor:
    return torch.linalg.vector_norm(X, ord=p, dim=tuple(range(2, X.dim())), keepdim=True)


def globallppool_p2(x):
    return global_lp_pool(x, 2)


def globallppool_p3(x):
    return global_lp_pool(x, 3)


def _max_unpool_emit(X, I, kernel_shape: list[int], strides: list[int],
                     output_shape: Optional[list[int]] = None):
    op = onnx_opset()
    if output_shape is None:
        return op.MaxUnpool(X, I, kernel_shape=kernel_shape, strides=strides)
    shape = op.Constant(value_ints=output_shape)
    return op.MaxUnpool(X, I, shape, kernel_shape=kernel_shape, strides=strides)


@reference_op("MaxUnpool", emit=_max_unpool_emit)
def max_unpool(X: Tensor, I: Tensor, kernel_shape: list[int], strides: list[int],
               output_shape: Optional[list[int]] = None) -> Tensor:
    """Scatter X into zeros at the flat indices I of the inferred shape (N, C, (d-1)*s+k ...);
    an output_shape larger than that pads zeros at the end of each spatial axis (the
    semantics of ONNX's backend test maxunpool_export_with_output_shape)."""
    inferred = list(X.shape[:2]) + [(d - 1) * s + k for d, k, s in
                                    zip(X.shape[2:], kernel_shape, strides)]
    n = 1
    for d in inferred:
        n *= d
    y = X.new_zeros(n).scatter(0, I.reshape(-1), X.reshape(-1)).reshape(inferred)
    if output_shape is None:
        return y
    pad: list[int] = []
    for have, want in reversed(list(zip(inferred[2:], output_shape[2:]))):
        pad += [0, want - have]
    return F.pad(y, pad)


def _window_argmax(n: int, c: int, h: int, w: int, k: int, out_h: int, out_w: int):
    """ONNX MaxPool-style flat indices: one distinct position in each k x k window of a
    (n, c, out_h, out_w) output grid (as MaxPool(kernel k, stride k) would produce)."""

    def make(gen: torch.Generator, float_dtype: torch.dtype) -> Tensor:
        di = torch.randint(0, k, (n, c, h, w), generator=gen)
        dj = torch.randint(0, k, (n, c, h, w), generator=gen)
        rows = torch.arange(h).reshape(1, 1, h, 1) * k + di
        cols = torch.arange(w).reshape(1, 1, 1, w) * k + dj
        plane = torch.arange(n * c).reshape(n, c, 1, 1) * (out_h * out_w)
        return plane + rows * out_w + cols

    return Custom(make)


def maxunpool_2d(x, indices):
    return max_unpool(x, indices, [2, 2], [2, 2])


def maxunpool_output_shape(x, indices):
    return max_unpool(x, indices, [2, 2], [2, 2], [1, 2, 5, 5])


_LP32 = ("opset 21, float32: onnxruntime implements only GlobalLpPool-2 (opsets 2-21; -22 only "
         "adds bfloat16) and only for float32; the onnx reference evaluator has no GlobalLpPool")
_NO_LP22 = ("no runtime implements GlobalLpPool-22: onnxruntime has no kernel for it, "
            "onnx.reference no GlobalLpPool")

# RoiAlign and MaxRoiPool: torchvision.ops (roi_align, roi_pool) is their PyTorch home, and
# torchvision is not installable here; these references follow the ONNX spec and the onnx
# reference evaluator (op_roi_align.py).
@reference_op("RoiAlign")
def roi_align(X: Tensor, rois: Tensor, batch_indices: Tensor, output_height: int,
              output_width: int, sampling_ratio: int, spatial_scale: float) -> Tensor:
    """RoiAlign, mode avg, half_pixel, fixed sampling_ratio: the mean of bilinear samples on
    a sampling_ratio x sampling_ratio grid in each bin. Sample points are assumed inside
    [0, H-1] x [0, W-1] (the cases draw rois so), where the spec needs no clamping."""
    return _roi_align(X, rois, batch_indices, output_height, output_width, sampling_ratio,
                      spatial_scale, 0.5)


@reference_op("RoiAlign")
def roi_align_modes(X: Tensor, rois: Tensor, batch_indices: Tensor, output_height: int,
                    output_width: int, sampling_ratio: int, spatial_scale: float,
                    coordinate_transformation_mode: str) -> Tensor:
    """RoiAlign as ``roi_align``, its coordinate_transformation_mode an attribute:
    'half_pixel' shifts the scaled box by -0.5, 'output_half_pixel' does not (RoiAlign-10's
    only behaviour, "backward-compatible" in RoiAlign-16's schema)."""
    shift = 0.5 if coordinate_transformation_mode == "half_pixel" else 0.0
    return _roi_align(X, rois, batch_indices, output_height, output_width, sampling_ratio,
                      spatial_scale, shift)


def _roi_align(X: Tensor, rois: Tensor, batch_indices: Tensor, output_height: int,
               output_width: int, sampling_ratio: int, spatial_scale: float,
               shift: float) -> Tensor:
    n, c, h, w = X.shape
    r = rois.shape[0]
    box = rois * spatial_scale - shift
    x1, y1, x2, y2 = box[:, 0], box[:, 1], box[:, 2], box[:, 3]
    sr = sampling_ratio

    def points(start, end, bins):                       # (r, bins * sr)
        size = (end - start) / bins
        k = torch.arange(bins, dtype=X.dtype).repeat_interleave(sr)
        i = torch.arange(sr, dtype=X.dtype).repeat(bins)
        return start[:, None] + k * size[:, None] + (i + 0.5) * (size / sr)[:, None]

    ys, xs = points(y1, y2, output_height), points(x1, x2, output_width)
    y0, x0 = ys.detach().floor(), xs.detach().floor()
    ly, lx = ys - y0, xs - x0
    y0, x0 = y0.long(), x0.long()
    feat = X[batch_indices].reshape(r, c, h * w)

    def corner(yi, xi):                                 # (r, c, oh*sr, ow*sr)
        idx = (yi[:, :, None] * w + xi[:, None, :]).reshape(r, 1, -1).expand(r, c, -1)
        return feat.gather(2, idx).reshape(r, c, ys.shape[1], xs.shape[1])

    wy1, wx1 = ly[:, None, :, None], lx[:, None, None, :]
    wy0, wx0 = 1 - wy1, 1 - wx1
    val = (wy0 * wx0 * corner(y0, x0) + wy0 * wx1 * corner(y0, x0 + 1)
           + wy1 * wx0 * corner(y0 + 1, x0) + wy1 * wx1 * corner(y0 + 1, x0 + 1))
    return val.reshape(r, c, output_height, sr, output_width, sr).mean(dim=(3, 5))


def _boxes(r: int, h: int, w: int, scale: float = 1.0) -> Custom:
    """r boxes [x1, y1, x2, y2] (image coordinates / scale) well inside an h x w map."""

    def make(gen: torch.Generator, float_dtype: torch.dtype) -> Tensor:
        u = torch.rand(r, 4, generator=gen, dtype=torch.float64)
        x1 = 0.6 + 0.8 * u[:, 0]
        y1 = 0.6 + 0.8 * u[:, 1]
        x2 = x1 + 1.0 + (w - 3.4 - 0.2) * u[:, 2]
        y2 = y1 + 1.0 + (h - 3.4 - 0.2) * u[:, 3]
        return (torch.stack([x1, y1, x2, y2], dim=1) / scale).to(float_dtype)

    return Custom(make)


def _step(t: Tensor) -> Tensor:
    """1 where the integer-valued t >= 0, else 0; built from sign, whose derivative is 0."""
    return (torch.sign(t + 0.5) + 1) / 2


@reference_op("MaxRoiPool", opset=21)
def max_roi_pool(X: Tensor, rois: Tensor, pooled_shape: list[int],
                 spatial_scale: float) -> Tensor:
    """MaxRoiPool (Caffe's ROIPool, as onnxruntime implements it): roi corners are rounded,
    bins are [floor(k * size), ceil((k + 1) * size)) + start, and each output is the max
    of its bin. Written with round/floor/ceil/sign, whose derivatives are 0, so the
    reference's gradient for rois is the true one of a piecewise-constant function: zero.
    Assumes no empty bin (the spec then outputs 0; the cases' boxes avoid it)."""
    n, c, h, w = X.shape
    ph, pw = pooled_shape
    corners = torch.round(rois[:, 1:] * spatial_scale)
    x1, y1, x2, y2 = corners.unbind(1)

    def in_bins(start, end, bins, size):                # (r, bins, size)
        length = torch.clamp(end - start + 1, min=1)
        k = torch.arange(bins, dtype=X.dtype)
        lo = torch.clamp(torch.floor(k * (length / bins)[:, None]) + start[:, None], 0, size)
        hi = torch.clamp(torch.ceil((k + 1) * (length / bins)[:, None]) + start[:, None], 0,
                         size)
        at = torch.arange(size, dtype=X.dtype)
        return _step(at - lo[:, :, None]) * _step(hi[:, :, None] - 1 - at)

    mask = in_bins(y1, y2, ph, h)[:, :, None, :, None] * in_bins(x1, x2, pw, w)[:, None, :, None, :]
    feat = X[rois[:, 0].detach().long()][:, :, None, None]      # (r, c, 1, 1, h, w)
    mask = mask[:, None]                                         # (r, 1, ph, pw, h, w)
    return (feat * mask + (mask - 1) * 1e30).amax(dim=(-2, -1))


def _rois_with_batch(batch: list[int], h: int, w: int, scale: float) -> Custom:
    """[batch_id, x1, y1, x2, y2] rows, corners continuous (no rounding ties), boxes at least
    3 x 3 after rounding so no bin of a 2 x 2 pooling is empty."""

    def make(gen: torch.Generator, float_dtype: torch.dtype) -> Tensor:
        r = len(batch)
        u = torch.rand(r, 4, generator=gen, dtype=torch.float64)
        x1, y1 = 1.5 * u[:, 0], 1.5 * u[:, 1]
        x2 = x1 + 2.6 + (w - 1 - 2.6 - 1.5) * u[:, 2]
        y2 = y1 + 2.6 + (h - 1 - 2.6 - 1.5) * u[:, 3]
        ids = torch.tensor(batch, dtype=torch.float64)
        return torch.stack([ids, x1 / scale, y1 / scale, x2 / scale, y2 / scale], 1).to(
            float_dtype)

    return Custom(make)


def maxroipool_2x2(x, rois):
    return max_roi_pool(x, rois, [2, 2], 0.5)


def roialign_avg(x, rois, batch_indices):
    return roi_align(x, rois, batch_indices, 2, 2, 2, 0.5)


def roialign_output_half_pixel(x, rois, batch_indices):
    return roi_align_modes(x, rois, batch_indices, 2, 2, 2, 0.5, "output_half_pixel")


CASES = [
    Case("AveragePool", "averagepool_2d", averagepool_2d, (Float(1, 2, 4, 4),), ("x",)),
    Case("AveragePool", "averagepool_pad", averagepool_pad, (Float(1, 2, 4, 4),), ("x",)),
    Case("MaxPool", "maxpool_2d", maxpool_2d, (Float(1, 2, 4, 4),), ("x",),
         unexercised={"output 1": "F.max_pool2d(return_indices=True) exports two MaxPool "
                                  "nodes; see maxpool_indices (reference)"}),
    Case("MaxPool", "maxpool_dilated_pad", maxpool_dilated_pad, (Float(1, 2, 4, 4),), ("x",),
         unexercised={"output 1": "see maxpool_indices"},
         fails_at={v: f"MaxPool-{v} has no dilations (from MaxPool-10): this case's pool "
                      f"is dilated" for v in (1, 8)}),
    Case("MaxPool", "maxpool_indices", maxpool_indices, (Float(2, 2, 4, 4),), ("x",),
         kind="reference", translation=max_pool_indices.translation,
         fails_at={1: "MaxPool-1 has no Indices output (from MaxPool-8): this case computes "
                      "them"},
         notes="reference: the natural export of return_indices=True has two MaxPool nodes"),
    Case("GlobalAveragePool", "globalaveragepool_adaptive", globalaveragepool,
         (Float(1, 3, 3, 3),), ("x",), exporter="torchscript",
         notes="the dynamo exporter lowers adaptive_avg_pool2d(x, 1) to ReduceMean; the "
               "TorchScript exporter emits GlobalAveragePool. Without TorchScript: the "
               "reference global_average_pool",
         without_torchscript={"model": globalaveragepool_ref, "kind": "reference",
                              "translation": global_average_pool.translation}),
    Case("GlobalMaxPool", "globalmaxpool_adaptive", globalmaxpool_adaptive, (Float(1, 2, 4, 5),),
         ("x",), exporter="torchscript", dynamic=True,
         notes="TorchScript exports adaptive_max_pool2d(x, 1) as GlobalMaxPool when the spatial "
               "sizes are dynamic (static sizes give MaxPool); dynamo gives ReduceMax"),
    Case("GlobalMaxPool", "globalmaxpool_2d", globalmaxpool_2d, (Float(2, 3, 3, 3),), ("x",),
         kind="reference", translation=global_max_pool.translation),
    Case("GlobalLpPool", "globallppool_p2", globallppool_p2, (Float(2, 3, 3, 3),), ("x",),
         kind="reference", translation=global_lp_pool.translation, float_dtype=torch.float32,
         opset=21, fails_at={22: _NO_LP22}, notes=_LP32),
    Case("GlobalLpPool", "globallppool_p3", globallppool_p3,
         (Float(1, 2, 3, 3, low=0.2, high=2.0),), ("x",), kind="reference",
         translation=global_lp_pool.translation, float_dtype=torch.float32, opset=21,
         fails_at={22: _NO_LP22},
         notes=_LP32 + "; positive inputs: |x|^3 is smooth there, away from the kink at 0"),
    Case("MaxUnpool", "maxunpool_2d", maxunpool_2d,
         (Float(2, 2, 2, 2), _window_argmax(2, 2, 2, 2, 2, 4, 4)), ("x", "indices"),
         kind="reference", translation=max_unpool.translation),
    Case("MaxUnpool", "maxunpool_output_shape", maxunpool_output_shape,
         (Float(1, 2, 2, 2), _window_argmax(1, 2, 2, 2, 2, 4, 4)), ("x", "indices"),
         kind="reference", translation=max_unpool.translation,
         fails_at={v: f"only onnxruntime runs MaxUnpool-{v} (in float32: it has no float64 "
                      "kernel, onnx.reference computes MaxUnpool-22), and given output_shape "
                      "its kernel reads the indices in the output_shape grid, where ONNX's "
                      "backend test maxunpool_export_with_output_shape (and onnx.reference) "
                      "reads them in the inferred grid and pads: another function"
                   for v in (9, 11)}),
    Case("RoiAlign", "roialign_avg", roialign_avg,
         (Float(2, 2, 6, 6), _boxes(3, 6, 6, scale=0.5), Fixed([1, 0, 1])),
         ("x", "rois", "batch_indices"),
         kind="reference", translation=roi_align.translation,
         fails_at={10: "RoiAlign-10 has no coordinate_transformation_mode and computes as "
                       "output_half_pixel; this case's half_pixel (RoiAlign-16's default) "
                       "samples elsewhere: roialign_output_half_pixel proves RoiAlign-10"},
         notes="reference: torchvision.ops.roi_align is not installable here. Random boxes "
               "keep every sample point inside the map and (almost surely) off the integer "
               "grid, where bilinear weights have kinks"),
    Case("RoiAlign", "roialign_output_half_pixel", roialign_output_half_pixel,
         (Float(2, 2, 6, 6), _boxes(3, 6, 6, scale=0.5), Fixed([1, 0, 1])),
         ("x", "rois", "batch_indices"),
         kind="reference", translation=roi_align_modes.translation,
         notes="reference, as roialign_avg with coordinate_transformation_mode="
               "'output_half_pixel': the behaviour of RoiAlign-10, which has no such attribute "
               "(the relabelled variant drops it there: engine/adapter_table.py)"),
    Case("MaxRoiPool", "maxroipool_2x2", maxroipool_2x2,
         (Float(1, 2, 6, 6), _rois_with_batch([0, 0, 0], 6, 6, 0.5)), ("x", "rois"),
         kind="reference", translation=max_roi_pool.translation, opset=21,
         float_dtype=torch.float32,
         fails_at={22: "no runtime implements MaxRoiPool-22: onnxruntime has no kernel for "
                       "it, onnx.reference no MaxRoiPool"},
         notes="reference: torchvision.ops.roi_pool is not installable here. Opset 21, "
               "float32: onnxruntime implements only MaxRoiPool-1 (-22 only adds bfloat16), "
               "for float32; the onnx reference evaluator has no MaxRoiPool. One image, all "
               "batch ids 0: the float batch id is truncated to an index, so a finite "
               "difference step would move id 1.0 to image 0 (truncation of 0 +- h stays 0)"),
]
