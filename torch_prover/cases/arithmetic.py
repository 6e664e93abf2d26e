"""Binary arithmetic: ONNX's guide uses Add as its worked example."""
import torch

from ..case import Case, F


def add(a, b):
    return a + b


def add_self(a):
    """Deliberately ambiguous: one tensor feeds both inputs of Add."""
    return a + a


CASES = [
    Case("Add", "add_same_shape", add, (F(3, 4), F(3, 4)), ("a", "b")),
    Case("Add", "add_broadcast", add, (F(3, 4), F(4)), ("a", "b")),
]
