"""The schema versions of the domains the installed onnx registers beside ai.onnx
(``ai.onnx.ml``, ``ai.onnx.preview``, ``ai.onnx.preview.training`` in onnx 1.23), in the per-version table's shape
(``models/versions.json``'s ops), for the differentiability table (docs/table.md).

No catalogue case reaches these domains yet (no exporter writes their ops; their reference
cases are future work, docs/table.md, "Other domains"), so a parameter is decided here by
the schema's types alone (``engine/rules/by_type.py``, the rule verify-all applies to an
ai.onnx op without a case) or not at all. Unlike versions.json, whose cells are the
decided parameters only, every parameter of every version is a cell: an undecided one
says so (verdict ``inconclusive``, ``supports`` null, rule ``UNDECIDED``), so a consumer
sees each version and what is left.
"""
from __future__ import annotations

from typing import Any

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


def domain_ops(domain: str) -> list[dict[str, Any]]:
    """Every op of ``domain`` with its schema versions, each parameter a cell: by type
    where the types decide, else undecided (and the version names it, as versions.json's
    ``undecided`` does)."""
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
            cells, undecided = [], []
            for row in decide_op(tags):
                f = row.formal
                cell = {"io": f.io, "index": f.position, "name": f.name, "tag": f.tag}
                if row.decision is None:
                    undecided.append(f"{f.io} {f.position} ({f.name})")
                    cell.update(verdict="inconclusive", supports=None, rule=UNDECIDED,
                                cases=[], failing=False,
                                reason="no case reaches this domain yet and its types "
                                       f"({', '.join(f.types)}) do not decide it")
                else:
                    d = row.decision
                    cell.update(verdict=str(d.verdict), supports=str(d.supports),
                                rule=str(d.rule), cases=[], failing=False,
                                reason=f"{row.why.rule}: {d.reason}")
                    if row.why.convention:
                        cell["convention"] = str(row.why.convention)
                cells.append(cell)
            entry = {"version": version, "in_force": in_force,
                     "decided_by": "by type" if not undecided else UNDECIDED, "cells": cells}
            if undecided:
                entry["undecided"] = undecided
            versions.append(entry)
        ops.append({"op": op, "domain": domain, "versions": versions})
    return ops
