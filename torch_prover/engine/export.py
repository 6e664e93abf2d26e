"""torch.onnx.export wrapper: exporter choice, opset, quiet output, a self-contained ModelProto.

The model is kept in memory (no external ``.onnx.data`` file) and checked with
``onnx.checker``; the opset actually produced is verified, because torch 2.13's
exporter silently falls back to opset 18 when asked for 26-28 (that refusal stays: a
case above opset 25 is exported at 25 and raised by ``next_opset`` instead).
"""
from __future__ import annotations

import contextlib
import dataclasses
import inspect
import io
import logging
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import onnx
import torch

from ..case import DYNAMO_MIN_OPSET, TORCHSCRIPT_MAX_OPSET, Case
from ..errors import CaseError, first_line
from ..vocab import ExportRoute
from .versions.adapters import Adaptation
from .versions.runtimes import model_opset
from .versions.next_opset import (EXPORTER_MAX_OPSET, PRIVATE_DOMAIN, all_nodes, export_route,
                         model_nodes, private_nodes, raise_opset, relabel_opset)


@dataclass(frozen=True)
class Exported:
    model: onnx.ModelProto
    exporter: str
    opset: int
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    route: ExportRoute = ExportRoute.DIRECT
    route_note: str = ""      # why the route is not the direct one (relabelled)
    adaptations: tuple[Adaptation, ...] = ()   # what relabelling changed (engine/versions/adapters.py)


QUIET_LOGGERS = ("torch.onnx", "torch.export", "torch._export", "torch._dynamo", "onnxscript",
                 "torch.fx")
"""The exporter's loggers ``quiet`` holds at ERROR (a verify-all worker keeps them there:
each ``setLevel`` clears every logger's cache, ~3% of a worker's CPU)."""


@contextlib.contextmanager
def quiet():
    """Silence the exporter's progress prints, warnings and torchvision notices."""
    changed = [(lg, lg.level) for lg in map(logging.getLogger, QUIET_LOGGERS)
               if lg.level != logging.ERROR]
    for lg, _ in changed:
        lg.setLevel(logging.ERROR)
    sink = io.StringIO()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(sink):
            warnings.simplefilter("ignore")
            yield sink
    finally:
        for lg, lv in changed:
            lg.setLevel(lv)


_LOCATION_KEYS = ("pkg.torch.onnx.stack_trace",)


def strip_stack_traces(graph: onnx.GraphProto) -> None:
    """Drop the exporter's per-node Python stack traces (the dynamo exporter's
    ``pkg.torch.onnx.stack_trace``; TorchScript's ``verbose=True`` writes them as the node's
    doc_string): they hold absolute paths and line numbers of whoever called export (a case
    file, or a contributor's script), so the same proof would hash differently in another
    checkout (or after an unrelated edit). Nothing a proof reads is lost."""
    for node in all_nodes(graph):
        if node.doc_string:
            node.ClearField("doc_string")   # assigning "" would set the field: other bytes
        keep = [p for p in node.metadata_props if p.key not in _LOCATION_KEYS]
        if len(keep) != len(node.metadata_props):
            del node.metadata_props[:]
            node.metadata_props.extend(keep)


def initializers_apart(model: onnx.ModelProto) -> bool:
    """IR version 3 (the TorchScript exporter below opset 9) lists every initializer as a
    graph input too, a default the caller may override; from IR 4 an initializer needs no
    input. The module's parameters are the model's constants, not the case's inputs, so
    they are kept as initializers only and the IR version raised to 4 (which any opset
    accepts): the graph's inputs are the case's again, and nothing computed changes. A
    script's ``keep_initializers_as_inputs=True`` is the same listing. True when it dropped
    any."""
    init = {t.name for t in model.graph.initializer}
    if not any(i.name in init for i in model.graph.input):
        return False
    keep = [i for i in model.graph.input if i.name not in init]
    del model.graph.input[:]
    model.graph.input.extend(keep)
    model.ir_version = max(model.ir_version, 4)
    return True


def _takes_varargs(module: torch.nn.Module) -> bool:
    params = inspect.signature(module.forward).parameters.values()
    return any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)


