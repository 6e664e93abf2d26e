"""What a process verify-all forks does first, whatever it is for (a worker of the pool, the
process beside the batch, the process building ONNX's tests ahead): one helper, so each
closes the pipe ends it inherited, leaves Ctrl-C to the parent, dies with it and keeps its
output out of the run's alike. Kept free of torch (and of the catalogue): the process
building ONNX's tests ahead is forked before torch is imported (batch/points_early.py).
"""
from __future__ import annotations

import os
import signal
from typing import Any, Sequence


def die_with_parent(parent_pid: int) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux prctl
    PR_SET_PDEATHSIG), and leave at once if the parent is already gone."""
    import ctypes
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass   # not Linux: the closed pipe ends still end the process on EOF
    if os.getppid() != parent_pid:
        os._exit(0)


def detach(parent_pid: int, inherited: Sequence[Any]) -> None:
    """Close the parent's pipe ends the fork copied (the parent's death then reaches a
    blocked ``recv``/``send`` as EOF), leave Ctrl-C to the parent (it answers it for the
    whole process group, so no forked process reports an interrupted export as an error),
    die with it, and send this process's stdout and stderr to /dev/null: C++ warnings
    (TorchScript shape inference, onnxruntime kernels), the TorchScript exporter's IR
    graph on a failed export and onnx's generators' prints would garble the progress line;
    whatever matters reaches the parent as data."""
    for c in inherited:
        c.close()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent_pid)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.dup2(devnull, 1)
