"""Ops that create tensors: Constant, ConstantOfShape, EyeLike, Range, Cast, CastLike, random ops.

Most of them have no floating data input, so the evidence is about outputs: a created
tensor is `detached` (PyTorch gives it no gradient path). Shapes come from a graph input
through Shape nodes (dynamic shapes) so the op is not folded into a constant. Ops whose
models need dynamic shapes are nn.Module subclasses: torch.export needs a forward with
named arguments to accept per-input dynamic shapes.

Random ops: torch and onnxruntime draw different samples, so the cases either make the
draw deterministic (Bernoulli with p in {0, 1}, Multinomial with one-hot probabilities)
or allow the forward check the full range of the distribution (see each case's notes).
"""
import numpy as np
import onnx.numpy_helper
import torch

from ..case import Case, Float, Fixed
from ..conventions import Applies, Convention
from .reference import onnx_opset, reference_op


# ----------------------------------------------------------------------------- Cast
def cast_to_float64(x):
    return x.to(torch.float64)


def castlike_type_as(x, like):
    return x.type_as(like)


# ----------------------------------------------------------------------------- Constant
def constant_only(x):
    return torch.tensor([1.5, -2.0, 3.25], dtype=torch.float64)


_VALUE = [1.5, -2.0, 3.25]


def _constant_emit():
    return onnx_opset().Constant(value=onnx.numpy_helper.from_array(np.array(_VALUE)))


@reference_op("Constant", emit=_constant_emit)
def constant_value() -> torch.Tensor:
    """Constant: its value attribute ([1.5, -2.0, 3.25], float64) as the output."""
    return torch.tensor(_VALUE, dtype=torch.float64)


def constant_only_ref(x):
    return constant_value()


def constant_beside_input_ref(x):
    return torch.neg(x), constant_value()


@reference_op("EyeLike")
def eye_like(input: torch.Tensor) -> torch.Tensor:
    """EyeLike: ones on the main diagonal of a matrix shaped and typed like ``input``."""
    return torch.eye(input.shape[0], input.shape[1], dtype=input.dtype)


def eyelike_ref(x):
    return eye_like(x)


def constant_beside_input(x):
    return torch.neg(x), torch.tensor([1.5, -2.0, 3.25], dtype=torch.float64)


class NewZeros(torch.nn.Module):
    def forward(self, x):
        return x.new_zeros(x.shape[0], 3)


class NewFull(torch.nn.Module):
    def forward(self, x):
        return torch.full((x.shape[0], x.shape[1]), 2.5, dtype=x.dtype)


class EyeFromShape(torch.nn.Module):
    def forward(self, x):
        return torch.eye(x.shape[0], x.shape[1], dtype=x.dtype)


class ArangeFloat(torch.nn.Module):
    def forward(self, x):
        return torch.arange(x.shape[1], dtype=x.dtype)


class ArangeInt(torch.nn.Module):
    def forward(self, x):
        return torch.arange(1, x.shape[1] * 3, 2)


# ----------------------------------------------------------------------------- random
def bernoulli(p):
    return torch.bernoulli(p)


def multinomial_one(probs):
    return torch.multinomial(probs, 1)


def rand_like(x):
    return torch.rand_like(x)


def randn_like(x):
    return torch.randn_like(x)


def rand_fixed_shape(x):
    return torch.rand(2, 3, dtype=torch.float64)


def randn_fixed_shape(x):
    return torch.randn(2, 3, dtype=torch.float64)


_DRAW_SHAPE = [2, 3]


def _random_uniform_emit():
    return onnx_opset().RandomUniform(shape=_DRAW_SHAPE, dtype=onnx.TensorProto.DOUBLE)


def _random_normal_emit():
    return onnx_opset().RandomNormal(shape=_DRAW_SHAPE, dtype=onnx.TensorProto.DOUBLE)


@reference_op("RandomUniform", emit=_random_uniform_emit)
def random_uniform_2x3() -> torch.Tensor:
    """RandomUniform (low 0, high 1, shape [2, 3], float64): torch.rand's draw."""
    return torch.rand(*_DRAW_SHAPE, dtype=torch.float64)


@reference_op("RandomNormal", emit=_random_normal_emit)
def random_normal_2x3() -> torch.Tensor:
    """RandomNormal (mean 0, scale 1, shape [2, 3], float64): torch.randn's draw."""
    return torch.randn(*_DRAW_SHAPE, dtype=torch.float64)


