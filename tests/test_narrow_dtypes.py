"""Issue 34, part 3: float16 and bfloat16 models never crash the proof.

numpy has no bfloat16 (``Tensor.numpy()`` raised TypeError: an internal error, exit 3), and a
finite difference at float16's resolution cannot tell a derivative from rounding. The
numeric witnesses run on a float32 copy of the model (``float32_copy.widened_copy``), fed
the same values (float32 holds every float16 and bfloat16 value exactly), and the record
says so. Expectations: Tanh-13's X and Y are differentiable (tanh' = 1 - tanh^2 > 0), so
each parameter agrees, decided by both witnesses; the copy changes no value.
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch

import torch_prover
from torch_prover.engine.versions.float32_copy import narrow_types, widened_copy


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_narrow_float_model_is_proved(dtype):
    x = torch.linspace(-2, 2, 12).reshape(3, 4).to(dtype)
    proof = torch_prover.prove(torch.tanh, [x], op="Tanh", opset=18)
    rec = proof.record()
    name = str(dtype).removeprefix("torch.")
    assert narrow_types(proof.model) == (name,)
    assert {(p["io"], p["index"]): p["verdict"] for p in rec["parameters"]} == {
        ("input", 0): "agree", ("output", 0): "agree"}
    assert any(f"float32 copy of the {name} model" in n for n in rec["notes"]), rec["notes"]
    assert rec["numeric"]["forward_ok"] is True
    x_in = next(p for p in rec["parameters"] if p["io"] == "input")
    assert x_in["witnesses"]["numeric"]["outcome"] == "smooth"


@pytest.mark.parametrize("elem", [onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16])
def test_the_widened_copy_keeps_every_value(elem):
    from onnx import helper, numpy_helper
    values = np.array([0.1, -3.5, 1e-3, 65504.0 if elem == onnx.TensorProto.FLOAT16 else 3e38],
                      dtype=np.float32)
    const = helper.make_tensor("c", elem, [4], values.tolist())
    graph = helper.make_graph([helper.make_node("Add", ["x", "c"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", elem, [4])],
                              [helper.make_tensor_value_info("y", elem, [4])], [const])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    copy = widened_copy(model)
    assert narrow_types(copy) == ()
    assert copy.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    narrow = numpy_helper.to_array(model.graph.initializer[0]).astype(np.float32)
    assert np.array_equal(numpy_helper.to_array(copy.graph.initializer[0]), narrow)
