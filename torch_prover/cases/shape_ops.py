"""Reshape, Shape, Tile: the shape-moving ops of ONNX's first tag PR (onnx#2723)."""
import torch

from ..case import Case, Float
from .reference import reference_op


def reshape_flat(x):
    return torch.reshape(x, (x.numel(),))


def shape_of(x):
    return torch._shape_as_tensor(x)


def _shape_fake(data: torch.Tensor) -> torch.Tensor:
    return data.new_empty((data.dim(),), dtype=torch.int64)


@reference_op("Shape", fake=_shape_fake)
def shape_ref(data: torch.Tensor) -> torch.Tensor:
    """Shape: the input's dimensions as an int64 vector."""
    return torch.tensor(data.shape, dtype=torch.int64)


def shape_of_ref(x):
    return shape_ref(x)


def tile_2x3(x):
    return torch.tile(x, (2, 3))


CASES = [
    Case("Reshape", "reshape_basic", reshape_flat, (Float(2, 3),), ("x",)),
    Case("Shape", "shape_dynamic", shape_of, (Float(2, 3),), ("x",), exporter="torchscript",
         dynamic=True,
         notes="the dynamo exporter folds Shape on static shapes and adds symbolic-size outputs "
               "with dynamic ones; the TorchScript exporter with dynamic axes keeps one Shape. "
               "Without TorchScript: the reference shape_ref, optimize=False (the optimizer folds "
               "Shape on a static shape)",
         without_torchscript={"model": shape_of_ref, "kind": "reference", "dynamic": False,
                              "translation": shape_ref.translation,
                              "export_options": {"optimize": False}}),
    Case("Tile", "tile_2x3", tile_2x3, (Float(2, 3),), ("x",)),
]
