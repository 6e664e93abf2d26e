"""Softmax and LogSoftmax, over the last axis and over an inner axis (the `axis` attribute)."""
import torch

from ..case import Case, Float


def softmax_last(x):
    return torch.softmax(x, dim=-1)


def softmax_dim1(x):
    return torch.softmax(x, dim=1)


def logsoftmax_last(x):
    return torch.log_softmax(x, dim=-1)


def logsoftmax_dim1(x):
    return torch.log_softmax(x, dim=1)


_COERCED = ("{op}-{v} coerces the input to 2-D at its axis, so axis=1 of a [2, 3, 4] input "
            "normalizes over 12 elements, not along axis 1 (per axis from {op}-13); without "
            "TorchScript (which transposes the axis last) no export computes this module at "
            "{op}-{v}: {case}_last_axis proves it")

CASES = [
    Case("Softmax", "softmax_last_axis", softmax_last, (Float(2, 3, 4),), ("x",)),
    Case("Softmax", "softmax_axis1", softmax_dim1, (Float(2, 3, 4),), ("x",),
         without_torchscript={"fails_at": {v: _COERCED.format(op="Softmax", v=v, case="softmax")
                                           for v in (1, 11)}},
         notes="below opset 13 the TorchScript exporter transposes axis 1 last (Softmax-1 "
               "and -11 coerce the input to 2-D at their axis); without it the opset-18 "
               "node relabelled there would normalize over axes 1 and 2 together"),
    Case("LogSoftmax", "logsoftmax_last_axis", logsoftmax_last, (Float(2, 3, 4),), ("x",)),
    Case("LogSoftmax", "logsoftmax_axis1", logsoftmax_dim1, (Float(2, 3, 4),), ("x",),
         without_torchscript={"fails_at": {v: _COERCED.format(op="LogSoftmax", v=v, case="logsoftmax")
                                           for v in (1, 11)}},
         notes="as softmax_axis1: TorchScript transposes axis 1 last below opset 13"),
]
