"""Logical ops And, Or, Xor: bool in, bool out (evidence `integer` throughout)."""
import torch

from ..case import Bool, Case, Float


def and_bool(a, b):
    return torch.logical_and(a, b)


def or_bool(a, b):
    return torch.logical_or(a, b)


def xor_bool(a, b):
    return torch.logical_xor(a, b)


CASES = [
    Case("And", "and_bool", and_bool, (Bool(3, 4), Bool(3, 4)), ("a", "b")),
    Case("And", "and_float_cast", and_bool, (Float(3, 4), Float(3, 4)), ("a", "b"),
         notes="logical_and of float tensors: each input is Cast to bool before And (glue on one "
               "input each); the float inputs require grad and receive none."),
    Case("Or", "or_bool", or_bool, (Bool(3, 4), Bool(3, 4)), ("a", "b")),
    Case("Xor", "xor_bool", xor_bool, (Bool(3, 4), Bool(3, 4)), ("a", "b")),
]
