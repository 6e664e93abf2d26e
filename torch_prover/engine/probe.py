"""Autograd probe: run the case's module, backpropagate a seeded ``dy``, classify every tensor.

Evidence classes (docs/design.md §1.1): grad, zero-grad, no-grad, unsupported, integer for inputs and
module parameters; grad, zero-grad, no-grad, unsupported, integer, detached for outputs.
A refusal ("the derivative for '_unique2' is not implemented") is ``unsupported``: a gap in
PyTorch, which says nothing about the math; ``no-grad`` is autograd answering None. "zero-grad" needs
the gradient to be identically zero on every seed, so one lucky sample cannot decide it.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import torch

from ..case import Case
from ..errors import CaseError, first_line

from ..vocab import Evidence

GRAD, ZERO_GRAD, NO_GRAD, UNSUPPORTED, INTEGER, DETACHED, UNTRACKED = (
    Evidence.GRAD, Evidence.ZERO_GRAD, Evidence.NO_GRAD, Evidence.UNSUPPORTED,
    Evidence.INTEGER, Evidence.DETACHED, Evidence.UNTRACKED)


@dataclass(frozen=True)
class TensorEvidence:
    """What autograd said about one PyTorch tensor, over all seeds."""

    label: str          # "x", "param conv.weight", "output 0"
    dtype: str          # "float64", "int64", ...
    shape: tuple[int, ...]
    evidence: Evidence
    detail: str         # one line, for the reason text


@dataclass(frozen=True)
class SeedRun:
    """Tensors of one seed, kept for the numeric check and the evidence files."""

    seed: int
    inputs: tuple[torch.Tensor, ...]
    params: dict[str, torch.Tensor]
    outputs: tuple[torch.Tensor, ...]
    dy: tuple[torch.Tensor | None, ...]
    input_grads: tuple[torch.Tensor | None, ...]
    param_grads: dict[str, torch.Tensor | None]


@dataclass(frozen=True)
class ProbeResult:
    inputs: tuple[TensorEvidence, ...]      # in case input order
    params: dict[str, TensorEvidence]       # module parameter name -> evidence
    outputs: tuple[TensorEvidence, ...]
    runs: tuple[SeedRun, ...]


def flatten_outputs(out: Any, label: str = "") -> tuple[torch.Tensor, ...]:
    if isinstance(out, torch.Tensor):
        return (out,)
    if isinstance(out, (tuple, list)):
        flat: list[torch.Tensor] = []
        for o in out:
            flat.extend(flatten_outputs(o, label))
        return tuple(flat)
    raise CaseError(f"{label}the model returned a {type(out).__name__}; return tensors only")


def _dtype(t: torch.Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")


def _is_float(t: torch.Tensor) -> bool:
    return t.is_floating_point() or t.is_complex()


# What autograd says when it refuses a derivative: evidence. Anything else is a crash.
_REFUSALS = ("derivative for", "not implemented", "is not differentiable",
             "not differentiable with respect to", "does not require grad",
             "does not have a grad_fn")


def _grads(outs, dys, leaves, label: str = "") -> tuple[list[torch.Tensor | None], list[str]]:
    """Gradient of sum <dy, out> w.r.t. each leaf separately, so a refusal is attributable."""
    grads: list[torch.Tensor | None] = []
    errors: list[str] = []
    for leaf in leaves:
        try:
            (g,) = torch.autograd.grad(outs, [leaf], grad_outputs=dys, retain_graph=True,
                                       allow_unused=True)
            grads.append(g)
            errors.append("")
        except RuntimeError as exc:
            first = first_line(exc) or type(exc).__name__
            if not any(r in str(exc) for r in _REFUSALS):
                raise CaseError(f"{label}backward crashed (not a refusal to differentiate): "
                                f"{first[:300]}") from exc
            grads.append(None)
            errors.append(first)
    return grads, errors


def _seeded_dy(out: torch.Tensor, seed: int, j: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(10_000 + 100 * seed + j)
    return torch.randn(out.shape, generator=gen, dtype=torch.float64).to(out.dtype)


def _classify(grads_over_seeds: list[torch.Tensor | None], errors: list[str]) -> tuple[str, str]:
    present = [g for g in grads_over_seeds if g is not None]
    if not present:
        err = next((e for e in errors if e), "")
        if err:
            return UNSUPPORTED, f"PyTorch refuses: {err}"
        return NO_GRAD, "autograd gives no gradient (None)"
    if all(bool((g == 0).all()) for g in present):
        return ZERO_GRAD, f"gradient identically zero on all {len(grads_over_seeds)} seeds"
    peak = max(float(g.abs().max()) for g in present)
    return GRAD, f"nonzero gradient (max |grad| {peak:.3g})"


def probe(case: Case) -> ProbeResult:
    """Run the autograd probe of ``case`` on each of its seeds.

    Scripted modules (the TorchScript cases) run unoptimised: the profiling executor's
    specialised graph, built on the second call, trips an internal alias-analysis assert
    in backward for list-valued graphs (split -> cat) -- a crash, not evidence.
    """
    with torch.jit.optimized_execution(False), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # model warnings (stft's window notice) are not evidence
        return _probe(case)


def _probe(case: Case) -> ProbeResult:
    label = f"{case.op}/{case.name}: "
    module = case.build_module()
    param_names = [n for n, p in module.named_parameters() if p.requires_grad]
    runs: list[SeedRun] = []
    per_input: list[tuple[list, list]] = [([], []) for _ in case.inputs]
    per_param: dict[str, tuple[list, list]] = {n: ([], []) for n in param_names}
    per_output: list[tuple[list, list]] | None = None
    for seed in case.seeds:
        args = list(case.build_inputs(seed))
        for i, (spec, a) in enumerate(zip(case.inputs, args)):
            if _is_float(a) and spec.requires_grad:
                args[i] = a.detach().clone().requires_grad_(True)
        params = dict(module.named_parameters())
        torch.manual_seed(seed)  # random ops in the model draw the same on every run
        try:
            outs = flatten_outputs(module(*args), label)
        except CaseError:
            raise
        except Exception as exc:
            raise CaseError(f"{label}the model raised {type(exc).__name__}: "
                            f"{first_line(exc)}") from exc
        if per_output is None:
            per_output = [([], []) for _ in outs]
        tracked = [j for j, o in enumerate(outs) if _is_float(o) and o.requires_grad]
        dys: list[torch.Tensor | None] = [None] * len(outs)
        for j in tracked:
            dys[j] = _seeded_dy(outs[j], seed, j)
        leaves_idx = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.requires_grad]
        leaves = [args[i] for i in leaves_idx] + [params[n] for n in param_names]
        t_outs = [outs[j] for j in tracked]
        t_dys = [dys[j] for j in tracked]
        input_grads: list[torch.Tensor | None] = [None] * len(args)
        param_grads: dict[str, torch.Tensor | None] = {n: None for n in param_names}
        if t_outs and leaves:
            grads, errors = _grads(t_outs, t_dys, leaves, label)
        else:
            grads, errors = [None] * len(leaves), [""] * len(leaves)
        for k, i in enumerate(leaves_idx):
            input_grads[i] = grads[k]
            per_input[i][0].append(grads[k])
            per_input[i][1].append(errors[k])
        for k, n in enumerate(param_names):
            g, e = grads[len(leaves_idx) + k], errors[len(leaves_idx) + k]
            param_grads[n] = g
            per_param[n][0].append(g)
            per_param[n][1].append(e)
        # outputs: does each one, alone, send a nonzero gradient to any leaf?
        for j, o in enumerate(outs):
            if j in tracked and leaves:
                gs, es = _grads([o], [dys[j]], leaves, label)
                nonzero = [g for g in gs if g is not None and bool((g != 0).any())]
                some = [g for g in gs if g is not None]
                per_output[j][0].append(nonzero[0] if nonzero else (some[0] if some else None))
                per_output[j][1].append(next((e for e in es if e), ""))
        runs.append(SeedRun(
            seed, tuple(a.detach() for a in args),
            {n: p.detach().clone() for n, p in params.items()},
            tuple(o.detach() for o in outs), tuple(dys), tuple(
                g.detach() if g is not None else None for g in input_grads),
            {n: (g.detach() if g is not None else None) for n, g in param_grads.items()}))
    first = runs[0]
    inputs_ev = []
    for i, (spec, a) in enumerate(zip(case.inputs, first.inputs)):
        name = case.names[i]
        if not _is_float(a):
            inputs_ev.append(TensorEvidence(name, _dtype(a), tuple(a.shape), INTEGER,
                                            f"{_dtype(a)} tensor cannot carry a gradient"))
        elif not spec.requires_grad:
            inputs_ev.append(TensorEvidence(name, _dtype(a), tuple(a.shape), UNTRACKED,
                                            "the case does not request a gradient for it"))
        else:
            ev, detail = _classify(*per_input[i])
            inputs_ev.append(TensorEvidence(name, _dtype(a), tuple(a.shape), ev, detail))
    params_ev = {}
    for n in param_names:
        p = first.params[n]
        ev, detail = _classify(*per_param[n])
        params_ev[n] = TensorEvidence(f"param {n}", _dtype(p), tuple(p.shape), ev, detail)
    outputs_ev = []
    for j, o in enumerate(first.outputs):
        lab = f"output {j}"
        if not _is_float(o):
            outputs_ev.append(TensorEvidence(lab, _dtype(o), tuple(o.shape), INTEGER,
                                             f"{_dtype(o)} tensor cannot carry a gradient"))
        elif first.dy[j] is None:
            outputs_ev.append(TensorEvidence(lab, _dtype(o), tuple(o.shape), DETACHED,
                                             "not connected to any input by autograd"))
        else:
            ev, detail = _classify(*per_output[j])
            if ev == ZERO_GRAD:
                detail = f"its dy reaches the inputs only as zeros ({detail})"
            if ev == GRAD:
                detail = "its dy reaches an input as a nonzero gradient"
            outputs_ev.append(TensorEvidence(lab, _dtype(o), tuple(o.shape), ev, detail))
    return ProbeResult(tuple(inputs_ev), params_ev, tuple(outputs_ev), tuple(runs))
