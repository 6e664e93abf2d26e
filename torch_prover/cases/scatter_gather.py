"""Index-driven data movement: GatherElements, GatherND, Scatter*, plus NonZero, OneHot, Unique.

Indices are fixed (``T``) where duplicates would make a plain scatter order-dependent;
with a reduction, duplicates are fine and exercise accumulation.

OneHot's ``values`` ([off, on]) cannot be reached from F.one_hot, which has no values
argument, nor float indices or depth: the reference cases ``onehot_float_values`` (values a
float graph input) and ``onehot_float_indices_depth`` (float indices, float depth) can.
"""
import torch
import torch.nn.functional as F

from ..case import Case, Expect, Float, Int, Fixed
from ..conventions import Applies, Convention
from .reference import onnx_opset, reference_op


def gather_elements_dim1(data, indices):
    return torch.gather(data, 1, indices)


def gather_nd_rows(data, indices):
    return data[indices]


def gather_nd_pairs(data, pairs):
    return data[pairs[:, 0], pairs[:, 1]]


def scatter_dim1(data, indices, updates):
    return torch.scatter(data, 1, indices, updates)


@reference_op("Scatter", opset=10)
def scatter_ref(data: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor,
                axis: int) -> torch.Tensor:
    """Scatter-9 (ScatterElements before its rename): torch.scatter along ``axis``."""
    return torch.scatter(data, axis, indices, updates)


def scatter_dim1_ref(data, indices, updates):
    return scatter_ref(data, indices, updates, 1)


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
    return F.one_hot(indices, 5)


def _one_hot(indices: torch.Tensor, depth: int, values: torch.Tensor,
             axis: int) -> torch.Tensor:
    """values[1] where the (wrapped) index equals the position along ``axis``, else values[0]
    (an index matches by equality: a non-whole float index matches nothing)."""
    idx = torch.where(indices < 0, indices + depth, indices).unsqueeze(axis)
    shape = [1] * (indices.dim() + 1)
    shape[axis] = depth
    hot = idx == torch.arange(depth).reshape(shape)
    return torch.where(hot, values[1], values[0])


@reference_op("OneHot")
def onehot(indices: torch.Tensor, depth: int, values: torch.Tensor,
           axis: int = -1) -> torch.Tensor:
    """OneHot; ``depth`` is an int64 constant input of the node."""
    return _one_hot(indices, depth, values, axis)


def _onehot_float_depth_emit(indices, depth: int, values, axis: int = -1):
    depth = onnx_opset().Constant(value_float=float(depth))
    return onnx_opset().OneHot(indices, depth, values, axis=axis)


@reference_op("OneHot", emit=_onehot_float_depth_emit)
def onehot_float_depth(indices: torch.Tensor, depth: int, values: torch.Tensor,
                       axis: int = -1) -> torch.Tensor:
    """OneHot as ``onehot``, its depth emitted as a float32 constant (OneHot allows it)."""
    return _one_hot(indices, depth, values, axis)


def onehot_float_values(indices, values):
    return onehot(indices, 4, values)


def onehot_float_indices_depth(indices, values):
    return onehot_float_depth(indices, 4, values, axis=0)


def unique_sorted(x):
    return torch.unique(x)


def unique_inverse_counts(x):
    return torch.unique(x, return_inverse=True, return_counts=True)


_ROWS_NO_DUP = [[0, 2], [3, 1], [1, 0]]      # no repeated column within a row
_ROWS_DUP = [[0, 0], [3, 1], [2, 2]]         # repeats: reductions accumulate

_ONEHOT_VALUES = ("output = values[1] where the index matches, values[0] elsewhere: "
                  "d output / d values[1] = 1 at the hot positions and d output / d values[0] = "
                  "1 at the others; the schema tags values non-differentiable")
_ONEHOT_OUTPUT = ("output is values[0] or values[1] at every position, so its dy flows back to "
                  "values (see input 2); the schema tags output non-differentiable")

