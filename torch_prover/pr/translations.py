"""torch-prover's own translations for ONNX ops the dynamo exporter decomposes.

Why: a TorchScript-era proof script (``torch.onnx.export(..., dynamo=False)``) reaches ops
the TorchScript exporter writes as one node -- ``F.affine_grid`` as AffineGrid -- that the
dynamo exporter decomposes (AffineGrid into Transpose/Mul/ReduceSum). Where TorchScript is
gone and the runner re-exports such a script with the dynamo exporter (:mod:`export`), the
proof would be of the decomposition, not of the op the script means (:mod:`intent` then says
so). With these translations (onnxscript, as the catalogue's Swish in
``cases/activations.py``) the node survives: each maps an ATen op to the ai.onnx op of
exactly its meaning, so PyTorch's own autograd of the ATen op stays the autograd witness.

Each entry: ATen op -> (ai.onnx op, the first opset that has it, the translation). Used
only when the runner itself chose the dynamo exporter (the script asked for TorchScript)
and the model's opset has the op; a script that asked for dynamo is exported as written.
"""
from __future__ import annotations

from typing import Any, Callable


def affine_grid(theta: Any, size: Any, align_corners: bool = False) -> Any:
    """aten.affine_grid_generator(theta, size, align_corners) -> AffineGrid-20: the same
    function (N, H, W, 2) / (N, D, H, W, 3) grid of normalized coordinates."""
    from onnxscript.onnx_opset import opset20 as op
    return op.AffineGrid(theta, op.Constant(value_ints=[int(s) for s in size]),
                         align_corners=int(bool(align_corners)))


def table(opset: int) -> dict[Any, Callable]:
    """The translations whose ONNX op the model's ``opset`` has (``custom_translation_table``)."""
    import torch
    own = {torch.ops.aten.affine_grid_generator.default: ("AffineGrid", 20, affine_grid)}
    return {aten: fn for aten, (_, first, fn) in own.items() if opset >= first}


def names(opset: int) -> list[str]:
    """The ONNX ops :func:`table` keeps at ``opset``, for the runner's note."""
    import torch
    return ["AffineGrid"] if table(opset).get(torch.ops.aten.affine_grid_generator.default) \
        else []
