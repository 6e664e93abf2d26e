"""Ops newer than the exporter: emitted in a private domain at its opset, raised after export.

torch 2.13's exporter produces opset 25 at most. Asked for 26-28 it builds at 18 and
converts; for a graph holding an op new in 26-28 (CumProd, BitCast, LinearAttention,
CausalConvWithState, SwiGLU) the converter has no adapter and the exporter silently
returns the opset-18 model (``export.export_module`` refuses it; measured, see
``cases/reference_new_ops.py``). So a case above the exporter's opset takes another route:

1. the reference op's translation emits its node as ``PRIVATE_DOMAIN::<Op>`` (the real
   op's name, inputs, outputs and attributes, from a copy of the real schema at version
   1 of the private domain): the exporter's converter leaves other domains alone, so the
   export at ``EXPORTER_MAX_OPSET`` succeeds and passes ``onnx.checker``;
2. :func:`raise_opset` moves every private node into ``ai.onnx`` (domain ""), sets the
   model's default-domain import to the case's opset and drops the private import --
   after checking that every other ``ai.onnx`` node has the same schema at both opsets
   (Cast, Range, Einsum... changed in 26-28: relabelling those would silently
   mis-version them, so such a graph is refused, naming the node);
3. ``export.export_case`` runs ``onnx.checker`` (full check) on the raised model.

The record's opset is the case's (26/27/28) and its schema version the op's real one.
"""
from __future__ import annotations

from typing import Any, Sequence

import onnx
import onnx.defs
import onnx.helper
from onnx.defs import OpSchema

from ...case import DEFAULT_OPSET, DYNAMO_MIN_OPSET
from ...errors import CaseError
from ...vocab import ExportRoute
from .adapter_table import rules
from .adapters import AdaptError, Adaptation, ModelView, adapt_node, node_label
from ..attribution.mapping import subgraphs
from .runtimes import version_at

EXPORTER_MAX_OPSET = DEFAULT_OPSET
"""The newest opset torch 2.13's exporter produces reliably (case.DEFAULT_OPSET says why)."""
PRIVATE_DOMAIN = "torch_prover.next"
"""Where a node newer than the exporter waits for :func:`raise_opset`; never in a record."""
PRIVATE_VERSION = 1


def exporter_opset(opset: int) -> int:
    """The opset the dynamo exporter is asked for, for a case at ``opset``."""
    return max(min(opset, EXPORTER_MAX_OPSET), DYNAMO_MIN_OPSET)


def export_route(exporter: str, opset: int) -> ExportRoute:
    """The route a case exported by ``exporter`` at ``opset`` takes: one decision, read by
    the export stage and shown by ``coverage``."""
    if exporter == "dynamo" and opset > EXPORTER_MAX_OPSET:
        return ExportRoute.RAISED
    if exporter == "dynamo" and opset < DYNAMO_MIN_OPSET:
        return ExportRoute.LOWERED
    return ExportRoute.DIRECT


def private_schema(op: str, opset: int) -> OpSchema:
    """``op``'s ai.onnx schema in force at ``opset``, copied into ``PRIVATE_DOMAIN`` at
    version 1: what the exporter needs to build the node (inputs, outputs, attributes and
    their defaults) without a version its converter would try to adapt."""
    try:
        real = onnx.defs.get_schema(op, opset, "")
    except onnx.defs.SchemaError as exc:
        raise ValueError(f"onnx.defs has no {op} at opset {opset}") from exc

    return copied_schema(real, PRIVATE_DOMAIN, PRIVATE_VERSION, real.inputs, real.outputs)


