"""From a captured script run to a Case and its exported model.

Which op the graph is about (the one that is not glue, or ``--op``, or a
``# torch-prover: op=X`` line), which PyTorch tensors the graph inputs are, and the
script's own model renamed to the engine's conventions (outputs ``y0..``), so the engine
proves the very graph the script wrote.
"""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx
import torch

from .case import Case, Spec, describe
from .export import Exported, model_opset, quiet
from .script_capture import ScriptRun, _fill, _leaves

GLUE_OPS = frozenset({"Cast", "CastLike", "Reshape", "Shape", "Squeeze", "Unsqueeze",
                      "Identity", "Constant"})
"""Ops exporters put around a target (index reshapes, dtype casts, shape reads). One of them
is the target only when it is the only op that computes on the tensors."""
SHAPE_SOURCES = frozenset({"Shape", "Size"})


def _node_reads(node: onnx.NodeProto) -> list[str]:
    names = [n for n in node.input if n]
    for attr in node.attribute:
        for g in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
            for n in g.node:
                names += _node_reads(n)
    return names


@dataclass(frozen=True)
class _Live:
    op: str             # op type, or domain::op outside ai.onnx
    plumbing: bool      # computes only on values derived from Shape/Size: shape arithmetic
    produces_output: bool


def _live_nodes(model: onnx.ModelProto, tracked: set[str]) -> list[_Live]:
    """The nodes that compute on the script's tensors (not on constants only), in order."""
    live, shape_derived = set(tracked), set()
    outputs = {o.name for o in model.graph.output}
    found = []
    for node in model.graph.node:
        reads = [n for n in _node_reads(node) if n in live]
        if not reads:
            continue
        outs = [o for o in node.output if o]
        live.update(outs)
        plumbing = node.op_type in SHAPE_SOURCES or all(n in shape_derived for n in reads)
        if plumbing:
            shape_derived.update(outs)
        found.append(_Live(node.op_type if node.domain in ("", "ai.onnx")
                           else f"{node.domain}::{node.op_type}", plumbing,
                           any(o in outputs for o in outs)))
    return found


def infer_op(model: onnx.ModelProto, tracked: set[str]) -> tuple[str | None, list[str]]:
    """(target op or None, candidates). The target is the one op computing on the tensors;
    else the one such op that is not glue; else the one that is not shape arithmetic
    (Shape -> Concat -> ...) feeding something else."""
    nodes = _live_nodes(model, tracked)
    ops = list(dict.fromkeys(n.op for n in nodes))
    for keep in (lambda n: True,
                 lambda n: n.op not in GLUE_OPS,
                 lambda n: n.op not in GLUE_OPS and (not n.plumbing or n.produces_output)):
        left = list(dict.fromkeys(n.op for n in nodes if keep(n)))
        if len(left) == 1:
            return left[0], ops
        if not left:
            break
    return None, ops


class BoundModule(torch.nn.Module):
    """``module(*args, **kwargs)`` with the script's non-tensor arguments filled back in;
    ``forward`` takes only the tensors, so the probe can call it like any case model.
    ``named_parameters`` is the inner module's, unprefixed: those are the initializer names."""

    def __init__(self, module: torch.nn.Module, args: tuple, kwargs: dict):
        super().__init__()
        self.inner = module
        self.template = (args, kwargs)

    def named_parameters(self, *a: Any, **k: Any):
        return self.inner.named_parameters(*a, **k)

    def forward(self, *tensors: torch.Tensor) -> Any:
        args, kwargs = _fill(self.template, iter(tensors))
        return self.inner(*args, **kwargs)


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
        leaves = _leaves(a)
        names += [base] if len(leaves) == 1 and isinstance(a, torch.Tensor) else [
            f"{base}_{k}" if base else None for k in range(len(leaves))]
    for key, v in kwargs.items():
        leaves = _leaves(v)
        names += [key] if isinstance(v, torch.Tensor) else [
            f"{key}_{k}" for k in range(len(leaves))]
    return names


def _value_names(graph: onnx.GraphProto) -> set[str]:
    names = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    for node in graph.node:
        names.update(node.output)
        for attr in node.attribute:
            for g in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
                names |= _value_names(g)
    return names


def _rename(graph: onnx.GraphProto, names: dict[str, str]) -> None:
    """Rename values throughout ``graph`` and its subgraphs (which may read outer values)."""
    def fix(seq) -> None:
        for k, n in enumerate(seq):
            if n in names:
                seq[k] = names[n]
    for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
        vi.name = names.get(vi.name, vi.name)
    for node in graph.node:
        fix(node.input)
        fix(node.output)
        for attr in node.attribute:
            for g in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
                _rename(g, names)


