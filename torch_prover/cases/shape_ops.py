"""Reshape, Shape, Tile: the shape-moving ops of ONNX's first tag PR (onnx#2723)."""
import torch

from ..case import Case, Float


def reshape_flat(x):
    return torch.reshape(x, (x.numel(),))


def shape_of(x):
    return torch._shape_as_tensor(x)


def tile_2x3(x):
    return torch.tile(x, (2, 3))


CASES = [
    Case("Reshape", "reshape_basic", reshape_flat, (Float(2, 3),), ("x",)),
    Case("Shape", "shape_dynamic", shape_of, (Float(2, 3),), ("x",), exporter="torchscript",
         dynamic=True,
         notes="the dynamo exporter folds Shape on static shapes and adds symbolic-size outputs "
               "with dynamic ones; the TorchScript exporter with dynamic axes keeps one Shape"),
    Case("Tile", "tile_2x3", tile_2x3, (Float(2, 3),), ("x",)),
]
