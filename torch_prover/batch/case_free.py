"""``verify-all --case-free``: the tags decided as if the catalogue had no case -- from ONNX's
own node tests (the numeric witness at their points) and the op's function body, plus the
schema's types (docs/verdicts.md, "Case-free verdicts").

How a user asks "what would ONNX's own tests alone say", the mode a new op without a case
falls back to, and what ``scripts/compare_case_free.py`` holds against the catalogue. Each
cell is labelled with the witnesses that decided it (``engine/onnx_points/judge.CaseFreeRule``);
``agree``/``disagree``/``proposed`` only where the catalogue's rules for one numeric witness
allow, else ``inconclusive``.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Iterable

from ..engine.rules.by_type import type_reason
from ..engine.onnx_points.judge import case_free
from ..tags.schema import SchemaTags, UnknownOpError
from .onnx_points import PointsRun
from .version_table import judge
from .versions import Selection, schema_versions

VERDICTS = ("agree", "disagree", "proposed", "inconclusive")


def checked(request: Any) -> Any:
    """A ``--case-free`` request, checked before any work (UsageError): it needs ONNX's points
    and proves no case, so it writes no evidence (``out`` None: the index is the catalogue's)."""
    from dataclasses import replace
    from ..errors import UsageError
    if not request.numeric or request.onnx_points < 1:
        raise UsageError("--case-free decides from ONNX's node tests: it needs the numeric "
                         "witness and --onnx-points of at least 1")
    if request.shard is not None:
        raise UsageError("--case-free proves no case: --shard has nothing to split")
    if request.ops is not None:
        from ..preflight import op_names
        op_names(request.ops, "--ops")
    return replace(request, out=None)


def wanted(op: str, version: int, selection: Selection, ops: Iterable[str] | None) -> bool:
    """The run asks for this schema version: ``--ops`` names its op, and ``--versions``
    selects it (``latest``: each op's newest schema version)."""
    if ops is not None and op not in ops:
        return False
    versions = schema_versions(op)
    v = next((x for x in versions if x.version == version), None)
    if v is None:
        return False
    return v == versions[-1] if not selection.expands else selection.wants(v)


def graph_op(op: str, version: int) -> bool:
    """The schema has a graph attribute (If, Loop, Scan, SequenceMap): what its data
    outputs are depends on the body a node is given (convention ``body-dependent``)."""
    import onnx
    try:
        schema = onnx.defs.get_schema(op, version, "")
    except Exception:
        return False
    graphs = (onnx.defs.OpSchema.AttrType.GRAPH, onnx.defs.OpSchema.AttrType.GRAPHS)
    return any(a.type in graphs for a in schema.attributes.values())


def cells(run: PointsRun, t: SchemaTags) -> list[dict[str, Any]]:
    """One schema version's case-free cells, one per formal parameter of ``t``."""
    cells = []
    for f in t.inputs + t.outputs:
        ws = [w for w in run.by_version.get((t.op, t.since_version), ()) if w.skip is None]
        params = [p for w in ws for p in w.params if (p.io, p.name) == (f.io, f.name)]
        d = case_free([p.outcome for p in params], [p.body for p in params],
                      type_reason(t, f, outputs_from_inputs=True) is not None,
                      [p.redrawn for p in params], graph_op(t.op, t.since_version),
                      [p.float64 for p in params])
        verdict = judge(f.tag, d.supports) if d.supports else "inconclusive"
        cell = {"io": f.io, "index": f.position, "name": f.name, "tag": f.tag,
                "verdict": verdict, "supports": d.supports.value if d.supports else None,
                "rule": d.rule.value,
                "tests": sorted({w.test for w in ws if any(p in w.params for p in params)})}
        remeasured = precision(ws, params)
        if remeasured:
            cell["precision"] = remeasured
        cells.append(cell)
    return cells


def precision(ws: list, params: list) -> str:
    """What computed a cell's numbers, where it was flat at a test's points and measured
    again (engine/numeric/redraw): the tests' own precision in their runtime, and float64's
    runtime and schema version, or why float64 did not run (docs/verdicts.md)."""
    said = []
    for w in ws:
        for p in w.params:
            if p in params and p.outcome.value == "flat" and w.precision:
                then = (f"{'smooth' if p.float64 else 'flat'} in {w.precision}"
                        if w.precision.startswith("float64") else w.precision)
                said.append(f"{w.test}: flat in {w.measured_in or w.runtime}; {then}")
    return "; ".join(dict.fromkeys(said))


def section(run: PointsRun, selection: Selection, ops_arg: str | None,
            tags: Callable[..., SchemaTags] | None) -> dict[str, Any]:
    """The report's ``case_free`` section: per op, per schema version ONNX's tests exercise
    and the run selects (``--ops``, ``--versions``), its cells."""
    from ..engine.prove import default_tags
    from ..preflight import op_names
    tags = tags or default_tags
    ops = op_names(ops_arg, "--ops") if ops_arg is not None else None
    by_op: dict[str, list[dict[str, Any]]] = {}
    for op, version in sorted(run.by_version):
        if not wanted(op, version, selection, ops):
            continue
        try:
            t = tags(op, version, "")
        except UnknownOpError:
            continue
        by_op.setdefault(op, []).append({
            "version": version, "tests": run.used(op, version), "cells": cells(run, t)})
    counts = Counter(c["verdict"] for vs in by_op.values() for v in vs for c in v["cells"])
    return {"source": run.source, "per_version": run.per_version,
            "summary": {"ops": len(by_op), "versions": sum(len(v) for v in by_op.values()),
                        "parameters": {v: counts.get(v, 0) for v in VERDICTS}},
            "ops": [{"op": op, "versions": vs} for op, vs in by_op.items()]}
