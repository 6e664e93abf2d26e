"""engine/attribution/graph_values.py: the one reader of a Constant's value and of a graph's inferred
shapes. The expectations come from ONNX: a Constant's output is what onnx.reference
computes for it (the spec's dtypes: value_float(s) float32, value_int(s) int64), a shape is
what the model declares."""
from __future__ import annotations

import numpy as np
import onnx.helper as oh
import pytest
import torch
from onnx import TensorProto
from onnx.numpy_helper import from_array
from onnx.reference import ReferenceEvaluator

from torch_prover.engine.versions import fidelity
from torch_prover.engine.versions.adapters import ModelView
from torch_prover.engine.attribution.folding import folded_parameters
from torch_prover.engine.attribution.graph_values import constant_value, inferred_shapes

W = np.array([0.5, -1.25, 2.0], np.float32)
CONSTANTS = {"value": from_array(W), "value_floats": [0.5, -1.25, 2.0], "value_float": 0.75,
             "value_ints": [3, -1, 4], "value_int": 7}


def _constant_model(attribute: str, value) -> tuple:
    node = oh.make_node("Constant", [], ["c"], **{attribute: value})
    g = oh.make_graph([node], "g", [], [oh.make_tensor_value_info("c", TensorProto.UNDEFINED,
                                                                  None)])
    return node, oh.make_model(g, opset_imports=[oh.make_opsetid("", 13)])


@pytest.mark.parametrize("attribute", sorted(CONSTANTS))
def test_a_constants_value_is_what_onnx_computes_for_it(attribute):
    node, model = _constant_model(attribute, CONSTANTS[attribute])
    want = ReferenceEvaluator(model).run(None, {})[0]
    got = constant_value(node)
    assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
    assert np.array_equal(ModelView(model).constant("c"), want)


@pytest.mark.parametrize("attribute", ["value", "value_floats"])
def test_a_folded_parameter_is_named_whichever_attribute_holds_its_constant(attribute):
    """folding read only ``value``: a module parameter folded into a value_floats Constant
    (the same tensor, ONNX-12's other spelling) went unnamed."""
    const = oh.make_node("Constant", [], ["w"], **{attribute: CONSTANTS[attribute]})
    mul = oh.make_node("Mul", ["x", "w"], ["y"])
    g = oh.make_graph([const, mul], "g", [oh.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                      [oh.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = oh.make_model(g, opset_imports=[oh.make_opsetid("", 13)])
    assert folded_parameters(model, 1, {"weight": torch.from_numpy(W)}, ["weight"]) == {
        1: "weight"}


def test_one_shape_reading_for_the_adapters_and_fidelity():
    """A declared static shape, a dynamic one (None), an initializer's dims: the adapters see
    them all, fidelity's static shapes only the static ones."""
    add = oh.make_node("Add", ["x", "b"], ["y"])
    g = oh.make_graph([add], "g", [oh.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
                      [oh.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                      initializer=[from_array(W, "b")])
    model = oh.make_model(g, opset_imports=[oh.make_opsetid("", 13)])
    shapes = inferred_shapes(model)
    assert shapes["x"] == [None, 3] and shapes["b"] == [3] and shapes["y"] == [None, 3]
    view = ModelView(model)
    assert [view.shape(n) for n in ("x", "b", "y")] == [[None, 3], [3], [None, 3]]
    assert fidelity.static_shapes(model) == {"b": (3,)}