def rand_fixed_shape_ref(x):
    return random_uniform_2x3()


def randn_fixed_shape_ref(x):
    return random_normal_2x3()


_ARANGE = ("torch.arange takes start and step as Python numbers, so they export as constants; "
           "only limit can come from a tensor (a shape), and Range's float inputs never get a "
           "gradient from PyTorch code")
_RANGE_MATH = ("output[i] = start + i * delta with length ceil((limit - start) / delta): at a "
               "fixed length output moves smoothly with {0}, and the length jumps with it, as "
               "Resize's output size does with scales")
_RANGE_LIMIT = ("limit sets only the length ceil((limit - start) / delta): flat between the "
                "jumps of the length")
_BERNOULLI_FD = ("neither witness can speak: PyTorch's zero gradient for p is a surrogate "
                 "(bernoulli has no derivative to give), and finite differences of one random "
                 "realization are not the op's derivative (the numeric witness refuses sampling "
                 "ops)")
_BERNOULLI_MATH = ("one draw is 0 or 1, flat in p between jumps; the average E[output] = p has "
                   "derivative 1; " + _BERNOULLI_FD)
_BERNOULLI_SURROGATE = "torch.bernoulli's backward returns zeros for p by definition"
_RANDOM = ("torch and the ONNX runtime draw different samples, so the forward check compares "
           "the draw's shape and type only (engine/numeric.py)")

