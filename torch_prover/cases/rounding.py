"""Piecewise-constant ops: Floor, Ceil, Round, Sign.

Their PyTorch gradient is identically zero (evidence `zero-grad`), which supports ONNX's
non-differentiable tag. Uniform samples in (-3, 3) are almost surely away from the jumps
(integers for Floor/Ceil, half-integers for Round, 0 for Sign), so finite differences see
the same zero derivative.
"""
import torch

from ..case import Case, Float


def floor(x):
    return torch.floor(x)


def ceil(x):
    return torch.ceil(x)


def round_(x):
    return torch.round(x)


def sign(x):
    return torch.sign(x)


CASES = [
    Case("Floor", "floor_basic", floor, (Float(3, 4, low=-3.0, high=3.0),), ("x",)),
    Case("Ceil", "ceil_basic", ceil, (Float(3, 4, low=-3.0, high=3.0),), ("x",)),
    Case("Round", "round_basic", round_, (Float(3, 4, low=-3.0, high=3.0),), ("x",)),
    Case("Sign", "sign_basic", sign, (Float(3, 4, low=-3.0, high=3.0),), ("x",)),
]
