"""torch-prover's own translations for ONNX ops the dynamo exporter decomposes.

Why: a TorchScript-era proof script (``torch.onnx.export(..., dynamo=False)``) reaches ops
the TorchScript exporter writes as one node -- ``F.affine_grid`` as AffineGrid -- that the
dynamo exporter decomposes (AffineGrid into Transpose/Mul/ReduceSum). Where TorchScript is
gone and the runner re-exports such a script with the dynamo exporter (:mod:`export`), the
proof would be of the decomposition, not of the op the script means (:mod:`intent` then says
so). With these translations (onnxscript, as the catalogue's Swish in
``cases/activations.py``) the node survives: each maps an ATen op to the ai.onnx op of
exactly its meaning, so PyTorch's own autograd of the ATen op stays the autograd witness.
Where the ONNX op's meaning is narrower than the ATen op's (Clip's bounds are scalars,
``clamp``'s broadcast), the translation checks the call and, outside that meaning, writes
what the exporter writes without it.

The ops were found by exporting every TorchScript case of the catalogue and every script of
tests/data/scripts both ways and listing the target ops the dynamo graph lacks
(``scripts/sweep_scripts.py --no-torchscript``, docs/run.md "Without TorchScript"). Others
have no translation: ``pixel_unshuffle``'s channel order is not SpaceToDepth's; ``flatten``
is decomposed before any translation is consulted; ``adaptive_max_pool`` also returns
indices, which GlobalMaxPool has not; Upsample-9 and Scatter-10 are not in opset 18, the
dynamo exporter's oldest; constants are folded; RNN/LSTM/GRU would need their weights and
gates re-laid (not written). The run names such an op as not in the graph, exit 2, where
the script names it (a ``# torch-prover: op=`` line, its file name, text or calls:
:mod:`intent`); so too a call outside an op's meaning that no translation can write
otherwise (:class:`NotTheOp`: the runner then exports without the translations).

Each entry: ATen op -> (ai.onnx op, the first opset that has it as translated, the
translation). Used only when the runner itself chose the dynamo exporter (the script asked
for TorchScript) and the model's opset has the op; a script that asked for dynamo is
exported as written.
"""
from __future__ import annotations

from typing import Any, Callable

from ..errors import ProverError


def affine_grid(theta: Any, size: Any, align_corners: bool = False) -> Any:
    """aten.affine_grid_generator(theta, size, align_corners) -> AffineGrid-20: the same
    function (N, H, W, 2) / (N, D, H, W, 3) grid of normalized coordinates."""
    from onnxscript.onnx_opset import opset20 as op
    return op.AffineGrid(theta, op.Constant(value_ints=[int(s) for s in size]),
                         align_corners=int(bool(align_corners)))


def _scalar_of(bound: Any, x: Any) -> bool:
    """Is ``bound`` a 0-d tensor of ``x``'s element type (what Clip's min and max are)?"""
    shape = getattr(bound, "shape", None)
    return shape is not None and len(shape) == 0 and bound.dtype == x.dtype


def clamp(x: Any, min: Any = None, max: Any = None) -> Any:   # noqa: A002 (ATen's names)
    """aten.clamp.Tensor(x, min, max) -> Clip-11+ when every bound given is a 0-d tensor of
    x's type: both are min(max(x, min), max), max winning where min > max (Clip's spec,
    torch.clamp's doc), a missing bound unbounded. Elementwise or other-typed bounds are
    not Clip's: Max then Min, as the exporter's own ``aten_clamp_tensor`` writes them."""
    from onnxscript.onnx_opset import opset18 as op
    given = [b for b in (min, max) if b is not None]
    if not given:
        return op.Identity(x)
    if all(_scalar_of(b, x) for b in given):
        return op.Clip(x, min, max)
    out = x
    if min is not None:
        out = op.Max(out, op.CastLike(min, x))
    if max is not None:
        out = op.Min(out, op.CastLike(max, x))
    return out


def one_hot(x: Any, num_classes: int = -1) -> Any:
    """aten.one_hot(x, num_classes) -> OneHot-11 (depth num_classes, values [0, 1] int64,
    axis -1): on every input torch accepts (0 <= x < num_classes; torch raises on others)
    the same int64 tensor. num_classes -1 is torch's max(x) + 1."""
    from onnxscript.onnx_opset import opset18 as op
    depth = (op.Constant(value_int=int(num_classes)) if num_classes > 0 else
             op.Add(op.ReduceMax(op.Cast(x, to=7), keepdims=0), op.Constant(value_int=1)))
    return op.OneHot(x, depth, op.Constant(value_ints=[0, 1]), axis=-1)


