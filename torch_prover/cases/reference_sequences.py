"""Reference cases for sequence and optional ops no exporter emits at top level.

SequenceConstruct, SequenceMap, Optional and OptionalGetElement: TorchScript emits them
only inside Loop/If bodies or as the start of a list a Loop fills, where attribution is
ambiguous, and torch.export has no list or optional values. A reference op's
translation emits the target node and the glue that turns its value back into a tensor,
so the model's output is a tensor PyTorch can backpropagate into.

* ``SequenceConstruct(a, b, c)`` read back by ``ConcatFromSequence``: the reference is
  ``torch.cat([a, b, c])``, every element reaches the output, so each input's gradient is
  its own slice of ``dy`` (a ``SequenceAt`` read-back would leave the other elements
  without a gradient, which autograd would report as evidence of non-differentiability).
* ``SequenceMap(SequenceConstruct(a, b), w)`` with the body ``x * w``, read back by
  ``ConcatFromSequence``: input 0 is ``a`` and ``b`` together (assembled by glue alone,
  so attributed to both), input 1 is ``w``.
* ``Optional(x)`` read back by ``OptionalGetElement``: the reference is the identity; the
  same model proves both ops (each is the other's glue). ``OptionalGetElement`` on a
  plain tensor (allowed since opset 18) is a case of its own.

The glue (``ConcatFromSequence``, ``OptionalGetElement``, ``Optional``) is value-preserving
(``engine/attribution/mapping.py: VALUE_SLOTS``), so attribution stays exact and PyTorch's gradient
counts as evidence about the target node. The exporter's optimizer folds
``ConcatFromSequence(SequenceConstruct(...))`` into one ``Concat``, so that case exports
with ``optimize=False`` (it leaves the Optional pair and SequenceMap alone: measured).
The numeric witness measures the isolated node with sequence and optional values as they
are (a sequence perturbed and differenced element by element).
"""
import onnx
import onnx.helper
import torch

from ..case import DEFAULT_OPSET, Case, Float
from ..conventions import Applies, Convention
from .reference import onnx_opset, reference_op

Tensor = torch.Tensor

_NO_OPTIMIZE = ("optimize=False: the exporter's optimizer folds ConcatFromSequence("
                "SequenceConstruct(...)) into one Concat (measured)")


# --------------------------------------------------------------------------- references
def _construct_concat_emit(inputs_0, inputs_1, inputs_2, axis: int):
    op = onnx_opset()
    return op.ConcatFromSequence(op.SequenceConstruct(inputs_0, inputs_1, inputs_2), axis=axis)


@reference_op("SequenceConstruct", emit=_construct_concat_emit)
def sequence_construct_concat(inputs_0: Tensor, inputs_1: Tensor, inputs_2: Tensor,
                              axis: int) -> Tensor:
    """ConcatFromSequence(SequenceConstruct(inputs_0, inputs_1, inputs_2), axis)."""
    return torch.cat([inputs_0, inputs_1, inputs_2], dim=axis)


def _scale_body() -> onnx.GraphProto:
    """SequenceMap's body: ``y = x * w`` for one element ``x`` and the additional input
    ``w``. Its value names are its own: a name of the outer graph (the exporter names
    graph inputs after the Python arguments) would read, to the engine, as a value the
    body captures from the enclosing scope."""
    double = onnx.TensorProto.DOUBLE
    return onnx.helper.make_graph(
        [onnx.helper.make_node("Mul", ["body_x", "body_w"], ["body_y"])], "scale_body",
        [onnx.helper.make_tensor_value_info("body_x", double, None),
         onnx.helper.make_tensor_value_info("body_w", double, None)],
        [onnx.helper.make_tensor_value_info("body_y", double, None)])