@dataclass
class Prepared:
    """What the script exported, as the engine's Case and Exported."""

    case: Case
    exported: Exported
    leaves: tuple[torch.Tensor, ...]          # the script's own tensors, in case-input order
    outputs: tuple[torch.Tensor, ...]         # module outputs on them
    renamed: dict[str, str]                   # graph name -> name in the proved model
    candidates: list[str]                     # ops computing on the tensors
    inferred: str | None                      # what the graph alone says the target is
    op_from: str                              # "--op" | "script directive" | "graph"
    notes: list[str]


DIRECTIVE = re.compile(r"^\s*#\s*torch-prover:(.*)$", re.MULTILINE)
DIRECTIVE_KEYS = {"op": str, "fwd_tol": float, "vjp_tol": float}


def directives(source: str) -> dict[str, Any]:
    """``# torch-prover: op=Constant fwd_tol=20`` lines: what a script declares about itself
    (the target op when the graph cannot say, tolerances for random outputs)."""
    from .cli import UsageError
    found: dict[str, Any] = {}
    for line in DIRECTIVE.findall(source):
        for token in line.split():
            key, _, value = token.partition("=")
            if key not in DIRECTIVE_KEYS or not value:
                raise UsageError(f"unknown script directive {token!r} (known: "
                                 f"{', '.join(k + '=...' for k in DIRECTIVE_KEYS)})")
            try:
                found[key] = DIRECTIVE_KEYS[key](value)
            except ValueError:
                raise UsageError(f"script directive {token!r}: not a {key} value") from None
    return found


def _case_name(path: Path) -> str:
    name = re.sub(r"[^a-z0-9_]+", "_", path.stem.lower()).strip("_")
    return name or "script"


def _float_dtype(leaves: list[torch.Tensor], module: torch.nn.Module) -> torch.dtype:
    params = {p.dtype for p in module.parameters() if p.is_floating_point()}
    if len(params) == 1:
        return params.pop()
    floats = [t.dtype for t in leaves if t.is_floating_point()]
    if not floats:
        return torch.float32
    return min(floats, key=lambda d: torch.finfo(d).bits)


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


def _match_inputs(gin: list[str], py: list[str | None]) -> list[int]:
    """Index of the tensor argument behind each graph input. Positional when every tensor is
    a graph input; otherwise (an exporter dropped an unused one) by name, or by the position
    TorchScript writes into its default names (``onnx::Mul_2``)."""
    from .cli import UsageError
    if len(gin) == len(py):
        return list(range(len(py)))
    by_name = [py.index(g) if g in py else None for g in gin]
    if None not in by_name:
        return by_name
    by_pos = [int(m.group(1)) if (m := re.search(r"_(\d+)$", g)) else None for g in gin]
    if None not in by_pos and len(set(by_pos)) == len(gin) and max(by_pos) < len(py):
        return by_pos
    raise UsageError(f"the exported graph has {len(gin)} inputs ({', '.join(gin)}) for the "
                     f"{len(py)} tensors the script passed to torch.onnx.export; cannot tell "
                     "which is which (name them with input_names=)")


def _pick_op(op: str | None, declared: dict[str, Any], model: onnx.ModelProto,
             tracked: set[str]) -> tuple[str, str | None, list[str], str]:
    """(op, inferred, candidates, where the op came from)."""
    from .cli import UsageError
    from .tags import canonical_op
    inferred, candidates = infer_op(model, tracked)
    chosen, origin = (op, "--op") if op else (declared.get("op"), "script directive")
    if chosen:
        chosen = canonical_op(chosen)
        present = {n.op_type for n in model.graph.node}
        if chosen not in present:
            raise UsageError(f"the exported graph has no {chosen} node (it has: "
                             f"{', '.join(sorted(present)) or 'no nodes'})")
        return chosen, inferred, candidates, origin
    if inferred is None:
        named = [c for c in candidates if "::" not in c]
        raise UsageError(f"cannot tell which op the script proves: the graph computes with "
                         f"{', '.join(candidates) or 'no op on its inputs'}; pass --op "
                         f"({' or '.join(named) or 'OP'})")
    if "::" in inferred:
        raise UsageError(f"the target op {inferred} is not an ai.onnx op; torch-prover proves "
                         "ai.onnx ops")
    return canonical_op(inferred), inferred, candidates, "graph"