class NotTheOp(ProverError, ValueError):
    """The call is outside the ONNX op's meaning and the exporter's own decomposition is not
    reachable from a translation: the runner exports again without its translations
    (:mod:`export`), and :mod:`intent` names the op as decomposed. A ProverError (exit 2,
    one line) should it ever reach the user, as every error class of the package."""


def global_average_pool(x: Any, output_size: Any) -> Any:
    """aten.adaptive_avg_pool{1,2,3}d(x, 1) -> GlobalAveragePool: the mean over every
    spatial axis, kept. Another output size is AveragePool's or no ONNX op's: NotTheOp."""
    from onnxscript.onnx_opset import opset18 as op
    if any(int(s) != 1 for s in output_size):
        raise NotTheOp(f"adaptive average pooling to {list(output_size)} is not GlobalAveragePool")
    return op.GlobalAveragePool(x)


def nll_loss(x: Any, target: Any, weight: Any = None, reduction: int = 1,
             ignore_index: int = -100) -> Any:
    """aten.nll_loss_nd(x, target, weight, reduction, ignore_index) ->
    NegativeLogLikelihoodLoss-13: -x[n, target[n, d...], d...] * weight[target], none / sum /
    mean (divided by the summed weights of the targets not ignored), as torch's. An input
    without a batch axis (C,) is not the op's: NotTheOp."""
    from onnxscript.onnx_opset import opset18 as op
    if x.shape is None or len(x.shape) < 2:
        raise NotTheOp("NegativeLogLikelihoodLoss's input has a batch axis")
    return op.NegativeLogLikelihoodLoss(x, target, weight, ignore_index=int(ignore_index),
                                        reduction=("none", "mean", "sum")[int(reduction)])


def _random(onnx_op: str) -> Callable:
    def draw(size: Any, dtype: Any = None, layout: Any = None, device: Any = None,
             pin_memory: Any = None) -> Any:
        """aten.rand / aten.randn of a fixed size -> RandomUniform(0, 1) / RandomNormal(0, 1)
        of that shape and type: the same distribution (torch's default dtype when none)."""
        import torch
        from onnxscript.onnx_opset import opset18 as op
        floats = {torch.float16: 10, torch.float32: 1, torch.float64: 11, torch.bfloat16: 16}
        # the exporter hands the dtype over as ONNX's (ir.DataType, an int), torch's if not
        dtype = floats[torch.get_default_dtype()] if dtype is None else dtype
        code = floats.get(dtype) if isinstance(dtype, torch.dtype) else int(dtype)
        if code not in floats.values() or not all(isinstance(s, int) for s in size):
            raise NotTheOp(f"{onnx_op} draws floating tensors of a fixed shape")
        return getattr(op, onnx_op)(shape=[int(s) for s in size], dtype=code)
    return draw


def _own() -> dict[Any, tuple[str, int, Callable]]:
    import torch
    aten = torch.ops.aten
    return {aten.affine_grid_generator.default: ("AffineGrid", 20, affine_grid),
            aten.clamp.Tensor: ("Clip", 11, clamp),
            aten.one_hot.default: ("OneHot", 11, one_hot),
            **{pool.default: ("GlobalAveragePool", 1, global_average_pool) for pool in (
                aten.adaptive_avg_pool1d, aten.adaptive_avg_pool2d, aten.adaptive_avg_pool3d)},
            aten.nll_loss_nd.default: ("NegativeLogLikelihoodLoss", 13, nll_loss),
            aten.rand.default: ("RandomUniform", 1, _random("RandomUniform")),
            aten.randn.default: ("RandomNormal", 1, _random("RandomNormal"))}


def table(opset: int) -> dict[Any, Callable]:
    """The translations whose ONNX op the model's ``opset`` has (``custom_translation_table``)."""
    return {aten: fn for aten, (_, first, fn) in _own().items() if opset >= first}


def names(opset: int) -> list[str]:
    """The ONNX ops :func:`table` keeps at ``opset``, for the runner's note."""
    return list(dict.fromkeys(name for name, first, _ in _own().values() if opset >= first))


def noted(opset: int) -> str:
    """The runner's words for the translations used at ``opset`` ("" when none)."""
    own = names(opset)
    return (f", with torch-prover's own translation of {', '.join(own)} where the module "
            "calls it (pr/translations.py), which it decomposes otherwise" if own else "")
