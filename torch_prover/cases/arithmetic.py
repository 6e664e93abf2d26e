"""Binary arithmetic: ONNX's guide uses Add as its worked example."""
import torch

from ..case import Case, Expect, Float


def add(a, b):
    return a + b


def add_self(a):
    """One tensor feeding both inputs of Add (tests: autograd cannot credit either input)."""
    return a + a


CASES = [
    Case("Add", "add_same_shape", add, (Float(3, 4), Float(3, 4)), ("a", "b")),
    Case("Add", "add_broadcast", add, (Float(3, 4), Float(4)), ("a", "b")),
]


# --------------------------------------------------------------------------- Sub, Mul, Div
def sub(a, b):
    return a - b


def mul(a, b):
    return a * b


def div(a, b):
    return a / b


CASES += [
    Case("Sub", "sub_same_shape", sub, (Float(3, 4), Float(3, 4)), ("a", "b")),
    Case("Sub", "sub_broadcast", sub, (Float(3, 4), Float(4)), ("a", "b")),
    Case("Mul", "mul_same_shape", mul, (Float(3, 4), Float(3, 4)), ("a", "b")),
    Case("Mul", "mul_broadcast", mul, (Float(2, 3, 4), Float(3, 1)), ("a", "b")),
    Case("Div", "div_same_shape", div, (Float(3, 4), Float(3, 4, low=0.5, high=2.0)), ("a", "b"),
         notes="divisor drawn from [0.5, 2) to keep away from the pole at 0."),
    Case("Div", "div_broadcast", div, (Float(3, 4), Float(4, low=0.5, high=2.0)), ("a", "b"),
         notes="divisor drawn from [0.5, 2) to keep away from the pole at 0."),
]


# --------------------------------------------------------------------------- Pow
def pow_tensor_tensor(base, exponent):
    return torch.pow(base, exponent)


def pow_tensor_scalar(base):
    return torch.pow(base, 3.0)


CASES += [
    Case("Pow", "pow_tensor_exponent", pow_tensor_tensor,
         (Float(3, 4, low=0.5, high=2.0), Float(3, 4, low=-2.0, high=2.0)), ("base", "exponent"),
         notes="base > 0 so d/dY = X^Y log X exists; both inputs carry gradients."),
    Case("Pow", "pow_scalar_exponent", pow_tensor_scalar, (Float(3, 4),), ("base",),
         notes="x ** 3.0: the exponent exports as a float constant (not exercised here; "
               "pow_tensor_exponent exercises it)."),
]


# --------------------------------------------------------------------------- Mod
def mod_fmod(a, b):
    return torch.fmod(a, b)


_FMOD_DIVISOR = ("torch's fmod backward gives the divisor the gradient -trunc(a/b) * dy "
                 "(derivatives.yaml), nonzero wherever |a| >= |b|, and finite differences of "
                 "ONNX Mod(fmod=1) confirm it: fmod(a, b) = a - trunc(a/b)*b is piecewise "
                 "smooth in b, not piecewise constant; ONNX tags B non-differentiable")

CASES += [
    Case("Mod", "mod_fmod_float", mod_fmod,
         (Float(3, 4, low=-5.0, high=5.0), Float(3, 4, low=1.1, high=1.9)), ("a", "b"),
         expect={"input 1": Expect("disagree", _FMOD_DIVISOR)},
         notes="torch.fmod exports as Mod(fmod=1). For the seeds used a/b stays >= 0.01 from "
               "every integer, so finite differences never cross a jump of trunc(a/b). Float "
               "torch.remainder is decomposed (Div, Floor, Mul, Sub) and never reaches Mod; "
               "integer torch.remainder exports Mod(fmod=0) but int64 inputs carry no "
               "evidence about the float tags, so it is not a case."),
]


# --------------------------------------------------------------------------- Max, Min
def max_elementwise(a, b):
    return torch.maximum(a, b)


def min_elementwise(a, b):
    return torch.minimum(a, b)


CASES += [
    Case("Max", "max_maximum", max_elementwise, (Float(3, 4), Float(3, 4)), ("a", "b"),
         notes="ONNX Max is variadic; torch.maximum gives two inputs (data_0 indices 0 and 1). "
               "randn inputs: ties have probability zero."),
    Case("Max", "max_broadcast", max_elementwise, (Float(3, 4), Float(4)), ("a", "b"),
         fails_at={6: "Max-6 has no broadcasting (all inputs one shape; from Max-8 they "
                      "broadcast): this case's [3, 4] and [4] do"}),
    Case("Min", "min_minimum", min_elementwise, (Float(3, 4), Float(3, 4)), ("a", "b"),
         notes="ONNX Min is variadic; torch.minimum gives two inputs. randn inputs: no ties."),
    Case("Min", "min_broadcast", min_elementwise, (Float(3, 4), Float(4)), ("a", "b"),
         fails_at={6: "Min-6 has no broadcasting (all inputs one shape; from Min-8 they "
                      "broadcast): this case's [3, 4] and [4] do"}),
]