_UNIQUE_X = ("Y holds X's distinct values, each a copy of one element of X (a gather, like "
             "TopK's Values): dY/dX selects; PyTorch refuses ('derivative for _unique2 is not "
             "implemented'), a gap in PyTorch, and the Unique node's own finite differences are "
             "nonzero away from ties")
_UNIQUE_Y = ("Y = X gathered at the first occurrences: dy flows back to X (see input 0); where "
             "two values of X meet, Y loses an element")
_UNIQUE = {"input 0": Applies(Convention.DATA_DEPENDENT_SHAPE, _UNIQUE_X),
           "output 0": Applies(Convention.DATA_DEPENDENT_SHAPE, _UNIQUE_Y)}
_UNIQUE_NO_PRECEDENT = ("the 'data-dependent shape' convention has no precedent outside "
                        "Unique's own tags (NonZero's X is non-differentiable by type), so the "
                        "math decides: ")
_UNIQUE_EXPECT = {
    "input 0": Expect("disagree", _UNIQUE_NO_PRECEDENT + "the Unique node's finite differences "
                      "in X are nonzero away from ties (Y gathers X's elements); tagged "
                      "non-differentiable"),
    "output 0": Expect("disagree", _UNIQUE_NO_PRECEDENT + "Y's dy flows back to X as a "
                       "gather's does; tagged non-differentiable")}

