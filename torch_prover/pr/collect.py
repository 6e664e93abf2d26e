"""In the script's process: from the live objects of a run to the plain data of a Capture.

Everything here needs the script's own objects -- its module, the very tensors its
backward pass differentiated (matched by identity), the gradients they hold -- so it runs
in the child, after the script. What it returns is data only (:mod:`wire`); the
prover does the rest (graph matching, op inference, the proof) in its own process.
"""
from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import torch

from ..errors import describe
from ..engine.export import quiet
from ..engine.probe import flatten_outputs
from .capture import ScriptRun, tensor_leaves
from .module import Bound, param_table, save_module
from .wire import BackwardSeen, Capture, ExportInfo, Grad, GradSeen, Outcome

TRACEBACK_CAP = 20_000


def _split_args(args: Any, kwargs: dict) -> tuple[tuple, dict]:
    """torch.onnx.export's args: a tensor, a tuple, or (legacy) a tuple ending in a dict."""
    if not isinstance(args, tuple):
        args = (args,) if not isinstance(args, list) else tuple(args)
    if args and isinstance(args[-1], dict) and not kwargs:
        return args[:-1], dict(args[-1])
    return args, dict(kwargs)


def _python_names(module: torch.nn.Module, args: tuple, kwargs: dict) -> list[str | None]:
    """A PyTorch-side name per tensor leaf: forward's parameter names (``x``), kwargs keys."""
    try:
        params = [p for p in inspect.signature(module.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names: list[str | None] = []
    for i, a in enumerate(args):
        base = params[i].name if i < len(params) else None
        leaves = tensor_leaves(a)
        names += [base] if len(leaves) == 1 and isinstance(a, torch.Tensor) else [
            f"{base}_{k}" if base else None for k in range(len(leaves))]
    for key, v in kwargs.items():
        leaves = tensor_leaves(v)
        names += [key] if isinstance(v, torch.Tensor) else [
            f"{key}_{k}" for k in range(len(leaves))]
    return names


def _backward_leaves(run: ScriptRun) -> list[torch.Tensor]:
    """The leaf tensors the script's backward passes reached (AccumulateGrad nodes), and the
    inputs of its torch.autograd.grad calls, in the order found."""
    found: dict[int, torch.Tensor] = {}
    for call in run.backward:
        for t in call.inputs:
            found.setdefault(id(t), t)
        stack = [t.grad_fn for t in call.tensors if t.grad_fn is not None]
        seen: set[int] = set()
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            variable = getattr(node, "variable", None)
            if isinstance(variable, torch.Tensor):
                found.setdefault(id(variable), variable)
            stack.extend(n for n, _ in node.next_functions)
    return list(found.values())


def _use_backward_values(leaves: list[torch.Tensor], run: ScriptRun, module: torch.nn.Module
                         ) -> tuple[list[torch.Tensor], list[int]]:
    """Export arguments that are placeholders (floating, no requires_grad) while the backward
    pass differentiated another tensor of the same shape and dtype: use that tensor. The graph
    depends on shapes only; the evidence should be the script's."""
    params = {id(p) for p in module.parameters()}
    pool = [t for t in _backward_leaves(run)
            if id(t) not in params and all(t is not x for x in leaves)]
    out, swapped = list(leaves), []
    for i, t in enumerate(leaves):
        if not t.is_floating_point() or t.requires_grad:
            continue
        alike = [c for c in pool if c.shape == t.shape and c.dtype == t.dtype]
        if len(alike) == 1:
            out[i] = alike[0]
            pool.remove(alike[0])
            swapped.append(i)
    return out, swapped


def _float_dtype(leaves: list[torch.Tensor], module: torch.nn.Module) -> torch.dtype:
    params = {p.dtype for p in module.parameters() if p.is_floating_point()}
    if len(params) == 1:
        return params.pop()
    floats = [t.dtype for t in leaves if t.is_floating_point()]
    if not floats:
        return torch.float32
    return min(floats, key=lambda d: torch.finfo(d).bits)


# ============================================================================ the script's evidence
def _seen(g: torch.Tensor | None) -> GradSeen:
    if g is None:
        return GradSeen(Grad.NONE)
    g = g.detach()
    if not bool((g != 0).any()):
        return GradSeen(Grad.ZERO)
    return GradSeen(Grad.NONZERO, float(g.abs().max()))


def _which_output(t: torch.Tensor, outputs: tuple[torch.Tensor, ...]) -> int | None:
    """The module output ``t`` is (equal values; else the only one of its shape and dtype)."""
    alike = [j for j, o in enumerate(outputs) if o.shape == t.shape and o.dtype == t.dtype]
    try:
        same = [j for j in alike if torch.equal(outputs[j], t.detach())]
    except Exception:   # not a plain tensor
        same = []
    if same:
        return same[0]
    return alike[0] if len(alike) == 1 else None


def _evidence(run: ScriptRun, module: torch.nn.Module, leaves: list[torch.Tensor],
              outputs: tuple[torch.Tensor, ...]):
    """What the script's own backward showed: which outputs got a dy, which tensors a grad."""
    given: dict[int, torch.Tensor] = {}
    for call in run.backward:
        for g, r in zip(call.inputs, call.results):
            given[id(g)] = r
    leaf_grads: list[GradSeen | None] = []
    for t in leaves:
        if id(t) in given:
            leaf_grads.append(_seen(given[id(t)]))
        elif t.is_floating_point() and t.requires_grad:
            leaf_grads.append(_seen(t.grad))
        else:
            leaf_grads.append(None)
    param_grads = {name: _seen(given.get(id(p), p.grad))
                   for name, p in module.named_parameters()
                   if id(p) in given or p.grad is not None}
    calls = []
    for call in run.backward:
        targets = []
        for t, dy in zip(call.tensors, call.dys):
            j = _which_output(t, outputs)
            what = (f"output {j}" if j is not None
                    else f"a {tuple(t.shape)} tensor computed from the outputs")
            targets.append(what + (" with a dy" if dy is not None else " (implicit dy)"))
        if not call.tensors and call.inputs:     # torch.func.grad: a scalar function's
            targets.append(f"a scalar function of {len(call.inputs)} argument"
                           f"{'s' * (len(call.inputs) > 1)} (implicit dy)")
        calls.append(BackwardSeen(call.api, tuple(targets), call.error))
    return tuple(calls), tuple(leaf_grads), param_grads


def _options(options: dict[str, Any]) -> dict[str, Any]:
    """The export options that are plain values (what the record shows)."""
    def plain(v: Any) -> bool:
        if isinstance(v, (list, tuple)):
            return all(plain(x) for x in v)
        return v is None or isinstance(v, (bool, int, float, str))
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in options.items()
            if not k.startswith("_") and v is not None and plain(v)}


def _scripts_translation(options: dict[str, Any]) -> bool:
    """The export used the script's own custom translations (a reference proof); the
    runner's own (pr/translations.py: an ATen op to the ONNX op of exactly its meaning)
    leave the proof natural."""
    table = options.get("custom_translation_table") or {}
    return any(getattr(fn, "__module__", "") != "torch_prover.pr.translations"
               for fn in table.values())


# ============================================================================ collect
def collect(run: ScriptRun, where: Path) -> Capture:
    """The capture of a finished run; the module saved into ``where`` as a graph."""
    failed = tuple(c.error for c in run.exports if c.error)
    done = [c for c in run.exports if c.model is not None]
    base: dict[str, Any] = dict(
        error=run.error, traceback=(run.traceback or "")[-TRACEBACK_CAP:] or None,
        export_errors=failed, exports_done=len(done), backward_calls=len(run.backward))
    if run.ended is not Outcome.FINISHED or not done or not run.backward:
        return Capture(run.ended, **base)     # the prover says what is missing
    call = done[-1]
    module = call.module
    if isinstance(module, torch.export.ExportedProgram):
        module = module.module()    # proved like the module it was exported from (docs/run.md)
    if not isinstance(module, torch.nn.Module):
        return Capture(Outcome.UNUSABLE, problem=f"the script exports a {type(module).__name__!r} "
                       "object; torch-prover proves an exported torch.nn.Module or "
                       "torch.export.ExportedProgram: export the module itself", **base)
    args, kwargs = _split_args(call.args, call.kwargs)
    leaves = tensor_leaves((args, kwargs))
    flat = not kwargs and all(isinstance(a, torch.Tensor) for a in args)
    names = _python_names(module, args, kwargs)
    leaves, swapped = _use_backward_values(leaves, run, module)
    requires = [t.is_floating_point() and t.requires_grad for t in leaves]
    probing_all = not any(requires) and any(t.is_floating_point() for t in leaves)
    if probing_all:
        requires = [t.is_floating_point() for t in leaves]
    bound = module if flat else Bound(module, (args, kwargs))
    args_now = [t.detach().clone().requires_grad_(r) if r else t.detach().clone()
                for t, r in zip(leaves, requires)]
    try:
        with quiet():
            outputs = tuple(o.detach() for o in flatten_outputs(bound(*args_now)))
    except Exception as exc:   # CaseError included: outputs that are not tensors
        return Capture(Outcome.UNUSABLE, problem=f"calling the exported module on the script's "
                       f"inputs raised {describe(exc)}", **base)
    backward, leaf_grads, param_grads = _evidence(run, module, leaves, outputs)
    info = ExportInfo(call.exporter, call.target, call.file_sha256, _options(call.options),
                      tuple(call.notes), tuple(str(n) for n in call.options.get("input_names")
                                               or ()),
                      _scripts_translation(call.options), tuple(call.copy),
                      call.sink, call.training, call.move_to)
    return Capture(
        Outcome.FINISHED, **base, export=info, python_names=tuple(names),
        requires=tuple(requires), swapped=tuple(swapped), probing_all=probing_all,
        n_outputs=len(outputs), float_dtype=str(_float_dtype(leaves, module)).removeprefix(
            "torch."), params=param_table(module),
        module=save_module(module, leaves, requires, (args, kwargs), flat, where,
                           training=call.training),
        backward=backward, leaf_grads=leaf_grads, param_grads=param_grads,
        leaves=tuple(t.detach() for t in leaves), model=call.model.SerializeToString())
