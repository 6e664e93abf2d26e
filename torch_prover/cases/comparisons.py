"""Comparisons: Equal, Greater, GreaterOrEqual, Less, LessOrEqual.

The output is bool (evidence `integer`). With float inputs PyTorch's comparison is outside
autograd: the inputs require grad but receive none (`no-grad`), which is what ONNX's
non-differentiable tags say. Integer variants show the dtype evidence alone.
"""
import torch

from ..case import Case, Float, Int


def equal(a, b):
    return torch.eq(a, b)


def greater(a, b):
    return torch.gt(a, b)


def greater_or_equal(a, b):
    return torch.ge(a, b)


def less(a, b):
    return torch.lt(a, b)


def less_or_equal(a, b):
    return torch.le(a, b)


def _broadcast_int64(op: str, fn) -> Case:
    """int64 inputs, broadcast. Version 7 of Greater and Less takes float types only
    (integers from version 9): TorchScript casts the inputs to float there, the relabelled
    dynamo export does not, so a run without TorchScript fails that variant, declared."""
    return Case(op, f"{op.lower()}_broadcast_int64", fn, (Int(3, 4, high=5), Int(4, high=5)),
                ("a", "b"),
                without_torchscript={"fails_at": {7: f"{op}-7 takes float types only (integers "
                                                     f"from {op}-9); TorchScript casts the int64 "
                                                     "inputs to float there, the relabelled "
                                                     "dynamo export does not"}},
                notes="int64 inputs (the output is bool either way)")


CASES = [
    Case("Equal", "equal_float", equal, (Float(3, 4), Float(3, 4)), ("a", "b"),
         fails_at={7: "Equal-7 takes bool, int32 and int64 only: floats from Equal-11"}),
    Case("Equal", "equal_int64", equal, (Int(3, 4, high=3), Int(3, 4, high=3)), ("a", "b"),
         notes="small integer range so some elements compare equal."),
    Case("Greater", "greater_float", greater, (Float(3, 4), Float(3, 4)), ("a", "b")),
    _broadcast_int64("Greater", greater),
    Case("GreaterOrEqual", "greaterorequal_float", greater_or_equal, (Float(3, 4), Float(3, 4)),
         ("a", "b")),
    Case("Less", "less_float", less, (Float(3, 4), Float(3, 4)), ("a", "b")),
    _broadcast_int64("Less", less),
    Case("LessOrEqual", "lessorequal_float", less_or_equal, (Float(3, 4), Float(3, 4)), ("a", "b")),
]
