"""The schema versions of the domains the installed onnx registers beside ai.onnx
(``ai.onnx.ml``, ``ai.onnx.preview``, ``ai.onnx.preview.training`` in onnx 1.23), in the
per-version table's shape (``models/versions.json``'s ops), for the differentiability table
(docs/table.md).

No exporter writes these ops: a parameter is decided by the proof records of their
reference cases (``cases/other_domains.py``, evidence under models/ by
``scripts/domain_evidence.py``; Gradient-1's, which no runtime runs, by
``batch/gradient_witness.py`` at ONNX's model tests of it) at the schema version each record
ran, else by the schema's
types alone (``engine/rules/by_type.py``, the rule verify-all applies to an ai.onnx op
without a case), else not at all. Records supporting different tags leave the cell
inconclusive (``cases conflict``), as in the ai.onnx table. Unlike versions.json, whose
cells are the decided parameters only, every parameter of every version is a cell: an
undecided one says so (verdict ``inconclusive``, ``supports`` null, rule ``UNDECIDED``),
so a consumer sees each version and what is left.
"""
from __future__ import annotations

from typing import Any, Sequence

import onnx.defs

from ..engine.rules.by_type import decide_op
from ..tags.schema import schema_tags


def other_domains() -> list[str]:
    """Every domain the installed onnx registers a schema in, but ai.onnx (sorted)."""
    return sorted({s.domain for s in onnx.defs.get_all_schemas_with_history()} - {"", "ai.onnx"})


UNDECIDED = "undecided"
"""A version's ``decided_by`` and a cell's ``rule`` where neither a case nor the types decide."""


def _in_force(since: list[int], newest: int) -> list[list[int]]:
    return [[v, (since[i + 1] - 1) if i + 1 < len(since) else newest]
            for i, v in enumerate(since)]


CONFLICT = "cases conflict"
"""A cell's rule where its cases' records support different tags."""


def _from_records(cell: dict[str, Any], params: Sequence[tuple[str, dict[str, Any]]]) -> None:
    """The cell decided by its records' parameters ((case, parameter) pairs)."""
    supports = {p["supports"] for _, p in params}
    cases = sorted({case for case, _ in params})
    if len(supports) > 1:
        cell.update(verdict="inconclusive", supports=None, rule=CONFLICT, cases=cases,
                    failing=False, reason="; ".join(f"{c}: {p['rule']}: {p['reason']}"
                                                    for c, p in params)[:4000])
        return
    verdicts = {p["verdict"] for _, p in params}
    first = params[0][1]
    cell.update(verdict=first["verdict"] if len(verdicts) == 1 else "inconclusive",
                supports=first["supports"], rule=first["rule"], cases=cases, failing=False)
    conventions = {p.get("convention") for _, p in params} - {None}
    if conventions:   # what the convention set aside, per record: the math stays readable
        cell["convention"] = sorted(conventions)[0]
        cell["reason"] = "; ".join(f"{c}: {p['reason']}" for c, p in params)[:4000]


def domain_ops(domain: str, records: Sequence[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    """Every op of ``domain`` with its schema versions, each parameter a cell: from the
    ``records`` (proof records) of its cases at that version, else by type where the types
    decide, else undecided (and the version names it, as versions.json's ``undecided``
    does)."""
    schemas = [s for s in onnx.defs.get_all_schemas_with_history() if s.domain == domain]
    # the domain's newest opset: onnx names ai.onnx.ml's; the preview domain has one version
    newest = onnx.defs.onnx_ml_opset_version() if domain == "ai.onnx.ml" else \
        max(s.since_version for s in schemas)
    ops = []
    for op in sorted({s.name for s in schemas}):
        since = sorted(s.since_version for s in schemas if s.name == op)
        versions = []
        for version, in_force in zip(since, _in_force(since, newest)):
            tags = schema_tags(op, version, domain)
            mine = [r for r in records if r["op"] == op and r.get("domain") == domain
                    and r.get("schema_version") == version and r.get("status") == "proved"]
            cells, undecided = [], []
            proved = False
            for row in decide_op(tags):
                f = row.formal
                cell = {"io": f.io, "index": f.position, "name": f.name, "tag": f.tag}
                params = [(r["case"], p) for r in mine for p in r["parameters"]
                          if p["io"] == f.io and p["name"] == f.name
                          and p.get("supports") is not None]
                if params:
                    _from_records(cell, params)
                    proved = True
                elif row.decision is None:
                    undecided.append(f"{f.io} {f.position} ({f.name})")
                    cell.update(verdict="inconclusive", supports=None, rule=UNDECIDED,
                                cases=[], failing=False,
                                reason="no case decides it and its types "
                                       f"({', '.join(f.types)}) do not")
                else:
                    d = row.decision
                    cell.update(verdict=str(d.verdict), supports=str(d.supports),
                                rule=str(d.rule), cases=[], failing=False,
                                reason=f"{row.why.rule}: {d.reason}")
                    if row.why.convention:
                        cell["convention"] = str(row.why.convention)
                cells.append(cell)
            entry = {"version": version, "in_force": in_force,
                     "decided_by": UNDECIDED if undecided else "proved" if proved else "by type",
                     "cells": cells}
            if undecided:
                entry["undecided"] = undecided
            versions.append(entry)
        ops.append({"op": op, "domain": domain, "versions": versions})
    return ops
