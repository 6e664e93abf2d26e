"""Reductions (ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSumExp/LogSum/SumSquare) and ArgMax/ArgMin.

Since opset 18 (13 for ReduceSum) the reduced axes are an optional int64 *input*. torch's
``dim`` is a Python int/tuple, so it always exports as an int64 constant (evidence
`constant`, non-differentiable by dtype); a full reduction (no ``dim``) leaves the input
absent. ``keepdims`` is an attribute, covered by the keepdim variants.

ReduceLogSum and ReduceSumSquare have no PyTorch function that exports to them (torch.log of
torch.sum exports ReduceSum + Log, torch.sum of x*x exports Mul/Pow + ReduceSum), so they are
reference cases: a torch reference bound to exactly one node by :func:`reference_op`, the
axes emitted as an int64 Constant, confirmed by the engine's numeric checks.

Inputs are continuous normals (no ties for Max/Min/ArgMax, no zeros for L1 or Prod).
"""
import torch

from ..case import Case, Float
from .reference import onnx_opset, reference_op


# --------------------------------------------------------------------------- ReduceSum
def reducesum_dim1(x):
    return torch.sum(x, dim=1)


def reducesum_keepdim(x):
    return torch.sum(x, dim=(0, 2), keepdim=True)


def reducesum_all(x):
    return torch.sum(x)


# --------------------------------------------------------------------------- ReduceMean
def reducemean_dim1(x):
    return torch.mean(x, dim=1)


def reducemean_keepdim(x):
    return torch.mean(x, dim=(-1,), keepdim=True)


def reducemean_all(x):
    return torch.mean(x)


# --------------------------------------------------------------------------- ReduceMax, ReduceMin
def reducemax_amax(x):
    return torch.amax(x, dim=1)


def reducemax_all(x):
    return torch.max(x)


def reducemin_amin_keepdim(x):
    return torch.amin(x, dim=(0, 2), keepdim=True)


def reducemin_all(x):
    return torch.min(x)


# --------------------------------------------------------------------------- ReduceProd
def reduceprod_dim1(x):
    return torch.prod(x, dim=1)


def reduceprod_all(x):
    return torch.prod(x)


# --------------------------------------------------------------------------- ReduceL1, ReduceL2
def reducel1_vector_norm(x):
    return torch.linalg.vector_norm(x, ord=1, dim=1)


def reducel1_keepdim(x):
    return torch.linalg.vector_norm(x, ord=1, dim=(0, 2), keepdim=True)


def reducel2_vector_norm(x):
    return torch.linalg.vector_norm(x, ord=2, dim=1)


def reducel2_keepdim(x):
    return torch.linalg.vector_norm(x, ord=2, dim=(0, 2), keepdim=True)


# --------------------------------------------------------------------------- ReduceLogSumExp
def reducelogsumexp_dim1(x):
    return torch.logsumexp(x, dim=1)


def reducelogsumexp_keepdim(x):
    return torch.logsumexp(x, dim=(0, 2), keepdim=True)


# --------------------------------------------------------------------------- references
def _emit_reduce(onnx_op):
    """One ``onnx_op`` node with the axes as an int64 Constant (they are an input since 18)."""

    def emit(data, axes: list[int], keepdims: bool):
        op = onnx_opset()
        return getattr(op, onnx_op)(data, op.Constant(value_ints=list(axes)),
                                    keepdims=int(keepdims))

    emit.__name__ = emit.__qualname__ = f"emit_{onnx_op}"
    return emit


@reference_op("ReduceLogSum", emit=_emit_reduce("ReduceLogSum"))
def reduce_log_sum(data: torch.Tensor, axes: list[int], keepdims: bool) -> torch.Tensor:
    """ONNX ReduceLogSum: log(sum(data over axes))."""
    return torch.log(torch.sum(data, dim=axes, keepdim=keepdims))


@reference_op("ReduceSumSquare", emit=_emit_reduce("ReduceSumSquare"))
def reduce_sum_square(data: torch.Tensor, axes: list[int], keepdims: bool) -> torch.Tensor:
    """ONNX ReduceSumSquare: sum(data * data over axes)."""
    return torch.sum(data * data, dim=axes, keepdim=keepdims)


def reducelogsum_dim1(x):
    return reduce_log_sum(x, [1], False)


def reducelogsum_keepdim(x):
    return reduce_log_sum(x, [0, 2], True)


def reducesumsquare_dim1(x):
    return reduce_sum_square(x, [1], False)


def reducesumsquare_keepdim(x):
    return reduce_sum_square(x, [0, 2], True)


