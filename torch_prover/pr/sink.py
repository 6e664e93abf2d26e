"""Where a script's export went, and in which mode its module was exported.

Why a module of its own: a report must say which bytes the script left behind and which
model was proved, whatever the script did with the export -- a path, an open file, an
``io.BytesIO`` (no file at all), or the dynamo exporter's returned ``ONNXProgram`` saved
later with ``ONNXProgram.save(path)``. The last is not a ``torch.onnx.export`` argument, so
the save is instrumented too (:func:`wrap_save`): the file it writes is the script's file,
its sha256 is the one reported, and -- when no evidence copy was needed -- the model read
back from it is the one proved.

The training mode matters to random ops: Dropout exported in training mode draws a mask,
and the autograd probe must run the module in that mode too, or the PyTorch side of the
proof is the identity (:func:`exported_training`). An ExportedProgram's module has no mode
to set: its graph fixed it (:func:`mode_fixed`).
"""
from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path
from typing import Any, Callable

import onnx
import torch

from ..errors import describe
from .capture import ExportCall, ScriptRun
from .wire import Sink


def sink_of(f: Any) -> Sink:
    """Where ``torch.onnx.export(..., f)`` writes."""
    if f is None:
        return Sink.NONE
    if isinstance(f, (str, os.PathLike)):
        return Sink.PATH
    if isinstance(f, io.BytesIO):
        return Sink.BYTES_IO
    return Sink.FILE_OBJECT


def exported_training(module: Any, was_training: bool, options: dict[str, Any]) -> bool:
    """Whether the export ran the module in training mode: the dynamo exporter exports the
    module in the mode it is in; the TorchScript exporter follows ``training=`` (EVAL by
    default, PRESERVE keeps the module's mode)."""
    if not isinstance(module, torch.nn.Module) or mode_fixed(module):
        return False
    if options.get("dynamo", True):
        return was_training
    mode = options.get("training")
    modes = torch.onnx.TrainingMode
    if mode is None or mode == modes.EVAL:
        return False
    if mode == modes.TRAINING:
        return True
    return was_training


def mode_fixed(module: Any) -> bool:
    """Whether ``module`` is an ExportedProgram's module (``ep.module()``): its mode was fixed
    when ``torch.export.export`` traced it, and it refuses ``train()`` and ``eval()``
    (NotImplementedError). Its ``training`` flag says nothing about the graph, so the runner
    neither reads nor sets it."""
    if not isinstance(module, torch.fx.GraphModule):
        return False
    try:
        module.train(module.training)
    except NotImplementedError:
        return True
    return False


def _saved_bytes(destination: Any) -> bytes | None:
    if isinstance(destination, io.BytesIO):
        return destination.getvalue()
    if isinstance(destination, (str, os.PathLike)):
        return Path(destination).read_bytes()
    return None


def note_saved(call: ExportCall, destination: Any) -> None:
    """The script saved ``call``'s ONNXProgram to ``destination``: that file is the script's
    file; unless an evidence copy is proved, the model read back from it is the one proved
    (what ``python script.py`` leaves on disk)."""
    data = _saved_bytes(destination)
    if data is None:
        return
    is_path = isinstance(destination, (str, os.PathLike))
    call.sink = Sink.PROGRAM_SAVE if is_path else Sink.BYTES_IO
    call.target = os.path.abspath(os.fspath(destination)) if is_path else None
    call.file_sha256 = hashlib.sha256(data).hexdigest()
    if call.copy:
        return
    try:
        saved = onnx.load(os.fspath(destination)) if is_path else onnx.load_from_string(data)
    except Exception as exc:  # protobuf's DecodeError, a missing external-data file...
        call.notes.append(f"ONNXProgram.save wrote a file that does not load back "
                          f"({describe(exc)}): proving the exported model")
        return
    call.model = saved


def wrap_save(run: ScriptRun, real: Callable) -> Callable:
    """``ONNXProgram.save``, recording the save of a program the script's export returned."""
    def save(self: Any, destination: Any, *args: Any, **kwargs: Any) -> Any:
        result = real(self, destination, *args, **kwargs)
        call = next((c for c in reversed(run.exports) if c.returned is self), None)
        if call is not None and not run.busy:
            note_saved(call, destination)
        return result
    return save