def export_module(module: torch.nn.Module, args: Sequence[torch.Tensor], *, exporter: str,
                  opset: int, input_names: Sequence[str], output_names: Sequence[str],
                  dynamic: bool = False, options: dict[str, Any] | None = None,
                  label: str = "") -> Exported:
    """Export ``module(*args)``; raise CaseError with a one-line cause on failure."""
    options = dict(options or {})
    args = tuple(args)
    try:
        with quiet():
            if exporter == "dynamo":
                if dynamic:
                    from torch.export import Dim
                    shapes = tuple({d: Dim.AUTO for d in range(a.dim())} for a in args)
                    if _takes_varargs(module):
                        shapes = (shapes,)  # forward(*args): torch.export groups them
                    options.setdefault("dynamic_shapes", shapes)
                program = torch.onnx.export(
                    module, args, dynamo=True, opset_version=opset, verbose=False,
                    input_names=list(input_names), output_names=list(output_names),
                    external_data=False, **options)
                model = program.model_proto
            else:
                buf = io.BytesIO()
                if dynamic:
                    options.setdefault("dynamic_axes", {
                        n: {d: f"{n}_d{d}" for d in range(a.dim())}
                        for n, a in zip(input_names, args)})
                torch.onnx.export(module, args, buf, dynamo=False, opset_version=opset,
                                  input_names=list(input_names),
                                  output_names=list(output_names), **options)
                model = onnx.load_from_string(buf.getvalue())
    except CaseError:
        raise
    except Exception as exc:  # the exporter raises many types; all mean "this case does not export"
        first = first_line(exc) or type(exc).__name__
        raise CaseError(f"{label}export with the {exporter} exporter at opset {opset} failed: "
                        f"{type(exc).__name__}: {first}") from exc
    strip_stack_traces(model.graph)
    initializers_apart(model)
    got = model_opset(model)
    if got != opset:
        raise CaseError(f"{label}asked the {exporter} exporter for opset {opset} but the model "
                        f"declares opset {got}; refusing to trust it")
    check(model, label)
    return Exported(model, exporter, opset, tuple(input_names), tuple(output_names))


def check(model: onnx.ModelProto, label: str = "") -> None:
    """onnx.checker with full_check: also strict type/shape inference, so a model whose types
    do not fit the schema (an int32 beside the int64 an op requires) is refused here instead
    of quietly failing over from onnxruntime to the reference evaluator."""
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as exc:
        raise CaseError(f"{label}onnx.checker rejects the exported model: "
                        f"{first_line(exc)}") from exc


def output_name(j: int) -> str:
    """ONNX graph output name of PyTorch output ``j`` (the exporter is told these names)."""
    return f"y{j}"


def output_index(name: str) -> int:
    return int(name.removeprefix("y"))


def export_case(case: Case, module: torch.nn.Module, args: Sequence[torch.Tensor],
                n_outputs: int) -> Exported:
    """Export the case at its opset. A dynamo case above the exporter's newest opset is
    exported there and raised (``next_opset``): its ops newer than the exporter wait in a
    private domain until then. A case variant (``verify-all --versions``) that no exporter
    produces at its opset, or whose export there holds no node of its op (the TorchScript
    exporter decomposes Gemm into MatMul at old opsets), takes the relabelled route: the
    export at the case's own opset, moved to the variant's (``next_opset.relabel_opset``),
    and the record says why."""
    label = f"{case.op}/{case.name}: "
    try:
        if case.origin is not None and case.exporter == "dynamo" and \
                case.export_opset < DYNAMO_MIN_OPSET:
            raise CaseError(f"the dynamo exporter does not build opset {case.export_opset} "
                            f"(it converts from {DYNAMO_MIN_OPSET} with onnx's version "
                            f"converter, which lacks most down-adapters and a custom "
                            f"translation defeats)")
        if case.origin is not None and case.exporter == "torchscript" and \
                case.export_opset > TORCHSCRIPT_MAX_OPSET:
            raise CaseError(f"the TorchScript exporter stops at opset {TORCHSCRIPT_MAX_OPSET}")
        exported = _export_at(case, case.exporter, case.export_opset, module, args, n_outputs)
        if case.variant_of is not None and not _has_op(exported.model, case.op, case.domain):
            raise CaseError(f"{label}the {exported.exporter} exporter at opset "
                            f"{exported.opset} emits no {case.op} node")
        return exported
    except CaseError as direct:
        if case.origin is None or case.origin[1] > EXPORTER_MAX_OPSET:
            raise
        why = first_line(direct).removeprefix(label)
    exporter, source = case.origin
    base = _base_export(case, exporter, source, module, args, n_outputs)
    return _relabelled(base, source, case.export_opset, case.op, label,
                       f"exported at opset {source} by the {exporter} exporter and moved to "
                       f"opset {case.export_opset}, because {why}")


