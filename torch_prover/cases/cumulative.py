"""CumSum (the axis is an int64 input: torch's ``dim`` exports as a constant).

CumProd is new in opset 26; torch 2.13's exporter produces opset 25 at most and its torch_lib
has no aten.cumprod translation, so CumProd's cases are reference cases on the raised route
(reference_new_ops.py).
"""
import torch

from ..case import Case, Float


def cumsum_dim1(x):
    return torch.cumsum(x, dim=1)


def cumsum_dim_negative(x):
    return torch.cumsum(x, dim=-1)


def cumsum_reverse(x):
    return torch.flip(torch.cumsum(torch.flip(x, [0]), 0), [0])


CASES = [
    Case("CumSum", "cumsum_dim1", cumsum_dim1, (Float(3, 4),), ("x",)),
    Case("CumSum", "cumsum_dim_negative", cumsum_dim_negative, (Float(2, 3, 4),), ("x",)),
    Case("CumSum", "cumsum_reverse", cumsum_reverse, (Float(3, 4),), ("x",),
         notes="flip/cumsum/flip: dynamo keeps CumSum(reverse=0) between two Slice nodes (glue "
               "on the input and on the output), not CumSum(reverse=1)."),
]

# CumProd (opset 26): see reference_new_ops.py for why no export can contain it.
