"""What a classic proof script did: its backward calls and export calls, recorded.

The records (:class:`ScriptRun`, :class:`BackwardCall`, :class:`ExportCall`) and the
wrappers that record ``torch.autograd.backward``, ``Tensor.backward`` and
``torch.autograd.grad`` while the script runs (child.py installs them, in the
script's own process; these records hold live objects and never leave it).
"""
from __future__ import annotations

import contextlib
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import onnx
import torch

from ..errors import describe
from .wire import Outcome, Sink


# ============================================================================ capture
@dataclass
class BackwardCall:
    """One backward pass the script asked for."""

    api: str                                   # torch.autograd.backward | Tensor.backward | ...
    tensors: tuple[torch.Tensor, ...]          # what was differentiated
    dys: tuple[torch.Tensor | None, ...]       # the dy given for each (None: implicit)
    inputs: tuple[torch.Tensor, ...] = ()      # torch.autograd.grad's inputs
    results: tuple[torch.Tensor | None, ...] = ()
    error: str | None = None


@dataclass
class ExportCall:
    """One torch.onnx.export call and what the runner did to make it work."""

    module: Any
    args: Any
    kwargs: dict[str, Any]
    options: dict[str, Any]
    target: str | None = None                  # the file the script asked for, absolute
    model: onnx.ModelProto | None = None
    exporter: str = "dynamo"
    file_sha256: str | None = None
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    copy: list[str] = field(default_factory=list)   # how the evidence copy differs, and why
    sink: Sink = Sink.NONE                     # where the export went (``target``: its file)
    returned: Any = None                       # what torch.onnx.export returned (ONNXProgram.save)
    training: bool = False                     # exported in training mode (Dropout draws)
    move_to: int | None = None                 # the opset the script asked for, which the
    # dynamo export (TorchScript unavailable) did not build: the prover relabels to it


@dataclass
class ScriptRun:
    path: Path
    source: str
    output: str = ""
    backward: list[BackwardCall] = field(default_factory=list)
    exports: list[ExportCall] = field(default_factory=list)
    error: str | None = None                   # one line, with the script's line number
    traceback: str | None = None
    ended: Outcome = Outcome.FINISHED          # FINISHED, EXITED or RAISED
    busy: int = 0                              # >0 while inside an instrumented call


def _tensors(x: Any) -> tuple[torch.Tensor, ...]:
    if x is None:
        return ()
    if isinstance(x, torch.Tensor):
        return (x,)
    if isinstance(x, dict):
        x = list(x.values())
    return tuple(t for t in x if isinstance(t, torch.Tensor))


def _dys(grads: Any, n: int) -> tuple[torch.Tensor | None, ...]:
    if grads is None:
        return (None,) * n
    if isinstance(grads, torch.Tensor):
        grads = (grads,)
    grads = list(grads) + [None] * n
    return tuple(g if isinstance(g, torch.Tensor) else None for g in grads[:n])


def _tracing() -> bool:
    """Inside torch's own tracing (torch.compile of a scan/cond body, torch.export): those
    autograd calls are torch's, on fake tensors, not the script's backward pass."""
    return torch.compiler.is_compiling() or torch.compiler.is_exporting()


@contextlib.contextmanager
def instrumenting(run: ScriptRun):
    run.busy += 1
    try:
        yield
    finally:
        run.busy -= 1


def _called(run: ScriptRun, call: BackwardCall, fn: Callable, *args: Any, **kwargs: Any
            ) -> Any:
    """``fn(*args, **kwargs)`` for a recorded call, uninstrumented inside (the autograd
    calls it makes are its own), its error kept on ``call``."""
    with instrumenting(run):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            call.error = describe(exc)
            raise


def recording(run: ScriptRun, real: Callable, record_of: Callable[[dict], BackwardCall]
               ) -> Callable:
    """``real`` (an autograd entry point), recording each call the script makes."""
    sig = inspect.signature(real)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if run.busy or _tracing():      # nested (Tensor.backward -> autograd.backward) or torch's
            return real(*args, **kwargs)
        call = record_of(sig.bind(*args, **kwargs).arguments)
        run.backward.append(call)
        result = _called(run, call, real, *args, **kwargs)
        if call.inputs:
            call.results = tuple(result)
        return result
    return wrapper


