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


CASES = [
    Case("Softmax", "softmax_last_axis", softmax_last, (Float(2, 3, 4),), ("x",)),
    Case("Softmax", "softmax_axis1", softmax_dim1, (Float(2, 3, 4),), ("x",)),
    Case("LogSoftmax", "logsoftmax_last_axis", logsoftmax_last, (Float(2, 3, 4),), ("x",)),
    Case("LogSoftmax", "logsoftmax_axis1", logsoftmax_dim1, (Float(2, 3, 4),), ("x",)),
]
