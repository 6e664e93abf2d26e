"""Issue 26 part 4: the numeric witness knows the precision its runtime computed in.

Expectations come from how each function below is computed (float64 throughout, a float32
step inside, a genuine jump), not from the module under test.
"""
from __future__ import annotations

import math

import numpy as np
import onnx
import onnx.helper as oh
from onnx import TensorProto

from torch_prover.engine.numeric.precision import computed_precision, model_precision
from torch_prover.engine.numeric.numeric import Runner

X = np.random.default_rng(0).standard_normal(40)
V = np.random.default_rng(1).standard_normal(40) * (np.abs(X) + 1) / 2


def _at(f):
    return lambda t: [f(X + t * V)]


def test_float64_arithmetic_is_float64():
    assert computed_precision(_at(np.tanh), "float64").computed == "float64"
    assert computed_precision(_at(lambda x: np.exp(3 * x) * np.sin(x)), "float64").computed \
        == "float64"


def test_a_float32_step_inside_is_float32():
    erf32 = np.vectorize(math.erf, otypes=["f"])        # as onnx.reference's Erf
    gelu = lambda x: 0.5 * x * (1 + erf32(x / math.sqrt(2)).astype(np.float64))  # noqa: E731
    p = computed_precision(_at(gelu), "float64", "onnx.reference")
    assert (p.computed, p.lowered) == ("float32", True)
    assert p.words() == "onnx.reference computed these float64 values at float32 resolution"


def test_a_jump_is_not_a_precision():
    """Floor of a fine grid: a few elements cross a step, the rest are flat."""
    assert computed_precision(_at(lambda x: np.floor(50 * x)), "float64").computed == "float64"
    quantized = lambda x: np.round(x / 0.1) * 0.1      # noqa: E731 - a fake quantizer
    assert computed_precision(_at(quantized), "float32").computed == "float32"


def test_a_refused_point_claims_nothing():
    def refuse(t):
        raise ValueError("out of range")
    assert computed_precision(refuse, "float64").computed == "float64"


def _gelu_model(dtype: int) -> onnx.ModelProto:
    node = oh.make_node("Gelu", ["x"], ["y"])
    graph = oh.make_graph([node], "g", [oh.make_tensor_value_info("x", dtype, [3, 4])],
                          [oh.make_tensor_value_info("y", dtype, [3, 4])])
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 20)], ir_version=10)


def test_onnx_reference_gelu_in_float64_is_float32_inside():
    """onnx.reference's Erf computes in float32 (op_erf.py: otypes=["f"])."""
    runner = Runner(_gelu_model(TensorProto.DOUBLE), "reference")
    feeds = {"x": np.random.default_rng(2).standard_normal((3, 4))}
    assert model_precision(runner.run, feeds, "float64", "onnx.reference").computed == "float32"


def test_onnxruntime_float32_gelu_is_float32():
    runner = Runner(_gelu_model(TensorProto.FLOAT), "onnxruntime")
    feeds = {"x": np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)}
    assert model_precision(runner.run, feeds, "float32").computed == "float32"


def test_a_random_draw_is_not_a_precision():
    """A runtime that draws anew on every run: its outputs say nothing about precision."""
    rng = np.random.default_rng(3)
    noisy = lambda feeds: [feeds["x"] * 2, rng.standard_normal(4)]   # noqa: E731
    feeds = {"x": np.linspace(-1, 1, 4)}
    assert model_precision(noisy, feeds, "float64", drawn={1}).computed == "float64"
    assert model_precision(noisy, feeds, "float64").computed != "float64"
