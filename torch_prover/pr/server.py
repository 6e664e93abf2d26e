"""The forkserver's preload: importing this module readies a process to fork script children.

Why a module that acts on import: multiprocessing's forkserver takes only a list of module
names to prepare itself with (``set_forkserver_preload``), and nothing else imports this
one. Every proof script's process a library call or a sweep starts is a fork of that server
(the console ``run`` forks its one script from itself: ``process.Start``), so whatever is
done here once is done for all of them: the imports (torch, onnx, onnxscript, the exporter, the child's
code), and one tiny export of each kind the scripts use -- the torch.export-based exporter,
the TorchScript exporter, ``torch.export.export`` and ``torch.jit.trace`` -- which builds
the exporter's lazily built state. Without it each script's first export pays that again
(~2-3 s), which a sweep over hundreds of scripts feels. The exports run on a fixed module
and never involve a script: the server stays exactly what it was for every child.

A failure here is swallowed (the children then just start colder): the preload must not
stop the server from starting.
"""
from __future__ import annotations

import contextlib
import io

from . import child  # noqa: F401 - the children's code, imported once here


def warm() -> None:
    """One small export of each kind, silenced; never raises."""
    import torch

    from ..engine.export import quiet
    with contextlib.suppress(Exception), quiet():
        module = torch.nn.Tanh().eval()
        x = torch.randn(2, 3)
        torch.onnx.export(module, (x,), dynamo=True)
        torch.onnx.export(module, (x,), io.BytesIO(), dynamo=False)
        torch.export.export(module, (x,))
        torch.jit.trace(module, (x,))


warm()
