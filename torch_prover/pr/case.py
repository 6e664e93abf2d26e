"""From a script's capture (plain data) to a Case and its exported model, in the prover.

Which op the graph is about (the one that is not glue, or ``--op``, or a
``# torch-prover: op=X`` line), which PyTorch tensors the graph inputs are, and the
script's own model renamed to the engine's conventions (outputs ``y0..``), so the engine
proves the very graph the script wrote. Everything here reads data the script's process
handed over (:mod:`wire`) and the module loaded from its graph
(:mod:`module`); nothing of the script runs here.

The script's ``# torch-prover:`` lines are read by :mod:`directives`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Sequence

import onnx
import torch

from ..batch.case_free import graph_op
from ..case import Case, Spec
from ..conventions import Applies, Convention
from ..errors import CaseError, describe, first_line
from ..engine.export import Exported, check, initializers_apart, strip_stack_traces
from ..engine.versions.next_opset import relabel_opset
from ..engine.versions.runtimes import model_opset
from ..engine.attribution.mapping import VALUE_SLOTS, subgraphs
from .directives import Directives
from .folded import module_ops
from .grad_conventions import gradient_conventions
from .wire import Capture, ModuleFormat, dtype_of
from ..vocab import ExportRoute

GLUE_OPS = frozenset({"Cast", "CastLike", "Reshape", "Shape", "Squeeze", "Unsqueeze",
                      "Identity", "Constant"})
"""Ops exporters put around a target (index reshapes, dtype casts, shape reads). One of them
is the target only when it is the only op that computes on the tensors."""
SHAPE_SOURCES = frozenset({"Shape", "Size"})


def _node_reads(node: onnx.NodeProto) -> list[str]:
    names = [n for n in node.input if n]
    for g in subgraphs(node):
        for n in g.node:
            names += _node_reads(n)
    return names


@dataclass(frozen=True)
class _Live:
    op: str             # op type, or domain::op outside ai.onnx
    plumbing: bool      # computes only on values derived from Shape/Size: shape arithmetic
    produces_output: bool
    at_output: bool = False   # its output is the script's output past value-preserving glue
    index: int = -1           # in graph.node


def _body_dependent(model: onnx.ModelProto, op: str, opset: int,
                    tracked: set[str]) -> dict[str, Applies]:
    """The target's parameters under convention ``body-dependent``, as the catalogue's If,
    Loop and Scan cases declare them: a graph op's (the schema has a graph attribute) data
    is differentiable or not by the body the node is given, so its tag is unknown -- the
    rule ``prove`` and verify-all's case-free cells apply. Only the parameters the script
    exercises: a node input computed from its tensors, an output a graph output uses."""
    if not graph_op(op, opset):
        return {}
    live = set(tracked)
    for node in model.graph.node:
        if any(n in live for n in _node_reads(node)):
            live.update(node.output)
    used = {o.name for o in model.graph.output}
    for node in reversed(model.graph.node):
        if any(o in used for o in node.output):
            used.update(_node_reads(node))
    why = Applies(Convention.BODY_DEPENDENT, "what the script's body gives (the witnesses); "
                  "the same node with a Floor body would be flat")
    keys = {f"input {i}" for node in model.graph.node if node.op_type == op
            for i, n in enumerate(node.input) if n in live}
    keys |= {f"output {i}" for node in model.graph.node if node.op_type == op
             for i, n in enumerate(node.output) if n in used}
    return dict.fromkeys(sorted(keys), why)


def _moves_values(node: onnx.NodeProto) -> bool:
    return node.domain in ("", "ai.onnx") and (node.op_type in GLUE_OPS
                                               or node.op_type in VALUE_SLOTS)


def _past_glue(model: onnx.ModelProto) -> set[str]:
    """The graph outputs and every value they are made of by glue alone (a Reshape or Cast
    the exporter adds after the script's last op): a node producing one of these computes
    the script's output."""
    producer = {o: n for n in model.graph.node for o in n.output if o}
    found, stack = set(), [o.name for o in model.graph.output]
    while stack:
        v = stack.pop()
        if v in found:
            continue
        found.add(v)
        node = producer.get(v)
        if node is not None and _moves_values(node):
            stack.extend(n for n in node.input if n)
    return found


def _integer_values(model: onnx.ModelProto) -> set[str]:
    """Values whose inferred type is integer or bool (indices, shapes, masks)."""
    try:
        g = onnx.shape_inference.infer_shapes(model).graph
    except Exception:
        g = model.graph
    found = set()
    for vi in list(g.value_info) + list(g.input) + list(g.output):
        t = vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else 0
        if t and not onnx.helper.tensor_dtype_to_np_dtype(t).kind in "fc":
            found.add(vi.name)
    return found


def _live_nodes(model: onnx.ModelProto, tracked: set[str]) -> list[_Live]:
    """The nodes that compute on the script's tensors (not on constants only), in order.
    A node reading only shape-derived or integer values (index arithmetic: the Slice and
    Sub that turn MaxPool's helper indices into the script's) is plumbing."""
    live, shape_derived = set(tracked), set()
    outputs = {o.name for o in model.graph.output}
    near = _past_glue(model)
    integers = _integer_values(model)
    found = []
    for index, node in enumerate(model.graph.node):
        reads = [n for n in _node_reads(node) if n in live]
        if not reads:
            continue
        outs = [o for o in node.output if o]
        live.update(outs)
        plumbing = node.op_type in SHAPE_SOURCES or all(
            n in shape_derived or n in integers for n in reads)
        if plumbing:
            shape_derived.update(outs)
        found.append(_Live(node.op_type if node.domain in ("", "ai.onnx")
                           else f"{node.domain}::{node.op_type}", plumbing,
                           any(o in outputs for o in outs), any(o in near for o in outs), index))
    return found


def computing(n: _Live) -> bool:
    """A node that computes on the script's tensors: not glue, not shape arithmetic."""
    return n.op not in GLUE_OPS and not n.plumbing


def infer_op(model: onnx.ModelProto, tracked: set[str]) -> tuple[str | None, list[str]]:
    """(target op or None, candidates). The target is the one op computing on the tensors;
    else the one such op that is not glue; else the one that is not shape arithmetic
    (Shape -> Concat -> ...) feeding something else."""
    nodes = _live_nodes(model, tracked)
    ops = list(dict.fromkeys(n.op for n in nodes))
    for keep in (lambda n: True,
                 lambda n: n.op not in GLUE_OPS,
                 lambda n: n.op not in GLUE_OPS and (not n.plumbing or n.produces_output),
                 # index arithmetic around the target (MaxPool's indices helper)
                 lambda n: n.op not in GLUE_OPS and not n.plumbing,
                 # value-preserving glue the exporter puts before the target (x.repeat ->
                 # Expand + Tile): dropped unless it is what the script outputs
                 lambda n: n.op not in GLUE_OPS and not n.plumbing and (
                     n.produces_output or n.op not in VALUE_SLOTS),
                 # an op in context (Linear -> HardSwish): the one computing the script's
                 # output, past the glue after it; the others are named in a note
                 lambda n: computing(n) and n.at_output and n.op not in VALUE_SLOTS):
        left = list(dict.fromkeys(n.op for n in nodes if keep(n)))
        if len(left) == 1:
            return left[0], ops
    return None, ops


def computing_nodes(model: onnx.ModelProto, tracked: set[str]) -> list[tuple[int, str]]:
    """(index, op) of every node computing on the script's tensors: what ``--all-ops``
    proves."""
    return [(n.index, n.op) for n in _live_nodes(model, tracked) if computing(n)]


def _value_names(graph: onnx.GraphProto) -> set[str]:
    names = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    for node in graph.node:
        names.update(node.output)
        for g in subgraphs(node):
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
        for g in subgraphs(node):
            _rename(g, names)


@dataclass(frozen=True)
class Prepared:
    """What the script exported, as the engine's Case and Exported."""

    case: Case
    exported: Exported
    names: tuple[str, ...]                    # case input names, one per tensor argument
    renamed: dict[str, str]                   # graph name -> name in the proved model
    candidates: list[str]                     # ops computing on the tensors
    inferred: str | None                      # what the graph alone says the target is
    op_from: str                              # "--op" | "script directive" | "graph"
    notes: list[str]
    computing: tuple[tuple[int, str], ...] = ()   # (node index, op) of every computing node

    def others(self, proved: Collection[int | None]) -> list[tuple[int, str]]:
        """The computing nodes besides the proved ones (ai.onnx only: what --op can name)."""
        return [(i, op) for i, op in self.computing if i not in proved and "::" not in op]

    def case_for(self, index: int, op: str) -> Case:
        """The script's case, aimed at another node (``--all-ops``): same module, inputs and
        model; the name says which op (and which node, when the op occurs twice)."""
        from dataclasses import replace
        twice = sum(o == op for _, o in self.computing) > 1
        name = f"{self.case.name}_{op.lower()}" + (f"_{index}" if twice else "")
        return replace(self.case, op=op, name=name, surrogate={})  # the directive's op only


def _case_name(path: Path) -> str:
    name = re.sub(r"[^a-z0-9_]+", "_", path.stem.lower()).strip("_")
    return name or "script"


def _match_inputs(gin: list[str], py: list[str | None]) -> list[int]:
    """Index of the tensor argument behind each graph input. Positional when every tensor is
    a graph input; otherwise (an exporter dropped an unused one) by name, or by the position
    TorchScript writes into its default names (``onnx::Mul_2``)."""
    from ..errors import UsageError
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


MODULE_OPS = "the module's ATen op"
"""``op_from`` when the target is the one op the module calls by name (``folded.module_ops``)."""


def _pick_op(op: str | None, declared: Directives, model: onnx.ModelProto,
             tracked: set[str], called: Sequence[str] = ()) -> tuple[str, str | None,
                                                                    list[str], str]:
    """(op, inferred, candidates, where the op came from). ``called``: the ai.onnx ops the
    module calls by name (``folded.module_ops``): where exactly one of them computes on the
    script's tensors in the graph, it is the target, whatever node the graph ends with
    (the dynamo exporter writes softplus as Where(x > 20, x, Softplus(x)): the script proves
    Softplus, not the Where around it)."""
    from ..errors import UsageError
    from ..tags.schema import canonical_op
    inferred, candidates = infer_op(model, tracked)
    named = [o for o in called if o in candidates]
    if not op and not declared.op and len(named) == 1 and named[0] != inferred:
        return named[0], inferred, candidates, MODULE_OPS
    chosen, origin = (op, "--op") if op else (declared.op, "script directive")
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


def usable(cap: Capture) -> None:
    """UsageError (one line) when the capture gives nothing to prove, most basic first."""
    from ..errors import UsageError
    from .wire import Outcome
    if cap.outcome in (Outcome.RUNNER_FAILED, Outcome.TAMPERED):
        raise UsageError(cap.problem or f"the script's process reported {cap.outcome.value}")
    if cap.export_errors and not cap.exports_done:   # raised, or caught by the script
        raise UsageError(f"the script's export failed: {cap.export_errors[-1]}")
    if cap.error:
        raise UsageError(f"{cap.error}; fix the script (torch-prover run --debug shows the "
                         "traceback)")
    if not cap.exports_done:
        raise UsageError("the script never calls torch.onnx.export: there is no ONNX model to "
                         "attribute its gradients to")
    if not cap.backward_calls:
        raise UsageError("the script never calls torch.autograd.backward, Tensor.backward or "
                         "torch.autograd.grad: Method 1 needs a backward pass with a dy to show "
                         "which tensors carry gradients")
    if cap.outcome is not Outcome.FINISHED:
        raise UsageError(cap.problem or f"the script's process reported {cap.outcome.value}")
    n = len(cap.leaves)
    if cap.export is None or not (len(cap.python_names) == len(cap.requires) == n) or any(
            not 0 <= i < n for i in cap.swapped):
        raise UsageError("the script's process handed over an inconsistent capture")


def _names(cap: Capture, gin: list[str], existing: set[str]) -> tuple[list[str], list[int]]:
    """A case input name per tensor argument, and the argument behind each graph input."""
    asked = list(cap.export.input_names)
    py = [asked[i] if i < len(asked) else p for i, p in enumerate(cap.python_names)]
    which = _match_inputs(gin, py)
    names: list[str] = []
    for i, p in enumerate(py):
        g = gin[which.index(i)] if i in which else None
        good = p and p.isidentifier() and p not in names and (p == g or p not in existing)
        names.append(p if good and not (g and i < len(asked)) else g or f"input_{i}")
    return names, which


@dataclass(frozen=True)
class Moved:
    """The script's dynamo model moved to the opset it asked for (``ExportInfo.move_to``),
    or why it is judged where the exporter left it; ``note``: the one line that says which."""

    model: onnx.ModelProto
    note: str | None = None
    route: ExportRoute = ExportRoute.DIRECT
    route_note: str = ""
    adaptations: tuple = ()


def _moved(model: onnx.ModelProto, opset: int, target: int | None, op: str) -> Moved:
    """Relabel ``model`` (ai.onnx ``opset``) to ``target`` with the tool's checked version
    adapters, as ``verify-all --no-torchscript`` does (``engine/versions/next_opset.relabel_opset``):
    every node whose schema differs is adapted where both versions compute the same, or the
    move is refused and the model judged at ``opset``."""
    if target is None or target == opset:
        return Moved(model)
    try:
        out, glue, adapted = relabel_opset(model, opset, target, op=op)
        check(out)
    except CaseError as exc:   # AdaptError included: a typed refusal, one line
        return Moved(model, f"judged at opset {opset}, where the dynamo exporter left it: it "
                            f"cannot be moved to opset {target} ({first_line(exc)})")
    how = "; ".join([f"glue whose schema differs there: {', '.join(glue)}"] * bool(glue)
                    + [a.text() for a in adapted])
    return Moved(out, f"moved from opset {opset} to opset {target}, the one the script asked "
                      f"for, by torch-prover's checked version adapters" + (
                          f" ({how})" if how else " (no node's schema differs)"),
                 ExportRoute.RELABELLED, f"exported at opset {opset} by the dynamo exporter "
                 f"(the TorchScript exporter is unavailable) and moved to opset {target}",
                 adapted)


def prepare(cap: Capture, module: torch.nn.Module, path: Path, op: str | None,
            declared: Directives) -> Prepared:
    """Turn the script's last successful export (a usable capture) into a Case whose model is
    ``module`` and an Exported holding the script's own graph (UsageError, one line, when the
    graph cannot be attributed)."""
    from ..errors import UsageError
    info = cap.export
    notes = [f"the script exported {cap.exports_done} models; proving the last one"
             ] if cap.exports_done > 1 else []
    try:
        model = onnx.load_from_string(cap.model)
    except Exception as exc:  # protobuf's DecodeError and friends
        raise UsageError(f"the script's model does not parse: {describe(exc)}") from None
    graph = model.graph
    strip_stack_traces(graph)   # the script's path is no part of the evidence
    if initializers_apart(model):
        notes.append("dropped the initializers listed as graph inputs "
                     "(keep_initializers_as_inputs=True)")
    gin = [i.name for i in graph.input]
    existing = _value_names(graph)
    names, which = _names(cap, gin, existing)
    renamed = {gin[k]: names[i] for k, i in enumerate(which) if gin[k] != names[i]}
    if len(gin) < len(cap.leaves):
        unused = [names[i] for i in range(len(cap.leaves)) if i not in which]
        notes.append(f"the exporter dropped unused input(s) {', '.join(unused)}")
    if cap.swapped:
        placeholders = ", ".join(names[i] for i in cap.swapped)
        notes.append(f"the script exported placeholder input(s) ({placeholders}); the proof "
                     "uses the tensors its backward pass differentiated (same shape and dtype), "
                     "so the evidence matches its printed gradients")
    if cap.probing_all:
        notes.append("no exported input requires grad; probing every floating input")
    specs = tuple(Spec("custom", make=(lambda t: lambda gen, dt: t.detach().clone())(t),
                       requires_grad=r) for t, r in zip(cap.leaves, cap.requires))
    gout = [o.name for o in graph.output]
    if len(gout) != cap.n_outputs:
        raise UsageError(f"the exported graph has {len(gout)} outputs for the module's "
                         f"{cap.n_outputs}; cannot tell which is which")
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

    tracked = {names[i] for i in which} | {p[0] for p in cap.params}
    graph_module = getattr(module, "graph", None)
    op, inferred, candidates, op_from = _pick_op(
        op, declared, model, tracked,
        module_ops(graph_module) if graph_module is not None and
        cap.module.format is ModuleFormat.EXPORTED_PROGRAM else ())
    try:
        onnx.checker.check_model(model)
    except Exception as exc:
        raise UsageError(f"onnx.checker rejects the script's model: {describe(exc)}") from exc
    opset = model_opset(model)
    moved = _moved(model, opset, info.move_to, op)
    if moved.model is not model:
        model, opset = moved.model, info.move_to
    case = Case(op, _case_name(path), (lambda m: lambda: m)(module), specs,
                input_names=tuple(names), exporter=info.exporter, opset=opset,
                float_dtype=dtype_of(cap.float_dtype),
                kind="reference" if info.custom_translation else "natural",
                fwd_tol=declared.fwd_tol, vjp_tol=declared.vjp_tol,
                surrogate={k: "the script's `# torch-prover: surrogate=` line says so"
                           for k in declared.surrogate or ()},
                gradient_conventions=gradient_conventions(graph_module)
                if graph_module is not None and
                cap.module.format is ModuleFormat.EXPORTED_PROGRAM else {},
                conventions=_body_dependent(model, op, opset, tracked),
                notes=f"from the proof script {path.name}")
    exported = Exported(model, info.exporter, opset, tuple(names),
                        tuple(f"y{j}" for j in range(len(gout))), route=moved.route,
                        route_note=moved.route_note, adaptations=moved.adaptations)
    return Prepared(case, exported, tuple(names), renamed, candidates, inferred, op_from,
                    notes + list(info.notes) + [moved.note] * bool(moved.note),
                    tuple(computing_nodes(model, tracked)))
