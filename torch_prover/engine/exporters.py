"""Which exporters this torch has, and a case proved without the TorchScript one.

The TorchScript exporter (``torch.onnx.export(dynamo=False)``) is deprecated since torch
2.9 and goes away with TorchScript. Whether the installed torch still has it is a
capability, probed once by exporting a one-op module with it (never read from the version
string: a build may drop it early or keep it late). Without it, ``verify-all`` proves
every case and variant with the dynamo exporter (``--no-torchscript`` asks for that on any
torch): a case that chose TorchScript then takes the dynamo way it declares
(``Case.without_torchscript``), or is left out and named.
"""
from __future__ import annotations

import functools
import io

import torch

from ..case import Case


@functools.lru_cache(maxsize=1)
def torchscript_available() -> bool:
    """Whether ``torch.onnx.export(..., dynamo=False)`` exports (probed once per process)."""
    from .export import quiet

    class _Probe(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + 1

    try:
        with quiet():
            torch.onnx.export(_Probe(), (torch.zeros(2),), io.BytesIO(), dynamo=False,
                              opset_version=17)
    except Exception:   # removed, or raising on use: either way not there to rely on
        return False
    return True


def dynamo_only(case: Case) -> Case | None:
    """``case`` proved with the dynamo exporter: its declared dynamo way
    (``without_torchscript``) when it has one; else itself when it is a dynamo case, None when
    it chose TorchScript. A dynamo case declares one when its variants below opset 18,
    exported by TorchScript by default, fail once relabelled (``fails_at``)."""
    if case.without_torchscript is None:
        return case if case.exporter != "torchscript" else None
    changes = {"exporter": "dynamo", "without_torchscript": None,
               **dict(case.without_torchscript)}
    if case.exporter == "torchscript" and case.opset is not None and "opset" not in changes:
        changes["opset"] = None     # the TorchScript opset (20) is not the dynamo one (25)
    return case.replace(**changes)
