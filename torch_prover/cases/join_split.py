"""Concat and Split: variadic inputs and variadic outputs."""
import torch

from ..case import Case, Float


def cat3(a, b, c):
    return torch.cat([a, b, c], dim=1)


def split_2_3(x):
    return torch.split(x, [2, 3], dim=1)


def cat2(a, b):
    return torch.cat([a, b], dim=0)


def split_equal_3(x):
    return torch.chunk(x, 3, dim=1)


CASES = [
    Case("Concat", "concat_three", cat3, (Float(2, 1), Float(2, 2), Float(2, 3)), ("a", "b", "c")),
    Case("Split", "split_sizes", split_2_3, (Float(3, 5),), ("x",)),
    Case("Concat", "concat_two", cat2, (Float(3, 4), Float(2, 4)), ("a", "b")),
    Case("Split", "split_equal_three", split_equal_3, (Float(2, 6),), ("x",),
         notes="equal chunks export Split with num_outputs=3 and the optional split input absent"),
]