def _picked(args: tuple, argnums: Any) -> tuple[Any, ...]:
    """The arguments ``torch.func.grad`` differentiates (``argnums``: an int or a tuple)."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    return tuple(args[i] for i in nums if -len(args) <= i < len(args))


def _flat_grads(x: Any) -> tuple[torch.Tensor | None, ...]:
    return tuple(t if isinstance(t, torch.Tensor) else None
                 for t in (x if isinstance(x, (tuple, list)) else (x,)))


def func_grad(run: ScriptRun, real: Callable, api: str) -> Callable:
    """``torch.func.grad`` / ``grad_and_value``, recording each differentiated call with every
    argument in ``argnums`` and the gradient returned for it: credit for every argument
    (``torch.autograd.grad`` inside sees functorch's wrapped tensors, not the script's)."""
    def transform(func: Callable, argnums: Any = 0, has_aux: bool = False, **kw: Any):
        inner = real(func, argnums=argnums, has_aux=has_aux, **kw)

        def differentiated(*args: Any, **kwargs: Any) -> Any:
            if run.busy or _tracing():
                return inner(*args, **kwargs)
            call = BackwardCall(api, (), (), _tensors(list(_picked(args, argnums))))
            run.backward.append(call)
            out = _called(run, call, inner, *args, **kwargs)
            grads = out[0] if api.endswith("grad_and_value") else out
            if has_aux:
                grads = grads[0]
            call.results = _flat_grads(grads)
            return out
        return differentiated
    return transform


def func_vjp(run: ScriptRun, real: Callable) -> Callable:
    """``torch.func.vjp``: the returned ``vjp_fn``, when called, records the cotangents (the
    dy) and every primal's gradient."""
    def vjp(func: Callable, *primals: Any, **kw: Any):
        out = real(func, *primals, **kw)
        if run.busy or _tracing():
            return out
        value, fn, *aux = out

        def vjp_fn(*cotangents: Any, **k: Any) -> Any:
            call = BackwardCall("torch.func.vjp", _tensors(_flat_grads(value)),
                                _dys(list(cotangents), len(_tensors(_flat_grads(value)))),
                                _tensors(list(primals)))
            run.backward.append(call)
            grads = _called(run, call, fn, *cotangents, **k)
            call.results = _flat_grads(grads)
            return grads
        return (value, vjp_fn, *aux)
    return vjp


def backward_call(b: dict) -> BackwardCall:
    tensors = _tensors(b.get("tensors"))
    dys = b.get("grad_tensors")
    return BackwardCall("torch.autograd.backward", tensors,
                        _dys(b.get("grad_variables") if dys is None else dys, len(tensors)))


def tensor_backward_call(b: dict) -> BackwardCall:
    return BackwardCall("Tensor.backward", (b["self"],), _dys(b.get("gradient"), 1))


def grad_call(b: dict) -> BackwardCall:
    tensors = _tensors(b.get("outputs"))
    return BackwardCall("torch.autograd.grad", tensors, _dys(b.get("grad_outputs"), len(tensors)),
                        _tensors(b.get("inputs")))


def refill(template: Any, tensors) -> Any:
    if isinstance(template, torch.Tensor):
        return next(tensors)
    if isinstance(template, (list, tuple)):
        return type(template)(refill(t, tensors) for t in template)
    if isinstance(template, dict):
        return {k: refill(v, tensors) for k, v in template.items()}
    return template


def tensor_leaves(template: Any) -> list[torch.Tensor]:
    out: list[torch.Tensor] = []
    if isinstance(template, torch.Tensor):
        out.append(template)
    elif isinstance(template, (list, tuple)):
        for t in template:
            out += tensor_leaves(t)
    elif isinstance(template, dict):
        for t in template.values():
            out += tensor_leaves(t)
    return out
