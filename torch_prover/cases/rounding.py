"""Floor: piecewise constant, so its gradient is identically zero (evidence `zero-grad`)."""
import torch

from ..case import Case, F


def floor(x):
    return torch.floor(x)


CASES = [
    Case("Floor", "floor_basic", floor, (F(3, 4, low=-3.0, high=3.0),), ("x",)),
]