# --------------------------------------------------------------------------- ArgMax, ArgMin
def argmax_dim1(x):
    return torch.argmax(x, dim=1)


def argmax_keepdim(x):
    return torch.argmax(x, dim=0, keepdim=True)


def argmin_dim1(x):
    return torch.argmin(x, dim=1)


def argmin_keepdim(x):
    return torch.argmin(x, dim=-1, keepdim=True)


_X = (Float(3, 4, 2),)
_POS = (Float(3, 4, 2, low=0.5, high=2.0),)
_REF = ("no PyTorch function exports to {op}; torch reference bound by reference_op, "
        "axes emitted as an int64 Constant.")

CASES = [
    Case("ReduceSum", "reducesum_dim1", reducesum_dim1, _X, ("x",)),
    Case("ReduceSum", "reducesum_keepdim", reducesum_keepdim, _X, ("x",)),
    Case("ReduceSum", "reducesum_all", reducesum_all, _X, ("x",),
         notes="full reduction: the axes input is absent."),
    Case("ReduceMean", "reducemean_dim1", reducemean_dim1, _X, ("x",)),
    Case("ReduceMean", "reducemean_keepdim", reducemean_keepdim, _X, ("x",)),
    Case("ReduceMean", "reducemean_all", reducemean_all, _X, ("x",),
         notes="full reduction: ReduceMean(keepdims=1) without axes, then Squeeze (glue on the "
               "output)."),
    Case("ReduceMax", "reducemax_amax", reducemax_amax, _X, ("x",)),
    Case("ReduceMax", "reducemax_all", reducemax_all, _X, ("x",),
         notes="full reduction: the axes input is absent."),
    Case("ReduceMin", "reducemin_amin_keepdim", reducemin_amin_keepdim, _X, ("x",)),
    Case("ReduceMin", "reducemin_all", reducemin_all, _X, ("x",),
         notes="full reduction: the axes input is absent."),
    Case("ReduceProd", "reduceprod_dim1", reduceprod_dim1, _X, ("x",)),
    Case("ReduceProd", "reduceprod_all", reduceprod_all, _X, ("x",),
         notes="full reduction: the axes input is absent."),
    Case("ReduceL1", "reducel1_vector_norm", reducel1_vector_norm, _X, ("x",),
         notes="torch.linalg.vector_norm(ord=1) exports as ReduceL1."),
    Case("ReduceL1", "reducel1_keepdim", reducel1_keepdim, _X, ("x",)),
    Case("ReduceL2", "reducel2_vector_norm", reducel2_vector_norm, _X, ("x",),
         notes="torch.linalg.vector_norm(ord=2) (and torch.norm) export as ReduceL2."),
    Case("ReduceL2", "reducel2_keepdim", reducel2_keepdim, _X, ("x",)),
    Case("ReduceLogSumExp", "reducelogsumexp_dim1", reducelogsumexp_dim1, _X, ("x",)),
    Case("ReduceLogSumExp", "reducelogsumexp_keepdim", reducelogsumexp_keepdim, _X, ("x",)),
    Case("ReduceLogSum", "reducelogsum_dim1", reducelogsum_dim1, _POS, ("x",),
         kind="reference", translation=reduce_log_sum.translation,
         notes=_REF.format(op="ReduceLogSum") + " Positive data (log)."),
    Case("ReduceLogSum", "reducelogsum_keepdim", reducelogsum_keepdim, _POS, ("x",),
         kind="reference", translation=reduce_log_sum.translation,
         notes=_REF.format(op="ReduceLogSum") + " Positive data (log)."),
    Case("ReduceSumSquare", "reducesumsquare_dim1", reducesumsquare_dim1, _X, ("x",),
         kind="reference", translation=reduce_sum_square.translation,
         notes=_REF.format(op="ReduceSumSquare")),
    Case("ReduceSumSquare", "reducesumsquare_keepdim", reducesumsquare_keepdim, _X, ("x",),
         kind="reference", translation=reduce_sum_square.translation,
         notes=_REF.format(op="ReduceSumSquare")),
    Case("ArgMax", "argmax_dim1", argmax_dim1, (Float(3, 4),), ("x",),
         notes="float data requires grad but the int64 index output gives it none."),
    Case("ArgMax", "argmax_keepdim", argmax_keepdim, (Float(3, 4),), ("x",)),
    Case("ArgMin", "argmin_dim1", argmin_dim1, (Float(3, 4),), ("x",),
         notes="float data requires grad but the int64 index output gives it none."),
    Case("ArgMin", "argmin_keepdim", argmin_keepdim, (Float(3, 4),), ("x",)),
]