def copied_schema(real: OpSchema, domain: str, version: int,
                  inputs: Sequence[tuple[str, OpSchema.FormalParameter, Any] | Any],
                  outputs: Sequence[tuple[str, OpSchema.FormalParameter, Any] | Any]
                  ) -> OpSchema:
    """``real`` copied into ``domain`` at ``version`` with the formals given: each one of
    ``real``'s, or ``(name, formal, option)`` to copy it renamed with another option (a
    variadic formal written out: ``cases/other_domains.py``)."""
    def formal(p: Any) -> OpSchema.FormalParameter:
        name, p, option = p if isinstance(p, tuple) else (p.name, p, p.option)
        return OpSchema.FormalParameter(
            name, p.type_str, p.description, param_option=option,
            is_homogeneous=p.is_homogeneous, min_arity=p.min_arity,
            differentiation_category=p.differentiation_category)

    def attribute(a: OpSchema.Attribute) -> OpSchema.Attribute:
        if a.default_value.name:
            return OpSchema.Attribute(a.name, a.default_value, a.description)
        return OpSchema.Attribute(a.name, a.type, a.description, required=a.required)

    return OpSchema(real.name, domain, version, real.doc or "",
                    inputs=[formal(p) for p in inputs], outputs=[formal(p) for p in outputs],
                    type_constraints=[(t.type_param_str, list(t.allowed_type_strs),
                                       t.description) for t in real.type_constraints],
                    attributes=[attribute(a) for a in real.attributes.values()])


def all_nodes(graph: onnx.GraphProto | onnx.FunctionProto):
    """Every node of ``graph`` (or a function body), its subgraphs' (If, Loop, Scan bodies)
    included."""
    for node in graph.node:
        yield node
        for g in subgraphs(node):
            yield from all_nodes(g)


def model_nodes(model: onnx.ModelProto):
    """Every node of the model: main graph, subgraphs and local functions."""
    yield from all_nodes(model.graph)
    for f in model.functions:
        yield from all_nodes(f)


def private_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    return [n for n in model_nodes(model) if n.domain == PRIVATE_DOMAIN]


def raise_opset(model: onnx.ModelProto, target: int, *, label: str = "",
                relabel: str | None = None) -> onnx.ModelProto:
    """A copy of ``model`` (exported at ``EXPORTER_MAX_OPSET``) declaring ai.onnx ``target``,
    its private nodes moved into ai.onnx. Raises CaseError, naming the node, when a private
    node's op is not new past the exporter's opset at ``target``, or when another node's
    schema differs between the two opsets (the relabelled model would mean something
    else).

    ``relabel``: the op under proof, whose nodes may take their newer schema at ``target``
    (a case variant proving ``Celu-28`` from the exporter's ``Celu-12`` node). That is a
    claim that the node means the same under both versions, and the proof checks it: the
    full checker at ``target``, and the whole model's forward against PyTorch's."""
    source = EXPORTER_MAX_OPSET
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for node in model_nodes(out):
        if node.domain == PRIVATE_DOMAIN:
            since = version_at(node.op_type, target)
            if since is None or since <= source:
                raise CaseError(
                    f"{label}{node_label(node)} in domain {PRIVATE_DOMAIN} has no ai.onnx schema "
                    f"newer than opset {source} at opset {target}"
                    + ("" if since is None else f" (it is {node.op_type}-{since}: emit it "
                       f"at opset {source} directly)"))
            node.domain = ""
        elif node.domain in ("", "ai.onnx"):
            before, after = version_at(node.op_type, source), version_at(node.op_type, target)
            if before != after and not (node.op_type == relabel and before and after):
                was = f"{node.op_type}-{before}" if before else "no schema"
                raise CaseError(
                    f"{label}{node_label(node)} is {was} at opset {source} but "
                    f"{node.op_type}-{after} at opset {target}: its schema changed in between, "
                    f"so relabelling the exported model would mis-version it; keep "
                    f"{node.op_type} out of an opset-{target} case")
    for imports in [out.opset_import] + [f.opset_import for f in out.functions]:
        kept = [i for i in imports if i.domain != PRIVATE_DOMAIN]
        for i in kept:
            if i.domain in ("", "ai.onnx"):
                i.version = target
        del imports[:]
        imports.extend(kept)
    needed = onnx.helper.find_min_ir_version_for([onnx.helper.make_opsetid("", target)])
    out.ir_version = max(out.ir_version, needed)
    return out


