"""Bitwise ops: BitwiseAnd/Or/Xor/Not on integers, BitShift on unsigned integers.

All inputs and outputs are integers (evidence `integer`), which is what the
non-differentiable tags say; ONNX's type constraints allow only integer types anyway.
"""
import torch

from ..case import Case, Int


def bitwise_and(a, b):
    return torch.bitwise_and(a, b)


def bitwise_or(a, b):
    return torch.bitwise_or(a, b)


def bitwise_xor(a, b):
    return torch.bitwise_xor(a, b)


def bitwise_not(x):
    return torch.bitwise_not(x)


def shift_left(x, y):
    return torch.bitwise_left_shift(x, y)


def shift_right(x, y):
    return torch.bitwise_right_shift(x, y)


_U8 = torch.uint8

CASES = [
    Case("BitwiseAnd", "bitwiseand_int64", bitwise_and, (Int(3, 4, high=256), Int(3, 4, high=256)),
         ("a", "b")),
    Case("BitwiseAnd", "bitwiseand_uint8", bitwise_and,
         (Int(3, 4, high=256, dtype=_U8), Int(3, 4, high=256, dtype=_U8)), ("a", "b")),
    Case("BitwiseOr", "bitwiseor_int64", bitwise_or, (Int(3, 4, high=256), Int(3, 4, high=256)),
         ("a", "b")),
    Case("BitwiseXor", "bitwisexor_int64", bitwise_xor, (Int(3, 4, high=256), Int(3, 4, high=256)),
         ("a", "b")),
    Case("BitwiseNot", "bitwisenot_int64", bitwise_not, (Int(3, 4, low=-100, high=100),), ("x",)),
    Case("BitShift", "bitshift_left_int64", shift_left, (Int(3, 4, high=1000), Int(3, 4, high=8)),
         ("x", "y"),
         notes="dynamo casts both int64 inputs to uint64, shifts LEFT, casts back (glue on one "
               "input each)."),
    Case("BitShift", "bitshift_left_uint8", shift_left,
         (Int(3, 4, high=256, dtype=_U8), Int(3, 4, high=10, dtype=_U8)), ("x", "y"),
         exporter="torchscript",
         notes="TorchScript exporter: dynamo's uint8 left shift ends in Cast(to=INT8), so the "
               "exported output is int8 and values >= 128 come out negative (an exporter bug). "
               "Shift amounts up to 9 (>= the bit width): onnxruntime and torch agree here."),
    Case("BitShift", "bitshift_right_uint8", shift_right,
         (Int(3, 4, high=256, dtype=_U8), Int(3, 4, high=10, dtype=_U8)), ("x", "y"),
         exporter="torchscript",
         notes="TorchScript exporter: dynamo emulates an arithmetic right shift (Less, two "
               "BitShift, BitwiseNot, BitwiseOr, Where) even for uint8, so the graph holds two "
               "BitShift nodes; TorchScript emits one BitShift(RIGHT)."),
]
