"""The sequence cases' dynamo ways (``Case.without_torchscript`` in cases/sequences.py).

Only the TorchScript exporter emits sequence ops from PyTorch code (a scripted list of
tensors); torch.export has no list values. Without TorchScript each case's graph is
emitted by a reference op's translation instead: the same target node and the same glue
as the scripted export (``SplitToSequence`` making the sequence, ``ConcatFromSequence``
or ``SequenceAt`` reading it back), so the model's output is a tensor PyTorch can
backpropagate into, and the reference computes it with ordinary torch ops. Constant
positions and splits are int64 ``Constant`` inputs, as the scripted export has them.
"""
import torch

from .reference import onnx_opset, reference_op

Tensor = torch.Tensor


def _ints(op, value: int):
    return op.Constant(value_int=value)


def _split_concat_emit(input, split: int, axis: int):
    op = onnx_opset()
    return op.ConcatFromSequence(op.SplitToSequence(input, _ints(op, split), axis=0),
                                 axis=axis)


@reference_op("SplitToSequence", emit=_split_concat_emit)
def split_concat_seq(input: Tensor, split: int, axis: int) -> Tensor:
    """ConcatFromSequence(SplitToSequence(input, split, axis=0), axis): torch.cat of
    torch.split."""
    return torch.cat(torch.split(input, split), axis)


def _unbind_stack_emit(input, axis: int):
    op = onnx_opset()
    return op.ConcatFromSequence(op.SplitToSequence(input, axis=0, keepdims=0), axis=axis,
                                 new_axis=1)


@reference_op("SplitToSequence", emit=_unbind_stack_emit)
def unbind_stack_seq(input: Tensor, axis: int) -> Tensor:
    """ConcatFromSequence(SplitToSequence(input, keepdims=0), axis, new_axis=1): torch.stack
    of torch.unbind."""
    return torch.stack(torch.unbind(input, 0), axis)


def _split_at_emit(input, position: int):
    op = onnx_opset()
    return op.SequenceAt(op.SplitToSequence(input, _ints(op, 1), axis=0), _ints(op, position))


@reference_op("SequenceAt", emit=_split_at_emit)
def split_at_seq(input: Tensor, position: int) -> Tensor:
    """SequenceAt(SplitToSequence(input, 1), position)."""
    return torch.split(input, 1)[position].clone()


def _split_at_input_emit(input, position):
    op = onnx_opset()
    return op.SequenceAt(op.SplitToSequence(input, _ints(op, 1), axis=0), position)


def _split_at_input_fake(input: Tensor, position: Tensor) -> Tensor:
    return input.new_empty((1,) + tuple(input.shape[1:]))


@reference_op("SequenceAt", emit=_split_at_input_emit, fake=_split_at_input_fake)
def split_at_input_seq(input: Tensor, position: Tensor) -> Tensor:
    """SequenceAt(SplitToSequence(input, 1), position) with the position a tensor."""
    return torch.split(input, 1)[int(position)].clone()


def _split_length_emit(input):
    op = onnx_opset()
    return op.SequenceLength(op.SplitToSequence(input, _ints(op, 1), axis=0))


def _split_length_fake(input: Tensor) -> Tensor:
    return input.new_empty((), dtype=torch.int64)


@reference_op("SequenceLength", emit=_split_length_emit, fake=_split_length_fake)
def split_length_seq(input: Tensor) -> Tensor:
    """SequenceLength(SplitToSequence(input, 1)): the number of rows, int64."""
    return torch.tensor(len(torch.split(input, 1)), dtype=torch.int64)


def _split_erase_emit(input, position: int):
    op = onnx_opset()
    seq = op.SplitToSequence(input, _ints(op, 1), axis=0)
    return op.ConcatFromSequence(op.SequenceErase(seq, _ints(op, position)), axis=0)


@reference_op("SequenceErase", emit=_split_erase_emit)
def split_erase_seq(input: Tensor, position: int) -> Tensor:
    """ConcatFromSequence(SequenceErase(SplitToSequence(input, 1), position), axis=0)."""
    parts = list(torch.split(input, 1))
    del parts[position]
    return torch.cat(parts, 0)


def _split_insert_emit(input, tensor, position: int):
    op = onnx_opset()
    seq = op.SplitToSequence(input, _ints(op, 1), axis=0)
    return op.ConcatFromSequence(op.SequenceInsert(seq, tensor, _ints(op, position)), axis=0)


@reference_op("SequenceInsert", emit=_split_insert_emit)
def split_insert_seq(input: Tensor, tensor: Tensor, position: int) -> Tensor:
    """ConcatFromSequence(SequenceInsert(SplitToSequence(input, 1), tensor, position))."""
    parts = list(torch.split(input, 1))
    parts.insert(position, tensor)
    return torch.cat(parts, 0)


def split_concat_ref(x):
    return split_concat_seq(x, 2, 1)


def unbind_stack_ref(x):
    return unbind_stack_seq(x, 1)


def split_at_ref(x):
    return split_at_seq(x, 2)


def split_at_dynamic_ref(x, n):
    return split_at_input_seq(x, n)


def split_length_ref(x):
    return split_length_seq(x)


def split_erase_ref(x):
    return split_erase_seq(x, 1)


def split_insert_ref(x, y):
    return split_insert_seq(x, y, 1)


def way(model, ref) -> dict:
    """The ``without_torchscript`` of a sequence case: ``model`` calling reference ``ref``;
    optimize=False, as cases/reference_sequences.py measured the optimizer folding
    ConcatFromSequence(SplitToSequence(...))."""
    return {"model": model, "kind": "reference", "translation": ref.translation,
            "export_options": {"optimize": False}}


def _has_element_emit(input):
    op = onnx_opset()
    return op.OptionalHasElement(op.Optional(input))


def _has_element_fake(input: Tensor) -> Tensor:
    return input.new_empty((), dtype=torch.bool)


@reference_op("OptionalHasElement", emit=_has_element_emit, fake=_has_element_fake)
def has_element_seq(input: Tensor) -> Tensor:
    """OptionalHasElement(Optional(input)): true (the optional holds the input)."""
    return torch.tensor(True)


def has_element_ref(x):
    return has_element_seq(x)
