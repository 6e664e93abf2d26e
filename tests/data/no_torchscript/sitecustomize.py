"""TorchScript made to raise, as pytorch#189705 proposes: ``torch.onnx.export(dynamo=False)``,
``torch.jit.script`` and ``torch.jit.trace`` raise. Put this directory on PYTHONPATH and every
Python that starts (the prover, the fork server of ``run``'s script processes) imports it
first (tests/test_no_torchscript.py)."""
import functools

import torch
import torch.jit
import torch.onnx
import torch.onnx.utils

GONE = "TorchScript has been removed from this torch (torch-prover's no-TorchScript harness)"


def _gone(*args, **kwargs):
    raise RuntimeError(GONE)


_export = torch.onnx.export


@functools.wraps(_export)        # the same signature: the runner reads which options it takes
def _export_without_torchscript(model, args=(), f=None, *rest, **kwargs):
    if kwargs.get("dynamo", True) is False or rest:
        raise RuntimeError(GONE)
    return _export(model, args, f, **kwargs)


torch.onnx.export = _export_without_torchscript
torch.onnx.utils.export = _gone
torch.jit.script = _gone
torch.jit.trace = _gone