def _relabelled(exported: Exported, source: int, target: int, op: str, label: str, how: str,
                lower: bool = False) -> Exported:
    """``exported`` (made at opset ``source``) moved to opset ``target``
    (``next_opset.relabel_opset``; ``lower``: its ``op`` node waits in the private domain),
    checked, and recorded as relabelled: ``how``, then the glue and adaptations it took."""
    model, moved, adapted = relabel_opset(exported.model, source, target, op=op, label=label,
                                          lower=lower)
    check(model, label)
    return dataclasses.replace(exported, model=model, opset=target,
                               route=ExportRoute.RELABELLED, adaptations=adapted,
                               route_note=how + _changes(moved, adapted))


def _changes(moved: Sequence[str], adapted: Sequence[Adaptation]) -> str:
    """The route note's tail: glue whose schema differs at the target, and each
    adaptation."""
    glue = f"; glue whose schema differs there: {', '.join(moved)}" if moved else ""
    return glue + (f"; adapted: {'; '.join(a.text() for a in adapted)}" if adapted else "")


_BASES: dict[tuple, Exported] = {}
"""The last exports a relabelled variant started from, by (case, exporter, opset): every
variant of a case at opsets 7-17 relabels the same opset-18 (or own-opset) export, and a
worker proving several of them exports it once. The module and inputs are the case's,
seeded, so the export is the same; relabel_opset copies the model before changing it."""


def _base_export(case: Case, exporter: str, source: int, module: torch.nn.Module,
                 args: Sequence[torch.Tensor], n_outputs: int) -> Exported:
    key = (case.variant_of, case.model, exporter, source, case.dynamic,
           repr(sorted(case.export_options.items())), repr(case.translation), n_outputs)
    try:
        hit = _BASES.get(key)
    except TypeError:   # an unhashable model: no memo
        return _export_at(case, exporter, source, module, args, n_outputs)
    if hit is None:
        hit = _export_at(case, exporter, source, module, args, n_outputs)
        if len(_BASES) >= 4:
            _BASES.pop(next(iter(_BASES)))
        _BASES[key] = hit
    return hit


def _has_op(model: onnx.ModelProto, op: str, domain: str) -> bool:
    return any(n.op_type == op and n.domain in (domain, "ai.onnx" if domain == "" else domain)
               for n in model_nodes(model))


def _export_at(case: Case, exporter: str, target: int, module: torch.nn.Module,
               args: Sequence[torch.Tensor], n_outputs: int) -> Exported:
    """``case``'s module exported by ``exporter`` at ``target``: directly, or raised above
    the exporter's newest opset."""
    options = dict(case.export_options)
    if case.translation:
        options["custom_translation_table"] = dict(case.translation)
    label = f"{case.op}/{case.name}: "
    way = export_route(exporter, target)
    raised = way is ExportRoute.RAISED
    asked = {ExportRoute.RAISED: EXPORTER_MAX_OPSET,
             ExportRoute.LOWERED: DYNAMO_MIN_OPSET}.get(way, target)
    exported = export_module(module, args, exporter=exporter, opset=asked,
                             input_names=case.names,
                             output_names=[output_name(j) for j in range(n_outputs)],
                             dynamic=case.dynamic, options=options, label=label)
    if way is ExportRoute.LOWERED:   # a deprecated op's node, private until moved down
        return _relabelled(exported, asked, target, case.op, label,
                           f"exported at opset {asked} by the dynamo exporter with the "
                           f"{case.op} node in {PRIVATE_DOMAIN} (the exporter builds no opset "
                           f"{target}), then moved into ai.onnx at opset {target}", lower=True)
    if not raised:
        waiting = private_nodes(exported.model)
        if waiting:
            raise CaseError(f"{label}the model holds {waiting[0].op_type} in domain "
                            f"{PRIVATE_DOMAIN} (an op newer than opset {EXPORTER_MAX_OPSET}) "
                            f"but the case exports at opset {target}: give the case the "
                            f"reference op's opset")
        return exported
    model = raise_opset(exported.model, target, label=label, relabel=case.op)
    check(model, label)
    return dataclasses.replace(exported, model=model, opset=target)