CASES = [
    Case("Cast", "cast_float32_to_float64", cast_to_float64, (Float(2, 3),), ("x",),
         float_dtype=torch.float32, fwd_tol=1e-6, vjp_tol=1e-3,
         notes="float32 -> float64. No float -> int64 case: its input gets no gradient only "
               "because the output type is integer, which says nothing of Cast's tag for "
               "float outputs"),
    Case("CastLike", "castlike_type_as", castlike_type_as, (Float(2, 3), Float(4, dtype=torch.float64)),
         ("x", "like"), float_dtype=torch.float32, export_options={"optimize": False},
         fwd_tol=1e-6, vjp_tol=1e-3,
         notes="x.type_as(like) exports CastLike(x, like), which the dynamo optimizer folds "
               "to Cast; optimize=False keeps it. float32 -> float64 (a cast down to float32 "
               "breaks the engine's float64 finite-difference step)"),
    Case("Constant", "constant_only", constant_only, (Float(2, 3),), ("x",),
         exporter="torchscript",
         notes="the dynamo exporter stores constants as initializers (no Constant node); "
               "TorchScript emits one Constant node. x is unused, so TorchScript drops it and "
               "the graph has no input. Without TorchScript: the reference constant_value, "
               "optimize=False (the optimizer folds a Constant node into an initializer)",
         without_torchscript={"model": constant_only_ref, "kind": "reference",
                              "translation": constant_value.translation,
                              "export_options": {"optimize": False}}),
    Case("Constant", "constant_beside_input", constant_beside_input, (Float(2, 3),), ("x",),
         exporter="torchscript",
         notes="the Constant output sits beside -x so the graph keeps an input (x * 2 would "
               "add a second Constant node for the 2). Without TorchScript: the reference "
               "constant_value, optimize=False (the optimizer folds a Constant node into an "
               "initializer)",
         without_torchscript={"model": constant_beside_input_ref, "kind": "reference",
                              "translation": constant_value.translation,
                              "export_options": {"optimize": False}}),
    Case("ConstantOfShape", "constantofshape_new_zeros", NewZeros, (Float(2, 3),), ("x",),
         dynamic=True,
         notes="x.new_zeros(x.shape[0], 3) with dynamic shapes: the shape input is "
               "Concat(Shape(x), [3])"),
    Case("ConstantOfShape", "constantofshape_full", NewFull, (Float(2, 3),), ("x",),
         exporter="torchscript", dynamic=True,
         notes="torch.full with a nonzero value; the dynamo exporter lowers it to Expand, "
               "TorchScript to ConstantOfShape"),
    Case("EyeLike", "eyelike_from_shape", EyeFromShape, (Float(2, 3),), ("x",),
         exporter="torchscript", dynamic=True,
         notes="TorchScript lowers torch.eye(n, m) with dynamic n, m to "
               "EyeLike(ConstantOfShape(...)); the dynamo exporter builds it from "
               "Range/Equal. Without TorchScript: the reference eye_like",
         without_torchscript={"model": eyelike_ref, "kind": "reference", "dynamic": False,
                              "translation": eye_like.translation}),
    Case("Range", "range_float", ArangeFloat, (Float(2, 3),), ("x",), dynamic=True,
         conventions={"input 0": Applies(Convention.SHAPE_SETTING, _RANGE_MATH.format("start")),
                      "input 1": Applies(Convention.SHAPE_SETTING, _RANGE_LIMIT),
                      "input 2": Applies(Convention.SHAPE_SETTING, _RANGE_MATH.format("delta"))},
         notes="arange(x.shape[1]) in float64: start and delta are float constants, "
               "limit is Cast(Shape(x))"),
    Case("Range", "range_int", ArangeInt, (Float(2, 3),), ("x",), dynamic=True,
         unexercised={"input 0": _ARANGE, "input 2": _ARANGE,
                      "input 1": "an int64 limit (from x's shape); range_float has float ones",
                      "output 0": "int64 here; range_float has a float output"},
         notes="arange(1, 3 * x.shape[1], 2): int64 start and delta constants"),
    Case("Bernoulli", "bernoulli_deterministic", bernoulli,
         (Fixed([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]]),), ("p",),
         conventions={"input 0": Applies(Convention.SAMPLING, _BERNOULLI_MATH),
                      "output 0": Applies(Convention.SAMPLING, _BERNOULLI_MATH)},
         surrogate={"input 0": _BERNOULLI_SURROGATE, "output 0": _BERNOULLI_SURROGATE},
         fixed_draw="p in {0, 1}: every draw is p itself", opsets=(22, 28),
         notes="p in {0, 1} makes the draw deterministic (opsets: Bernoulli-15, in force "
               "at 15-21, runs in onnxruntime's kernel, which breaks the spec as said "
               "next). onnxruntime 1.31 has no "
               "Bernoulli-22 kernel, so the reference evaluator runs it; at opset 21 "
               "onnxruntime's Bernoulli-15 kernel samples 1 with probability 1 - p (p=0 gives "
               "all ones, p=0.1 a mean of 0.90), contradicting the spec and torch"),
    Case("Multinomial", "multinomial_one_hot", multinomial_one,
         (Fixed([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]),), ("probs",), float_dtype=torch.float32, opset=21,
         fixed_draw="one-hot probabilities: every draw picks the one class of weight 1",
         fails_at={22: "no runtime implements Multinomial-22: onnxruntime has no kernel for "
                       "it, onnx.reference no Multinomial"},
         notes="one-hot probabilities make the draw deterministic; the exporter feeds "
               "Log(probs) (-inf for the zeros) as logits. onnxruntime 1.31 has no kernel "
               "for Multinomial-22 (nor the reference evaluator for any version), hence "
               "opset 21 (Multinomial-7), and none in float64, hence float32"),
    Case("RandomUniformLike", "randomuniformlike_rand_like", rand_like, (Float(2, 3),), ("x",),
         notes="samples in [0, 1): " + _RANDOM),
    Case("RandomNormalLike", "randomnormallike_randn_like", randn_like, (Float(2, 3),), ("x",),
         notes="standard normal samples: " + _RANDOM),
    Case("RandomUniform", "randomuniform_fixed_shape", rand_fixed_shape, (Float(2, 3),), ("x",),
         exporter="torchscript",
         notes="torch.rand with a constant shape: TorchScript emits RandomUniform (the dynamo "
               "exporter uses RandomUniformLike on a ConstantOfShape); x is unused and "
               "dropped. Samples in [0, 1): " + _RANDOM + ". Without TorchScript: the "
               "reference random_uniform_2x3, one RandomUniform node",
         without_torchscript={"model": rand_fixed_shape_ref, "kind": "reference",
                              "translation": random_uniform_2x3.translation}),
    Case("RandomNormal", "randomnormal_fixed_shape", randn_fixed_shape, (Float(2, 3),), ("x",),
         exporter="torchscript",
         notes="torch.randn with a constant shape: TorchScript emits RandomNormal; x is "
               "unused and dropped. " + _RANDOM + ". Without TorchScript: the reference "
               "random_normal_2x3, one RandomNormal node",
         without_torchscript={"model": randn_fixed_shape_ref, "kind": "reference",
                              "translation": random_normal_2x3.translation}),
]