def relabel_opset(model: onnx.ModelProto, source: int, target: int, *, op: str,
                  label: str = "", lower: bool = False
                  ) -> tuple[onnx.ModelProto, tuple[str, ...], tuple[Adaptation, ...]]:
    """A copy of ``model`` (ai.onnx ``source``, no private nodes) declaring ai.onnx
    ``target``; the other nodes whose schema differs between the two opsets; and the
    adaptations made: the route of a case variant that no exporter produces at ``target``
    (the dynamo exporter's version converter fails or silently keeps opset 18; the
    TorchScript exporter lacks the op or decomposes it).

    Every ai.onnx node -- ``op``'s and the glue around it -- takes its schema at
    ``target``; where that schema's signature differs, ``engine/versions/adapters.py`` brings the
    node to it only where both versions compute the same thing (an attribute at the value
    where they coincide, a constant input to the older attribute, an unread output) and
    otherwise refuses with a typed reason (``adapters.AdaptError``, a CaseError). What is
    left is a claim the proof checks, and the record names every node and adaptation: the
    full checker at ``target``, and the whole model's forward and VJP against PyTorch's.
    A node with no schema at ``target`` is refused (CaseError naming it).

    ``lower``: the model holds ``op``'s node in ``PRIVATE_DOMAIN`` (a reference op declared
    below opset 18, for an op the dynamo exporter no longer emits: Upsample-9, Scatter-9),
    with the schema ``op`` has at ``target``: it moves into ai.onnx."""
    waiting = private_nodes(model)
    if waiting and not (lower and all(n.op_type == op for n in waiting)):
        raise CaseError(f"{label}a node newer than opset {source} cannot be moved to "
                        f"opset {target}")
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for node in model_nodes(out):
        if node.domain == PRIVATE_DOMAIN:
            node.domain = ""
    for imports in [out.opset_import] + [f.opset_import for f in out.functions]:
        kept = [i for i in imports if i.domain != PRIVATE_DOMAIN]
        del imports[:]
        imports.extend(kept)
    moved: list[str] = []
    done: list[Adaptation] = []
    view = ModelView(out)
    table = rules()
    for node in list(model_nodes(out)):
        if node.domain not in ("", "ai.onnx"):
            continue
        before, after = version_at(node.op_type, source), version_at(node.op_type, target)
        if after is None:
            raise CaseError(f"{label}{node_label(node)} has no schema at opset {target}: the "
                            f"model cannot be moved there")
        if before == after or (lower and node.op_type == op):   # lowered: already its own
            continue
        try:
            done += adapt_node(view, node, source, target, table)
        except AdaptError as exc:
            raise AdaptError(exc.refusal, f"{label}{exc.node}", exc.detail) from None
        if node.op_type != op and f"{node.op_type}-{before}->{after}" not in moved:
            moved.append(f"{node.op_type}-{before}->{after}")
    _drop_unread_constants(out)
    for imports in [out.opset_import] + [f.opset_import for f in out.functions]:
        for i in imports:
            if i.domain in ("", "ai.onnx"):
                i.version = target
    needed = onnx.helper.find_min_ir_version_for([onnx.helper.make_opsetid("", target)])
    out.ir_version = max(out.ir_version, needed)
    return out, tuple(moved), tuple(done)


def _drop_unread_constants(model: onnx.ModelProto) -> None:
    """Constants an adaptation turned into attributes, now read by nothing: removed, so
    the model holds no dead node (whose own schema would still have to fit)."""
    g = model.graph
    while True:
        read = {i for n in model_nodes(model) for i in n.input} | {o.name for o in g.output}
        dead = [n for n in g.node if n.op_type == "Constant" and n.output[0] not in read]
        if not dead:
            break
        for n in dead:
            g.node.remove(n)
    inputs = {i.name for i in g.input}
    keep = [t for t in g.initializer if t.name in read or t.name in inputs]
    if len(keep) != len(g.initializer):
        del g.initializer[:]
        g.initializer.extend(keep)