def _sequence_map_emit(a, b, w):
    """``ConcatFromSequence(SequenceMap(SequenceConstruct(a, b), w, body=x * w))``.

    SequenceMap is called through its ``Op`` with ``additional_inputs`` by keyword: torch
    2.13's recorder (``_building._construct_named_inputs_and_attrs``) gives a variadic
    parameter *all* positional arguments, so ``op.SequenceMap(seq, w)`` would emit
    ``SequenceMap(seq, seq, w)``."""
    from onnxscript import values

    op = onnx_opset()
    sequence_map = values.Op(op, "SequenceMap", onnx.defs.get_schema("SequenceMap", DEFAULT_OPSET))
    mapped = sequence_map(op.SequenceConstruct(a, b), additional_inputs=(w,), body=_scale_body())
    return op.ConcatFromSequence(mapped, axis=0)


@reference_op("SequenceMap", emit=_sequence_map_emit)
def sequence_map_scale(a: Tensor, b: Tensor, w: Tensor) -> Tensor:
    """The body ``x * w`` applied to each of ``a``, ``b``; the results concatenated."""
    return torch.cat([a * w, b * w], dim=0)


def _optional_get_emit(input):
    op = onnx_opset()
    return op.OptionalGetElement(op.Optional(input))


@reference_op("Optional", emit=_optional_get_emit)
def optional_then_get(input: Tensor) -> Tensor:
    """OptionalGetElement(Optional(input)): the identity."""
    return input.clone()


@reference_op("OptionalGetElement")
def optional_get_element_of_tensor(input: Tensor) -> Tensor:
    """OptionalGetElement on a plain tensor (allowed since opset 18): the identity."""
    return input.clone()


# --------------------------------------------------------------------------- models
def sequenceconstruct_concat(a, b, c):
    return sequence_construct_concat(a, b, c, 0)


def sequencemap_scale(a, b, w):
    return sequence_map_scale(a, b, w)


def optional_round_trip(x):
    return optional_then_get(x)


def optionalgetelement_tensor(x):
    return optional_get_element_of_tensor(x)


CASES = [
    Case("SequenceConstruct", "sequenceconstruct_concat", sequenceconstruct_concat,
         (Float(2, 3), Float(1, 3), Float(3, 3)), ("a", "b", "c"), kind="reference",
         translation=sequence_construct_concat.translation,
         export_options={"optimize": False},
         notes=_NO_OPTIMIZE + "; three tensors of different lengths along the concatenated "
                              "axis"),
    Case("SequenceMap", "sequencemap_scale", sequencemap_scale, (Float(2, 3), Float(1, 3), Float(3)),
         ("a", "b", "w"), kind="reference", translation=sequence_map_scale.translation,
         conventions={k: Applies(Convention.BODY_DEPENDENT, "differentiable through this "
                                 "case's body x * w (both witnesses); a Floor body would be "
                                 "flat") for k in ("input 0", "input 1", "output 0")},
         notes="the sequence SequenceConstruct(a, b) (so input 0 is a and b together) mapped "
               "by the body x * w, w the additional input 1; float64 only (the body is typed "
               "double)"),
    Case("Optional", "optional_of_tensor", optional_round_trip, (Float(2, 3),), ("x",),
         kind="reference", translation=optional_then_get.translation, opsets=(15, 27),
         notes="Optional(x) read back by OptionalGetElement (glue); at opset 28 the glue "
               "is OptionalGetElement-28, and onnx.reference (no runtime runs opset 28) "
               "returns a (1, 2, 3) tensor for the (2, 3) one: a forward mismatch, so "
               "Optional-28 is left to a case whose glue is the same there"),
    Case("OptionalGetElement", "optionalgetelement_of_optional", optional_round_trip,
         (Float(2, 3),), ("x",), kind="reference", translation=optional_then_get.translation,
         opsets=(15, 27),
         notes="the model of optional_of_tensor: here Optional(x) is the glue (not at opset "
               "28: see optional_of_tensor)"),
    Case("OptionalGetElement", "optionalgetelement_tensor", optionalgetelement_tensor,
         (Float(3, 2),), ("x",), kind="reference",
         translation=optional_get_element_of_tensor.translation,
         fails_at={15: "OptionalGetElement-15 takes an optional only: a tensor input is "
                       "allowed from -18"},
         notes="the input is a tensor, not an optional: since opset 18 OptionalGetElement "
               "returns a tensor or sequence input as it is"),
]
