"""Elementwise unary math: one smooth function of one tensor, each on a domain where it is smooth.

Every op here is tagged differentiable (input and output) and has a nonzero derivative on the
chosen domain, so each case is expected to `agree`. Domains:
Acosh x in (1.2, 3); Log, Sqrt, Reciprocal x in (0.5, 3); Asin, Acos, Atanh |x| < 0.9;
Tan |x| < 1.2 (away from +-pi/2); Abs |x| in (0.2, 2) (away from the kink at 0).
"""
import torch

from ..case import Case, Custom, Float


def abs_(x):
    return torch.abs(x)


def acos(x):
    return torch.acos(x)


def acosh(x):
    return torch.acosh(x)


def asin(x):
    return torch.asin(x)


def asinh(x):
    return torch.asinh(x)


def atan(x):
    return torch.atan(x)


def atanh(x):
    return torch.atanh(x)


def cos(x):
    return torch.cos(x)


def cosh(x):
    return torch.cosh(x)


def erf(x):
    return torch.erf(x)


def exp(x):
    return torch.exp(x)


def log(x):
    return torch.log(x)


def neg(x):
    return torch.neg(x)


def reciprocal(x):
    return torch.reciprocal(x)


def sin(x):
    return torch.sin(x)


def sinh(x):
    return torch.sinh(x)


def sqrt(x):
    return torch.sqrt(x)


def tan(x):
    return torch.tan(x)


def tanh(x):
    return torch.tanh(x)


def _away_from_zero(gen, float_dtype):
    """Magnitudes in [0.2, 2) with random signs: Abs is smooth on each element's side of 0."""
    mag = 0.2 + 1.8 * torch.rand((3, 4), generator=gen, dtype=torch.float64)
    sign = torch.where(torch.rand((3, 4), generator=gen) < 0.5, -1.0, 1.0).to(torch.float64)
    return (mag * sign).to(float_dtype)


WIDE = Float(3, 4)
UNIT = Float(3, 4, low=-0.9, high=0.9)
POSITIVE = Float(3, 4, low=0.5, high=3.0)

# (op, model, input spec): one case per op, named <op>_basic.
TABLE = [
    ("Abs", abs_, Custom(_away_from_zero)),
    ("Acos", acos, UNIT),
    ("Acosh", acosh, Float(3, 4, low=1.2, high=3.0)),
    ("Asin", asin, UNIT),
    ("Asinh", asinh, WIDE),
    ("Atan", atan, WIDE),
    ("Atanh", atanh, UNIT),
    ("Cos", cos, WIDE),
    ("Cosh", cosh, WIDE),
    ("Exp", exp, WIDE),
    ("Log", log, POSITIVE),
    ("Neg", neg, WIDE),
    ("Reciprocal", reciprocal, POSITIVE),
    ("Sin", sin, WIDE),
    ("Sinh", sinh, WIDE),
    ("Sqrt", sqrt, POSITIVE),
    ("Tan", tan, Float(3, 4, low=-1.2, high=1.2)),
    ("Tanh", tanh, WIDE),
]

CASES = [Case(op, f"{op.lower()}_basic", fn, (spec,), ("x",)) for op, fn, spec in TABLE] + [
    Case("Erf", "erf_basic", erf, (WIDE,), ("x",), float_dtype=torch.float32,
         notes="onnxruntime has no float64 Erf, and the onnx reference evaluator computes Erf in "
               "float32 (np.vectorize(math.erf, otypes='f')), which makes float64 finite "
               "differences noise (rel err 1.6e-2); in float32 onnxruntime runs it."),
]