def prepare(run: ScriptRun, op: str | None = None) -> Prepared:
    """Turn the script's last successful export into a Case and an Exported (UsageError
    with one line when the script gives nothing to prove)."""
    from .cli import UsageError
    from .probe import flatten_outputs

    failed = [c for c in run.exports if c.error]
    if run.error:
        if failed and not any(c.model is not None for c in run.exports):
            raise UsageError(f"the script's export failed: {failed[-1].error}")
        raise UsageError(f"{run.error}; fix the script (torch-prover --debug run shows the "
                         "traceback)")
    done = [c for c in run.exports if c.model is not None]
    if not done:
        raise UsageError("the script never calls torch.onnx.export: there is no ONNX model to "
                         "attribute its gradients to")
    if not run.backward:
        raise UsageError("the script never calls torch.autograd.backward, Tensor.backward or "
                         "torch.autograd.grad: Method 1 needs a backward pass with a dy to show "
                         "which tensors carry gradients")
    declared = directives(run.source)
    call = done[-1]
    notes = [f"the script exported {len(done)} models; proving the last one"
             ] if len(done) > 1 else []
    module = call.module
    if not isinstance(module, torch.nn.Module):
        raise UsageError(f"the script exports a {type(module).__name__}; torch-prover proves an "
                         "exported torch.nn.Module")
    args, kwargs = _split_args(call.args, call.kwargs)
    leaves = _leaves((args, kwargs))
    flat = not kwargs and all(isinstance(a, torch.Tensor) for a in args)
    model = onnx.ModelProto()
    model.CopyFrom(call.model)
    graph = model.graph
    inits = {t.name for t in graph.initializer}
    if any(i.name in inits for i in graph.input):   # keep_initializers_as_inputs=True
        kept = [i for i in graph.input if i.name not in inits]
        del graph.input[:]
        graph.input.extend(kept)
        notes.append("dropped the initializers listed as graph inputs "
                     "(keep_initializers_as_inputs=True)")
    gin = [i.name for i in graph.input]
    asked = list(call.options.get("input_names") or [])
    py = [asked[i] if i < len(asked) else p
          for i, p in enumerate(_python_names(module, args, kwargs))]
    which = _match_inputs(gin, py)
    existing = _value_names(graph)
    names: list[str] = []
    for i, p in enumerate(py):
        g = gin[which.index(i)] if i in which else None
        good = p and p.isidentifier() and p not in names and (p == g or p not in existing)
        names.append(p if good and not (g and i < len(asked)) else g or f"input_{i}")
    renamed = {gin[k]: names[i] for k, i in enumerate(which) if gin[k] != names[i]}
    if len(gin) < len(leaves):
        unused = [names[i] for i in range(len(leaves)) if i not in which]
        notes.append(f"the exporter dropped unused input(s) {', '.join(unused)}")

    leaves, swapped = _use_backward_values(leaves, run, module)
    if swapped:
        placeholders = ", ".join(names[i] for i in swapped)
        notes.append(f"the script exported placeholder input(s) ({placeholders}); the proof "
                     "uses the tensors its backward pass differentiated (same shape and dtype), "
                     "so the evidence matches its printed gradients")
    requires = [t.is_floating_point() and t.requires_grad for t in leaves]
    if not any(requires) and any(t.is_floating_point() for t in leaves):
        requires = [t.is_floating_point() for t in leaves]
        notes.append("no exported input requires grad; probing every floating input")
    specs = tuple(Spec("custom", make=(lambda t: lambda gen, dt: t.detach().clone())(t),
                       requires_grad=r) for t, r in zip(leaves, requires))
    bound: torch.nn.Module = module if flat else BoundModule(module, args, kwargs)
    args_now = [t.detach().clone().requires_grad_(r) if r else t.detach().clone()
                for t, r in zip(leaves, requires)]
    try:
        with quiet():
            outputs = tuple(o.detach() for o in flatten_outputs(bound(*args_now)))
    except Exception as exc:
        raise UsageError(f"calling the exported module on the script's inputs raised "
                         f"{describe(exc)}") from exc
    gout = [o.name for o in graph.output]
    if len(gout) != len(outputs):
        raise UsageError(f"the exported graph has {len(gout)} outputs for the module's "
                         f"{len(outputs)}; cannot tell which is which")
    for j, g in enumerate(gout):
        if g != f"y{j}":
            if f"y{j}" in existing:
                raise UsageError(f"cannot name graph output {g!r} y{j}: the graph already has a "
                                 f"value y{j}")
            renamed[g] = f"y{j}"
    if set(gin) & set(gout):
        raise UsageError("a graph input is also a graph output; export a module that computes "
                         "something")
    _rename(graph, renamed)

    tracked = {names[i] for i in which} | {n for n, _ in module.named_parameters()}
    op, inferred, candidates, op_from = _pick_op(op, declared, model, tracked)
    try:
        onnx.checker.check_model(model)
    except Exception as exc:
        raise UsageError(f"onnx.checker rejects the script's model: {describe(exc)}") from exc
    opset = model_opset(model)
    case = Case(op, _case_name(run.path), (lambda m: lambda: m)(bound), specs,
                input_names=tuple(names), exporter=call.exporter, opset=opset,
                float_dtype=_float_dtype(leaves, module),
                kind="reference" if call.options.get("custom_translation_table") else "natural",
                fwd_tol=declared.get("fwd_tol"), vjp_tol=declared.get("vjp_tol"),
                notes=f"from the proof script {run.path.name}")
    exported = Exported(model, call.exporter, opset, tuple(names),
                        tuple(f"y{j}" for j in range(len(gout))))
    return Prepared(case, exported, tuple(leaves), outputs, renamed, candidates, inferred,
                    op_from, notes + call.notes)


# ============================================================================ proving
