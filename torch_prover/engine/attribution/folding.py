"""Which module parameter a folded constant holds: so a report names it.

Why: an exporter folds a module parameter into a constant when the graph reads it through
parameter-only computation it evaluates ahead of time (TorchScript's constant folding, the
dynamo exporter's optimizer). The node then reads a constant, and the autograd witness has
nothing to say of it -- but the report should not call PyTorch's ``weight`` a nameless
``constant float32``. A constant the node reads (directly, or through value-preserving glue)
whose value is exactly a folded parameter's, or its transpose, is that parameter.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import onnx
import onnx.numpy_helper
import torch

from .graph_values import constant_value
from .mapping import VALUE_SLOTS


def _constants(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    values = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant" and node.output:
            value = constant_value(node)
            if value is not None:
                values[node.output[0]] = value
    return values


def _same(value: np.ndarray, param: np.ndarray) -> bool:
    if value.shape == param.shape and np.array_equal(value, param.astype(value.dtype)):
        return True
    return value.ndim == 2 and value.T.shape == param.shape and np.array_equal(
        value.T, param.astype(value.dtype))


def folded_parameters(model: onnx.ModelProto, node_index: int | None,
                      params: Mapping[str, torch.Tensor], folded: Sequence[str]
                      ) -> dict[int, str]:
    """Node input index -> the folded module parameter the constant it reads holds."""
    if node_index is None or not folded:
        return {}
    values = _constants(model)
    producer = {o: n for n in model.graph.node for o in n.output if o}
    found: dict[int, str] = {}
    for i, name in enumerate(model.graph.node[node_index].input):
        while name and name not in values and name in producer and \
                producer[name].op_type in VALUE_SLOTS and producer[name].input:
            name = producer[name].input[0]
        value = values.get(name)
        if value is None or not np.issubdtype(value.dtype, np.floating):
            continue
        hits = [p for p in folded if p in params and _same(value, params[p].detach().numpy())]
        if len(hits) == 1:
            found[i] = hits[0]
    return found