CASES = [
    Case("GatherElements", "gatherelements_dim1", gather_elements_dim1,
         (Float(3, 4), Int(3, 5, high=4)), ("data", "indices")),
    Case("GatherND", "gathernd_rows", gather_nd_rows, (Float(4, 3), Int(5, high=4)),
         ("data", "indices"),
         notes="data[indices] with one index tensor exports Unsqueeze(indices) -> GatherND"),
    Case("GatherND", "gathernd_pairs", gather_nd_pairs, (Float(4, 3), Int(5, 2, high=3)),
         ("data", "pairs"),
         notes="data[p[:, 0], p[:, 1]]: both index columns come from one graph input and are "
               "re-joined (Concat) into GatherND's indices"),
    Case("Scatter", "scatter_opset10", scatter_dim1,
         (Float(3, 4), Fixed(_ROWS_NO_DUP), Float(3, 2)), ("data", "indices", "updates"),
         exporter="torchscript", opset=10,
         fails_at={11: "Scatter-11 is deprecated (ScatterElements replaces it): onnx.checker "
                       "refuses every model that uses it"},
         notes="Scatter is deprecated since opset 11 (renamed ScatterElements); only the "
               "TorchScript exporter at opset 10 still emits it. Without TorchScript: the "
               "reference scatter_ref, its node lowered from the dynamo exporter's opset 18 "
               "(engine/next_opset.py)",
         without_torchscript={"model": scatter_dim1_ref, "kind": "reference", "opset": 10,
                              "translation": scatter_ref.translation}),
    Case("ScatterElements", "scatterelements_none", scatter_dim1,
         (Float(3, 4), Fixed(_ROWS_NO_DUP), Float(3, 2)), ("data", "indices", "updates")),
    Case("ScatterElements", "scatterelements_add", scatter_add_dim1,
         (Float(3, 4), Fixed(_ROWS_DUP), Float(3, 2)), ("data", "indices", "updates"),
         opsets=(16, 28), notes="reduction='add' is an attribute of ScatterElements from "
                                "version 16; before it the exporter writes a scatter that "
                                "drops duplicates (forward mismatch)"),
    Case("ScatterElements", "scatterelements_max", scatter_reduce_amax,
         (Float(3, 4), Fixed(_ROWS_DUP), Float(3, 2)), ("data", "indices", "updates"),
         opsets=(18, 28), notes="reduction='max' (an attribute value from ScatterElements-18 "
                                "on); random normal values make ties improbable"),
    Case("ScatterElements", "scatterelements_mul", scatter_reduce_prod,
         (Float(3, 4), Fixed(_ROWS_DUP), Float(3, 2)), ("data", "indices", "updates"),
         opsets=(18, 28), notes="reduction='mul'"),
    Case("ScatterND", "scatternd_rows", index_put_rows,
         (Float(4, 3), Fixed([2, 0]), Float(2, 3)), ("data", "indices", "updates"),
         notes="index_put exports Unsqueeze(indices) -> ScatterND"),
    Case("ScatterND", "scatternd_add", index_put_accumulate,
         (Float(4, 3), Fixed([2, 0, 2]), Float(3, 3)), ("data", "indices", "updates"),
         opsets=(18, 28),
         notes="index_put(accumulate=True) exports ScatterND reduction='add'; reduction "
               "exists from ScatterND-16, and at opsets 16-17 the TorchScript exporter "
               "writes the accumulation around the node (forward mismatch)"),
    Case("NonZero", "nonzero_float", nonzero, (Float(3, 4),), ("x",),
         notes="float input: it requires grad, but the int64 output carries none"),
    Case("OneHot", "onehot_depth5", one_hot_5, (Int(4, high=5),), ("indices",),
         exporter="torchscript",
         unexercised={"input 0": "F.one_hot takes int64 indices only; OneHot also allows float "
                                 "indices (see onehot_float_indices_depth, reference)",
                      "output 0": "F.one_hot always returns int64, so the output's float types "
                                  "(the ones a gradient could use) are never produced",
                      "input 1": "F.one_hot takes num_classes as a Python int: depth is an "
                                 "int64 constant, and OneHot also allows float depth (see "
                                 "onehot_float_indices_depth)",
                      "input 2": "F.one_hot has no values argument: the exporter writes the "
                                 "constant [0, 1] (see onehot_float_values, reference)"},
         notes="the dynamo exporter lowers F.one_hot to Unsqueeze/Equal/Cast; TorchScript "
               "emits OneHot with constant depth and values"),
    Case("OneHot", "onehot_float_values", onehot_float_values,
         (Int(2, 3, low=-4, high=4), Float(2)), ("indices", "values"), kind="reference",
         translation=onehot.translation, float_dtype=torch.float32,
         expect={"input 2": Expect("disagree", _ONEHOT_VALUES),
                 "output 0": Expect("disagree", _ONEHOT_OUTPUT)},
         unexercised={"input 0": "int64 indices (negative ones wrap); OneHot also allows "
                                 "float indices",
                      "input 1": "depth is an int64 constant; OneHot also allows float depth"},
         notes="reference: F.one_hot has no values argument. float32: onnxruntime's OneHot "
               "kernels take float32 values, not float64"),
    Case("OneHot", "onehot_float_indices_depth", onehot_float_indices_depth,
         (Fixed([[0.0, 3.0, -1.0], [2.0, 1.0, -4.0]]), Float(2)), ("indices", "values"),
         kind="reference", translation=onehot_float_depth.translation,
         float_dtype=torch.float32,
         expect={"input 2": Expect("disagree", _ONEHOT_VALUES),
                 "output 0": Expect("disagree", _ONEHOT_OUTPUT)},
         notes="float indices (whole numbers) and a float depth, axis=0. onnxruntime and the "
               "onnx reference match an index by equality, so a non-whole index is all off: "
               "the output is constant near a whole number except at it, where both central "
               "differences see 'all off' (the witness reads flat); depth is cast to int64, "
               "so a move changes the output's shape or nothing. float32: onnxruntime's "
               "float-indices kernel is float32 only"),
    Case("Unique", "unique_sorted", unique_sorted,
         (Fixed([3.0, 1.0, 3.0, 2.0, 1.0]),), ("x",),
         conventions=_UNIQUE, expect=_UNIQUE_EXPECT,
         notes="fixed input so there are repeated values; torch.unique has no derivative"),
    Case("Unique", "unique_inverse_counts", unique_inverse_counts,
         (Fixed([3.0, 1.0, 3.0, 2.0, 1.0]),), ("x",),
         conventions=_UNIQUE, expect=_UNIQUE_EXPECT,
         unexercised={"output 1": "torch.unique never returns first-occurrence indices"},
         notes="outputs Y, inverse_indices (through a Reshape) and counts; ONNX output 1 "
               "(indices) is left unused by the exporter"),
]

# TensorScatter and Compress: reference cases in reference_ops.py.
