"""Layout ops: Squeeze, Unsqueeze, Transpose, Flatten, Expand, Slice, Pad, Trilu.

All of them move or mask data without arithmetic, so the data input is differentiable
and every shape-like input (axes, starts, pads, k ...) is an integer constant.
"""
import math

import torch
import torch.nn.functional as F

from ..case import Case, Expect, Float
from .reference import reference_op


def squeeze_dim1(x):
    return torch.squeeze(x, 1)


def squeeze_all(x):
    return torch.squeeze(x)


def unsqueeze_dim1(x):
    return torch.unsqueeze(x, 1)


def transpose_perm(x):
    return x.permute(2, 0, 1)


def flatten_from1(x):
    return torch.flatten(x, 1)


@reference_op("Flatten")
def flatten_ref(input: torch.Tensor, axis: int) -> torch.Tensor:
    """Flatten (the schema): the dimensions before ``axis`` into the first, the rest into
    the second."""
    return input.reshape(math.prod(input.shape[:axis]), -1)


def flatten_from1_ref(x):
    return flatten_ref(x, 1)


def expand_broadcast(x):
    return x.expand(3, 2, 4)


class ExpandAsOther(torch.nn.Module):
    """A Module (not a function): dynamic shapes need a forward with named arguments."""

    def forward(self, x, like):
        return x.expand_as(like)


def slice_start_end(x):
    return x[:, 1:3]


def slice_step2(x):
    return x[:, :, 1:4:2]


def pad_constant(x):
    return F.pad(x, (1, 2, 0, 1), mode="constant", value=0.5)


def pad_reflect(x):
    return F.pad(x, (1, 2), mode="reflect")


def pad_edge(x):
    return F.pad(x, (1, 2), mode="replicate")


def pad_wrap(x):
    return F.pad(x, (1, 2), mode="circular")


def trilu_upper_k1(x):
    return torch.triu(x, 1)


def trilu_lower(x):
    return torch.tril(x)


def trilu_lower_kneg1(x):
    return torch.tril(x, -1)


_PAD_VALUE = ("every padded element of Y equals constant_value, so dY/dconstant_value = 1 "
              "there; PyTorch takes the value only as a Python float (a constant), and the Pad "
              "node's own finite differences in it are nonzero; the schema tags it "
              "non-differentiable")
_PAD_AXES = "the exporters always spell out pads for every axis and never emit the axes input"

CASES = [
    Case("Squeeze", "squeeze_dim1", squeeze_dim1, (Float(2, 1, 3),), ("x",)),
    Case("Squeeze", "squeeze_all_no_axes", squeeze_all, (Float(2, 1, 3, 1),), ("x",),
         notes="torch.squeeze without a dim exports Squeeze with the optional axes input absent"),
    Case("Unsqueeze", "unsqueeze_dim1", unsqueeze_dim1, (Float(2, 3),), ("x",)),
    Case("Transpose", "transpose_permute", transpose_perm, (Float(2, 3, 4),), ("x",)),
    Case("Flatten", "flatten_axis1", flatten_from1, (Float(2, 3, 4),), ("x",),
         exporter="torchscript",
         notes="the dynamo exporter lowers torch.flatten to Reshape; the TorchScript exporter "
               "emits Flatten. Without TorchScript: the reference flatten_ref, optimize=False (the "
               "optimizer rewrites Flatten as Reshape)",
         without_torchscript={"model": flatten_from1_ref, "kind": "reference",
                              "translation": flatten_ref.translation,
                              "export_options": {"optimize": False}}),
    Case("Expand", "expand_broadcast", expand_broadcast, (Float(2, 1),), ("x",)),
    Case("Expand", "expand_as_dynamic_shape", ExpandAsOther, (Float(2, 1), Float(2, 3)),
         ("x", "like"), dynamic=True,
         notes="with dynamic shapes the target shape is Concat(Shape(like)...), so the shape "
               "input is computed from a float graph input that gets no gradient",
         without_torchscript={"fails_at": {8: "the dynamo export reads like's shape with "
                                              "Shape(end=1), and Shape-1 has no start or end "
                                              "(from Shape-15): no relabelled export runs "
                                              "at Expand-8's opsets (TorchScript's does)"}}),
    Case("Slice", "slice_start_end", slice_start_end, (Float(2, 4, 3),), ("x",)),
    Case("Slice", "slice_step2", slice_step2, (Float(2, 3, 5),), ("x",),
         fails_at={1: "Slice-1 has no steps (from Slice-10): this case slices with step 2"},
         notes="starts, ends, axes and steps are all given (steps = 2)"),
    Case("Pad", "pad_constant", pad_constant, (Float(2, 3, 4),), ("x",),
         expect={"input 2": Expect("disagree", _PAD_VALUE)},
         unexercised={"input 3": _PAD_AXES}),
    Case("Pad", "pad_reflect", pad_reflect, (Float(2, 3, 4),), ("x",),
         unexercised={"input 3": _PAD_AXES}),
    Case("Pad", "pad_edge", pad_edge, (Float(2, 3, 4),), ("x",),
         unexercised={"input 3": _PAD_AXES}),
    Case("Pad", "pad_wrap", pad_wrap, (Float(2, 3, 4),), ("x",),
         unexercised={"input 3": _PAD_AXES},
         fails_at={v: f"mode wrap exists from Pad-19: Pad-{v} defines constant, reflect "
                      f"and edge only" for v in (2, 11, 13, 18)},
         notes="mode='circular' exports Pad mode 'wrap' (opset 19+)"),
    Case("Trilu", "trilu_upper_k1", trilu_upper_k1, (Float(3, 4),), ("x",)),
    Case("Trilu", "trilu_lower", trilu_lower, (Float(2, 3, 4),), ("x",)),
    Case("Trilu", "trilu_lower_kneg1", trilu_lower_kneg1, (Float(4, 3),), ("x",)),
]

# CenterCropPad: a reference case in reference_ops.py.
