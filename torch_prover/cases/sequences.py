"""Sequence ops. Only the TorchScript exporter emits them, and only for scripted code
(torch.jit.script) that keeps a Python list of tensors alive: tracing turns lists into
separate tensors. Each model is a factory returning the scripted module.

A sequence is never a graph output here (PyTorch returns tensors); the target op's
sequence output reaches the graph output through ConcatFromSequence / SequenceAt.
"""
from typing import Optional

import torch

from ..case import Case, Float, Fixed
from .reference_sequence_ops import (has_element_ref, has_element_seq, split_at_dynamic_ref, split_at_input_seq, split_at_ref,
                                     split_at_seq, split_concat_ref, split_concat_seq,
                                     split_erase_ref, split_erase_seq, split_insert_ref,
                                     split_insert_seq, split_length_ref, split_length_seq,
                                     unbind_stack_ref, unbind_stack_seq, way)

_TS = "sequence ops come only from the TorchScript exporter on scripted (not traced) code"
_WAY = (". Without TorchScript: the same graph from a reference translation "
        "(cases/reference_sequence_ops.py)")


class SplitConcat(torch.nn.Module):
    def forward(self, x):
        parts = torch.split(x, 2)
        return torch.cat(parts, 1)


class UnbindStack(torch.nn.Module):
    def forward(self, x):
        parts = torch.unbind(x, 0)
        return torch.stack(parts, 1)


class SplitAt(torch.nn.Module):
    def forward(self, x):
        parts = torch.split(x, 1)
        return parts[2]


class SplitAtDynamic(torch.nn.Module):
    def forward(self, x, n):
        parts = torch.split(x, 1)
        return parts[int(n)]


class SplitLength(torch.nn.Module):
    def forward(self, x):
        parts = torch.split(x, 1)
        return torch.tensor(len(parts))


class SplitErase(torch.nn.Module):
    def forward(self, x):
        parts = torch.split(x, 1)
        del parts[1]
        return torch.cat(parts, 0)


class SplitInsert(torch.nn.Module):
    def forward(self, x, y):
        parts = torch.split(x, 1)
        parts.insert(1, y)
        return torch.cat(parts, 0)


class SplitConcatB(SplitConcat):
    """Same code, its own class: scripting a class the TorchScript exporter has already
    processed breaks autograd on it (alias_analysis INTERNAL ASSERT), so no two cases
    share a scripted class."""


class UnbindStackB(UnbindStack):
    """See SplitConcatB."""


class MaybeTensor(torch.nn.Module):
    def forward(self, x):
        o: Optional[torch.Tensor] = None
        if bool(x.sum() > 0.0):
            o = x
        return torch.tensor(o is not None)


def split_concat():
    return torch.jit.script(SplitConcat())


def unbind_stack():
    return torch.jit.script(UnbindStack())


def split_at():
    return torch.jit.script(SplitAt())


def split_at_dynamic():
    return torch.jit.script(SplitAtDynamic())


def split_length():
    return torch.jit.script(SplitLength())


def split_erase():
    return torch.jit.script(SplitErase())


def split_insert():
    return torch.jit.script(SplitInsert())


def split_concat_b():
    return torch.jit.script(SplitConcatB())


def unbind_stack_b():
    return torch.jit.script(UnbindStackB())


def maybe_tensor():
    return torch.jit.script(MaybeTensor())


CASES = [
    Case("SplitToSequence", "splittosequence_split", split_concat, (Float(4, 3),), ("x",),
         exporter="torchscript",
         notes=_TS + "; torch.split(x, 2) -> SplitToSequence (scalar split 2), read back by "
                     "ConcatFromSequence" + _WAY,
         without_torchscript=way(split_concat_ref, split_concat_seq)),
    Case("SplitToSequence", "splittosequence_unbind", unbind_stack, (Float(3, 2),), ("x",),
         exporter="torchscript",
         notes=_TS + "; torch.unbind -> SplitToSequence(keepdims=0) with split absent" + _WAY,
         without_torchscript=way(unbind_stack_ref, unbind_stack_seq)),
    Case("ConcatFromSequence", "concatfromsequence_cat", split_concat_b, (Float(4, 3),), ("x",),
         exporter="torchscript", notes=_TS + "; torch.cat of a list -> ConcatFromSequence" + _WAY,
         without_torchscript=way(split_concat_ref, split_concat_seq)),
    Case("ConcatFromSequence", "concatfromsequence_stack", unbind_stack_b, (Float(3, 2),), ("x",),
         exporter="torchscript",
         notes=_TS + "; torch.stack of a list -> ConcatFromSequence(new_axis=1)" + _WAY,
         without_torchscript=way(unbind_stack_ref, unbind_stack_seq)),
    Case("SequenceAt", "sequenceat_constant", split_at, (Float(4, 3),), ("x",),
         exporter="torchscript", notes=_TS + "; parts[2] with a constant position" + _WAY,
         without_torchscript=way(split_at_ref, split_at_seq)),
    Case("SequenceAt", "sequenceat_position_input", split_at_dynamic, (Float(4, 3), Fixed(2)),
         ("x", "n"), exporter="torchscript",
         notes=_TS + "; parts[int(n)]: the position is the int64 graph input n" + _WAY,
         without_torchscript=way(split_at_dynamic_ref, split_at_input_seq)),
    Case("SequenceLength", "sequencelength_split", split_length, (Float(4, 3),), ("x",),
         exporter="torchscript", notes=_TS + "; len(parts)" + _WAY,
         without_torchscript=way(split_length_ref, split_length_seq)),
    Case("SequenceErase", "sequenceerase_del", split_erase, (Float(4, 3),), ("x",),
         exporter="torchscript", notes=_TS + "; del parts[1]" + _WAY,
         without_torchscript=way(split_erase_ref, split_erase_seq)),
    Case("SequenceInsert", "sequenceinsert_insert", split_insert, (Float(4, 3), Float(1, 3)),
         ("x", "y"), exporter="torchscript", notes=_TS + "; parts.insert(1, y)" + _WAY,
         without_torchscript=way(split_insert_ref, split_insert_seq)),
    Case("OptionalHasElement", "optionalhaselement_is_none", maybe_tensor, (Float(2, 3),),
         ("x",), exporter="torchscript", opsets=(15, 27),
         notes="scripted Optional[Tensor] set when x.sum() > 0: the optional is built by "
               "Optional nodes inside the If branches (so it depends on x alone), "
               "OptionalHasElement reads the If output. Not at opset 28: its TorchScript "
               "export relabelled there (Optional-28 glue) runs only in onnx.reference, "
               "whose output differs from PyTorch's (a forward mismatch). Without "
               "TorchScript: OptionalHasElement(Optional(x)) from a reference translation",
         without_torchscript=way(has_element_ref, has_element_seq)),
]

MISSING = {
    "SequenceEmpty": ("a case would prove nothing",
                      "no input and an empty output: no tensor to perturb, no value to take a "
                      "gradient of, so neither witness could ever say differentiable (a "
                      "reference case SequenceEmpty -> SequenceInsert(constant) -> "
                      "ConcatFromSequence would export, but prove nothing); TorchScript emits "
                      "it only as the start of a list a Loop then fills from x, which reaches "
                      "the output around it (ambiguous). Its output is decided by type: with "
                      "no input there is nothing to differentiate with respect to"),
}
