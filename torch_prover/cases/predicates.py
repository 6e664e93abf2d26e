"""IsInf, IsNaN, Not, Identity.

IsInf/IsNaN take a float tensor and return bool: PyTorch gives the input no gradient
(evidence `no-grad`), and the output is bool. The inputs mix in a few infinities / NaNs so
the predicate is not trivially all-false. Not takes and returns bool. Identity passes the
gradient through unchanged.
"""
import torch

from ..case import Case, Custom, Bool, Float


def _with_infs(gen, float_dtype):
    x = torch.randn((3, 4), generator=gen, dtype=torch.float64)
    x[0, 1] = float("inf")
    x[2, 3] = float("-inf")
    return x.to(float_dtype)


def _with_nans(gen, float_dtype):
    x = torch.randn((3, 4), generator=gen, dtype=torch.float64)
    x[1, 2] = float("nan")
    return x.to(float_dtype)


def isinf(x):
    return torch.isinf(x)


def isnan(x):
    return torch.isnan(x)


def not_(mask):
    return torch.logical_not(mask)


def identity(x):
    return x.clone()


CASES = [
    Case("IsInf", "isinf_basic", isinf, (Custom(_with_infs),), ("x",),
         notes="dynamo inserts a Cast on x before IsInf (glue on one input)."),
    Case("IsNaN", "isnan_basic", isnan, (Custom(_with_nans),), ("x",)),
    Case("Not", "not_basic", not_, (Bool(3, 4),), ("mask",)),
    Case("Identity", "identity_clone", identity, (Float(3, 4),), ("x",),
         notes="Tensor.clone exports to Identity (the optimizer keeps it: it produces the "
               "graph output)."),
]
