"""Index-driven data movement: GatherElements, GatherND, Scatter*, plus NonZero, OneHot, Unique.

Indices are fixed (``T``) where duplicates would make a plain scatter order-dependent;
with a reduction, duplicates are fine and exercise accumulation.
"""
import torch
import torch.nn.functional as Fn

from ..case import Case, Expect, F, I, T


def gather_elements_dim1(data, indices):
    return torch.gather(data, 1, indices)


def gather_nd_rows(data, indices):
    return data[indices]


def gather_nd_pairs(data, pairs):
    return data[pairs[:, 0], pairs[:, 1]]


def scatter_dim1(data, indices, updates):
    return torch.scatter(data, 1, indices, updates)


def scatter_add_dim1(data, indices, updates):
    return torch.scatter_add(data, 1, indices, updates)


def scatter_reduce_amax(data, indices, updates):
    return torch.scatter_reduce(data, 1, indices, updates, "amax")


def scatter_reduce_prod(data, indices, updates):
    return torch.scatter_reduce(data, 1, indices, updates, "prod")


def index_put_rows(data, indices, updates):
    return data.index_put((indices,), updates)


def index_put_accumulate(data, indices, updates):
    return data.index_put((indices,), updates, accumulate=True)


def nonzero(x):
    return torch.nonzero(x)


def one_hot_5(indices):
    return Fn.one_hot(indices, 5)


def unique_sorted(x):
    return torch.unique(x)


def unique_inverse_counts(x):
    return torch.unique(x, return_inverse=True, return_counts=True)


_ROWS_NO_DUP = [[0, 2], [3, 1], [1, 0]]      # no repeated column within a row
_ROWS_DUP = [[0, 0], [3, 1], [2, 2]]         # repeats: reductions accumulate

_UNIQUE_X = ("Y holds X's distinct values, each a copy of one element of X (a gather, like "
             "TopK's Values): dY/dX selects; PyTorch refuses ('derivative for _unique2 is not "
             "implemented'), a gap in PyTorch, and the Unique node's own finite differences are "
             "nonzero; the schema tags X non-differentiable")
_UNIQUE_Y = ("Y = X gathered at the first occurrences: dy flows back to X (see input 0); the "
             "schema tags Y non-differentiable")

CASES = [
    Case("GatherElements", "gatherelements_dim1", gather_elements_dim1,
         (F(3, 4), I(3, 5, high=4)), ("data", "indices")),
    Case("GatherND", "gathernd_rows", gather_nd_rows, (F(4, 3), I(5, high=4)),
         ("data", "indices"),
         notes="data[indices] with one index tensor exports Unsqueeze(indices) -> GatherND"),
    Case("GatherND", "gathernd_pairs", gather_nd_pairs, (F(4, 3), I(5, 2, high=3)),
         ("data", "pairs"),
         notes="data[p[:, 0], p[:, 1]]: both index columns come from one graph input and are "
               "re-joined (Concat) into GatherND's indices"),
    Case("Scatter", "scatter_opset10", scatter_dim1,
         (F(3, 4), T(_ROWS_NO_DUP), F(3, 2)), ("data", "indices", "updates"),
         exporter="torchscript", opset=10,
         notes="Scatter is deprecated since opset 11 (renamed ScatterElements); only the "
               "TorchScript exporter at opset 10 still emits it"),
    Case("ScatterElements", "scatterelements_none", scatter_dim1,
         (F(3, 4), T(_ROWS_NO_DUP), F(3, 2)), ("data", "indices", "updates")),
    Case("ScatterElements", "scatterelements_add", scatter_add_dim1,
         (F(3, 4), T(_ROWS_DUP), F(3, 2)), ("data", "indices", "updates")),
    Case("ScatterElements", "scatterelements_max", scatter_reduce_amax,
         (F(3, 4), T(_ROWS_DUP), F(3, 2)), ("data", "indices", "updates"),
         notes="reduction='max'; random normal values make ties improbable"),
    Case("ScatterElements", "scatterelements_mul", scatter_reduce_prod,
         (F(3, 4), T(_ROWS_DUP), F(3, 2)), ("data", "indices", "updates"),
         notes="reduction='mul'"),
    Case("ScatterND", "scatternd_rows", index_put_rows,
         (F(4, 3), T([2, 0]), F(2, 3)), ("data", "indices", "updates"),
         notes="index_put exports Unsqueeze(indices) -> ScatterND"),
    Case("ScatterND", "scatternd_add", index_put_accumulate,
         (F(4, 3), T([2, 0, 2]), F(3, 3)), ("data", "indices", "updates"),
         notes="index_put(accumulate=True) exports ScatterND reduction='add'"),
    Case("NonZero", "nonzero_float", nonzero, (F(3, 4),), ("x",),
         notes="float input: it requires grad, but the int64 output carries none"),
    Case("OneHot", "onehot_depth5", one_hot_5, (I(4, high=5),), ("indices",),
         exporter="torchscript",
         unexercised={"input 0": "F.one_hot takes int64 indices only; OneHot also allows float "
                                 "indices, which no PyTorch code can feed it",
                      "output 0": "F.one_hot always returns int64, so the output's float types "
                                  "(the ones a gradient could use) are never produced",
                      "input 1": "F.one_hot takes num_classes as a Python int: depth is an "
                                 "int64 constant, and OneHot also allows float depth",
                      "input 2": "F.one_hot has no values argument: the exporter writes the "
                                 "constant [0, 1]"},
         notes="the dynamo exporter lowers F.one_hot to Unsqueeze/Equal/Cast; TorchScript "
               "emits OneHot with constant depth and values"),
    Case("Unique", "unique_sorted", unique_sorted,
         (T([3.0, 1.0, 3.0, 2.0, 1.0]),), ("x",),
         expect={"input 0": Expect("disagree", _UNIQUE_X), "output 0": Expect("disagree", _UNIQUE_Y)},
         notes="fixed input so there are repeated values; torch.unique has no derivative"),
    Case("Unique", "unique_inverse_counts", unique_inverse_counts,
         (T([3.0, 1.0, 3.0, 2.0, 1.0]),), ("x",),
         expect={"input 0": Expect("disagree", _UNIQUE_X), "output 0": Expect("disagree", _UNIQUE_Y)},
         unexercised={"output 1": "torch.unique never returns first-occurrence indices"},
         notes="outputs Y, inverse_indices (through a Reshape) and counts; ONNX output 1 "
               "(indices) is left unused by the exporter"),
]

# TensorScatter and Compress: reference cases in reference_ops.py.
