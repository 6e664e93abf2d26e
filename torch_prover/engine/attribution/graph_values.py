"""What an ONNX graph states of its values without running it: a Constant node's value and
the shapes onnx's shape inference gives. The one reader of each, for the adapters
(``adapters.ModelView``, ``adapter_specials``), fidelity's shape checks and the names of
folded parameters (``folding``): read two ways, a ``value_float`` Constant was a value
to the adapters and nothing to ``folding``.
"""
from __future__ import annotations

import numpy as np
import onnx
import onnx.helper
import onnx.numpy_helper
import onnx.shape_inference

LIST_VALUES = {"value_float": np.float32, "value_floats": np.float32,
               "value_int": np.int64, "value_ints": np.int64}
"""A Constant's value attributes other than the tensor ``value``, and the element type the
ONNX spec gives the tensor each stands for (Constant-12: ``value_float`` a float32 scalar,
``value_floats`` a 1-D float32 tensor, ``value_int(s)`` the same in int64)."""


def attribute_value(a: onnx.AttributeProto) -> np.ndarray | None:
    """The tensor a Constant's value attribute ``a`` stands for (None: not one we read --
    ``sparse_value``, ``value_string(s)``)."""
    if a.name == "value":
        return onnx.numpy_helper.to_array(a.t)
    if a.name in LIST_VALUES:
        return np.array(onnx.helper.get_attribute_value(a), dtype=LIST_VALUES[a.name])
    return None


def constant_value(node: onnx.NodeProto) -> np.ndarray | None:
    """The value of a Constant ``node``, whichever attribute holds it (None: none we read)."""
    for a in node.attribute:
        value = attribute_value(a)
        if value is not None:
            return value
    return None


def inferred_shapes(model: onnx.ModelProto) -> dict[str, list[int | None]]:
    """The shape of every value of the main graph that onnx's shape inference (or, where it
    fails, the model's own declarations) gives a shape: a dimension without a static size
    is None; an initializer's shape is its dims."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:   # inference is best effort: what the model declares stays
        inferred = model
    g = inferred.graph
    out: dict[str, list[int | None]] = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        t = vi.type.tensor_type
        if vi.type.HasField("tensor_type") and t.HasField("shape"):
            out[vi.name] = [d.dim_value if d.HasField("dim_value") else None
                            for d in t.shape.dim]
    for init in g.initializer:
        out[init.name] = list(init.dims)
    return out
