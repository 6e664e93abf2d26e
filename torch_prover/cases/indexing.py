"""Gather, TopK, Where: ops with an integer or boolean input beside the data."""
import torch

from ..case import Bool, Case, Float, Int


def gather_rows(data, indices):
    return torch.index_select(data, 0, indices)


def gather_scalar_index(x):
    return x[:, 2]


def topk_3(x):
    return torch.topk(x, 3, dim=-1)


def where(cond, x, y):
    return torch.where(cond, x, y)


CASES = [
    Case("Gather", "gather_index_select", gather_rows, (Float(5, 3), Int(4, high=5)),
         ("data", "indices")),
    Case("TopK", "topk_values_indices", topk_3, (Float(2, 6),), ("x",)),
    Case("Where", "where_bool_condition", where, (Bool(3, 4), Float(3, 4), Float(3, 4)),
         ("condition", "x", "y")),
    Case("Gather", "gather_scalar_index", gather_scalar_index, (Float(3, 4),), ("data",),
         notes="x[:, 2] exports Gather(axis=1) with a 0-d int64 constant index (rank drops)"),
]
