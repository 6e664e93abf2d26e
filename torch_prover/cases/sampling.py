"""Sampling and rearrangement: GridSample, AffineGrid, Resize, Upsample, Col2Im, DepthToSpace.

GridSample's grid and AffineGrid's theta are tagged non-differentiable, yet the bilinear
sampler is piecewise linear in the sample position and the affine grid is linear in theta:
PyTorch differentiates both, and ONNX finite differences agree. Grid points are continuous
uniforms in (-0.9, 0.9): almost surely no sample sits on a pixel boundary (a kink).
"""
import torch.nn.functional as Fn

from ..case import Case, Expect, F


def gridsample_bilinear(x, grid):
    return Fn.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def gridsample_bicubic_border(x, grid):
    return Fn.grid_sample(x, grid, mode="bicubic", padding_mode="border", align_corners=True)


def affinegrid_2d(theta):
    return Fn.affine_grid(theta, [1, 1, 3, 4], align_corners=False)


def resize_bilinear_scale(x):
    return Fn.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)


def resize_bicubic_size(x):
    return Fn.interpolate(x, size=(5, 7), mode="bicubic", align_corners=True)


def resize_nearest_size(x):
    return Fn.interpolate(x, size=(4, 6), mode="nearest")


def upsample_nearest(x):
    return Fn.interpolate(x, scale_factor=2.0, mode="nearest")


def col2im_fold(x):
    return Fn.fold(x, output_size=(3, 4), kernel_size=2)


def col2im_fold_strided(x):
    return Fn.fold(x, output_size=(4, 5), kernel_size=(2, 3), stride=(2, 1), padding=(1, 0),
                   dilation=(1, 1))


def depthtospace_pixel_shuffle(x):
    return Fn.pixel_shuffle(x, 2)


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
                "node's own finite differences in the lifted scales are nonzero); the schema "
                "tags scales non-differentiable")
_ROI = ("roi is used only by coordinate_transformation_mode=tf_crop_and_resize, which "
        "F.interpolate has no mode for")

CASES = [
    Case("GridSample", "gridsample_bilinear", gridsample_bilinear,
         (F(1, 2, 3, 4), F(1, 2, 3, 2, low=-0.9, high=0.9)), ("x", "grid"),
         expect={"input 1": _GRID}),
    Case("GridSample", "gridsample_bicubic_border", gridsample_bicubic_border,
         (F(1, 1, 4, 4), F(1, 3, 2, 2, low=-0.9, high=0.9)), ("x", "grid"),
         expect={"input 1": _GRID}),
    Case("AffineGrid", "affinegrid_2d", affinegrid_2d, (F(1, 2, 3),), ("theta",),
         exporter="torchscript", expect={"input 0": _THETA},
         notes="the dynamo exporter decomposes affine_grid into MatMul/Reshape; the "
               "TorchScript exporter emits AffineGrid (opset 20)"),
    Case("Resize", "resize_bilinear_scale", resize_bilinear_scale, (F(1, 2, 2, 3),), ("x",),
         expect={"input 2": Expect("disagree", _SCALES_MOVE)}, unexercised={"input 1": _ROI}),
    Case("Resize", "resize_bicubic_size", resize_bicubic_size, (F(1, 1, 3, 4),), ("x",),
         unexercised={"input 1": _ROI}),
    Case("Resize", "resize_nearest_size", resize_nearest_size, (F(1, 1, 2, 3),), ("x",),
         unexercised={"input 1": _ROI}),
    Case("Upsample", "upsample_nearest", upsample_nearest, (F(1, 1, 2, 3),), ("x",),
         exporter="torchscript", opset=9, unexercised={"input 1": _SCALES},
         notes="Upsample is deprecated since opset 10: only the TorchScript exporter at opset "
               "9 emits it"),
    Case("Col2Im", "col2im_fold", col2im_fold, (F(1, 4, 6),), ("x",)),
    Case("Col2Im", "col2im_fold_strided", col2im_fold_strided, (F(1, 6, 9),), ("x",)),
    Case("DepthToSpace", "depthtospace_pixel_shuffle", depthtospace_pixel_shuffle,
         (F(1, 8, 2, 3),), ("x",)),
]
