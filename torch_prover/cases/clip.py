"""Clip: scalar bounds (constants), tensor bounds (graph inputs), min only, max only.

ONNX tags Clip's min and max non-differentiable, but PyTorch's clamp does propagate a
gradient to tensor bounds: d clamp(x, lo, hi) / d lo = 1 where x < lo (likewise for hi).
The tensor-bound cases sample x ~ N(0, 1) and bounds near -+0.5 so some elements are clamped
by each bound and none sits within the finite-difference step of a bound.
"""
import torch

from ..case import Case, Float, Expect


def clip_scalar(x):
    return torch.clamp(x, -0.5, 0.5)


def clip_tensor(x, lo, hi):
    return torch.clamp(x, lo, hi)


def clip_min_tensor(x, lo):
    return torch.clamp(x, min=lo)


def clip_max_tensor(x, hi):
    return torch.clamp(x, max=hi)


# 0-d bounds: ONNX Clip takes scalar min/max.
LO = Float(low=-0.6, high=-0.4)
HI = Float(low=0.4, high=0.6)
MIN_GRAD = ("clamp passes dy to min where x < min (5 and 4 of 12 elements on seeds 0/1), so "
            "min gets a nonzero gradient and the ONNX Clip's finite differences confirm it; "
            "the schema tags min non-differentiable")
MAX_GRAD = ("clamp passes dy to max where x > max (3 and 2 of 12 elements on seeds 0/1), so "
            "max gets a nonzero gradient and the ONNX Clip's finite differences confirm it; "
            "the schema tags max non-differentiable")
MIN_CONST = ("Y = max(X, min) where X < min: dY/dmin = 1 there; the Clip node's own finite "
             "differences in min (a lifted constant) are nonzero; the schema tags min "
             "non-differentiable (as in clip_tensor_bounds)")
MAX_CONST = ("Y = min(X, max) where X > max: dY/dmax = 1 there; the Clip node's own finite "
             "differences in max (a lifted constant) are nonzero; the schema tags max "
             "non-differentiable (as in clip_tensor_bounds)")
TS_NOTE = ("dynamo exports clamp with tensor bounds (or a single bound) as Max/Min, never Clip; "
           "the TorchScript exporter emits Clip (with a Cast of each bound to x's type).")
TENSOR_BOUNDS = (11, 28)
"""Tensor bounds are Clip inputs from Clip-11 on; Clip-6 takes min and max as attributes,
which a tensor cannot be (the TorchScript exporter writes Max/Min there instead)."""

CASES = [
    Case("Clip", "clip_scalar_bounds", clip_scalar, (Float(3, 4),), ("x",),
         expect={"input 1": Expect("disagree", MIN_CONST), "input 2": Expect("disagree", MAX_CONST)},
         notes="Python-float bounds export as float constants: only the numeric witness, "
               "which lifts them to inputs, can see them"),
    Case("Clip", "clip_tensor_bounds", clip_tensor, (Float(3, 4), LO, HI), ("x", "min", "max"),
         exporter="torchscript", notes=TS_NOTE, opsets=TENSOR_BOUNDS,
         expect={"input 1": Expect("disagree", MIN_GRAD),
                 "input 2": Expect("disagree", MAX_GRAD)}),
    Case("Clip", "clip_min_only", clip_min_tensor, (Float(3, 4), LO), ("x", "min"),
         exporter="torchscript", notes=TS_NOTE, opsets=TENSOR_BOUNDS,
         expect={"input 1": Expect("disagree", MIN_GRAD)}),
    Case("Clip", "clip_max_only", clip_max_tensor, (Float(3, 4), HI), ("x", "max"),
         exporter="torchscript", notes=TS_NOTE, opsets=TENSOR_BOUNDS,
         expect={"input 2": Expect("disagree", MAX_GRAD)}),
]
