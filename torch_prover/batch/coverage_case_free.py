"""``coverage``'s case-free column: the ops and schema versions no catalogue case reaches,
decided from ONNX's node tests as ``verify-all --case-free`` decides them (``batch/case_free.
cells``: the numeric witness at ONNX's points, the function body, the schema's types).

Coverage stays cheap. ONNX's node tests are consulted only when a listed op or version has
no case route (with onnx 1.23.2 and today's catalogue: no op, and three schema versions --
Bernoulli-15, Optional-28, OptionalHasElement-28); they come from the collection the
result cache keeps (``engine/onnx_points/store.py``: collected once, about 8 s, then read
back), and only those versions' tests are measured (at most ``PER_VERSION`` each, a few
milliseconds a test; not cached). An op or version is ``case-free`` when its tests are
usable and decide every parameter; one they decide in part keeps its status, with the
cells listed and the reason naming what they leave undecided.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from ..engine.onnx_points.judge import CaseFreeRule
from ..engine.onnx_points.source import NodeTest, Skipped
from ..output.coverage import CASE_FREE, case_free_note
from ..output.batch_report import BY_TYPE, MISSING
from ..tags.schema import schema_tags
from .case_free import cells as case_free_cells
from .onnx_points import Points, no_test_of, points_for

def _why_none(op: str, version: int, points: Points) -> str:
    """Why ONNX's node tests give an (op, version) no usable point: none of that version,
    tests the runtime does not reproduce (the fidelity check), tests that give no points."""
    measured = points.run.by_version.get((op, version), ())
    if measured:
        said = "; ".join(w.detail for w in measured)
    else:
        said = no_test_of(op, version, {t.version for t in points.tests
                                        if isinstance(t, NodeTest) and t.op == op}, "usable ")
    skipped = Counter(t.reason.value for t in points.tests
                      if isinstance(t, Skipped) and t.op == op)
    if skipped:
        said += (f"; {sum(skipped.values())} of {op}'s tests give no points ("
                 + ", ".join(f"{n} {why}" for why, n in sorted(skipped.items())) + ")")
    return said


def decide(op: str, version: int, points: Points) -> dict[str, Any]:
    """One schema version decided without a case: ``decided`` says how -- ``by type`` (the
    schema's types decide every parameter, no test needed), ``case-free`` (usable tests and
    the types decide every parameter) or None -- with the tests, the cells
    (``batch/case_free.cells``, judged against the installed tags) and, when None, why."""
    tests = points.run.used(op, version)
    cells = case_free_cells(points.run, schema_tags(op, version))
    every = bool(cells) and all(c["supports"] for c in cells)
    if every and all(c["rule"] == CaseFreeRule.BY_TYPE for c in cells):
        how: str | None = BY_TYPE
    else:
        how = CASE_FREE if every and tests else None
    out: dict[str, Any] = {"version": version, "decided": how, "tests": tests, "cells": cells}
    if how is None:
        left = [f"{c['io']} {c['index']} ({c['name']})" for c in cells if not c["supports"]]
        out["why"] = (_why_none(op, version, points) if not tests else
                      "ONNX's node tests leave undecided " + ", ".join(left))
    return out


def entries_with_case_free(entries: list[dict[str, Any]], cache_dir: Path | None
                           ) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
    """``coverage``'s op entries with each ``missing`` op (no case, not decided by type)
    decided case-free at its latest schema version where ONNX's node tests decide it:
    ``decided``/``status`` ``case-free`` (or ``by type``, where ``batch/case_free.cells``'
    type rule, the output rule included, decides every parameter) and its ``case_free``
    cells; a missing op they decide in part or not at all stays missing, with ``case_free``
    saying why."""
    missing = {e["op"]: schema_tags(e["op"]).since_version for e in entries
               if e["status"] == MISSING}
    points = points_for(missing.items(), cache_dir)
    if points is None:
        return entries, ()
    out = []
    for e in entries:
        if e["op"] not in missing:
            out.append(e)
            continue
        found = decide(e["op"], missing[e["op"]], points)
        how = found["decided"] or e["status"]   # by type: the output rule decides it too
        out.append({**e, "status": how, "decided": how, "case_free": found})
    return out, points.warnings


def rows_with_case_free(table: list[dict[str, Any]], cache_dir: Path | None
                        ) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
    """``coverage --versions``' rows with each version no route decides (``none``) decided
    case-free where ONNX's node tests decide it, else kept ``none`` with their reason added."""
    keys = [(o["op"], r["version"]) for o in table for r in o["versions"]
            if r["decided"] == "none"]
    points = points_for(keys, cache_dir)
    if points is None:
        return table, ()
    out = []
    for o in table:
        rows = []
        for r in o["versions"]:
            if r["decided"] != "none":
                rows.append(r)
                continue
            found = decide(o["op"], r["version"], points)
            if found["decided"]:
                rows.append({**r, "decided": found["decided"], "reason": case_free_note(found),
                             "case_free": found})
            else:
                rows.append({**r, "reason": f"{r['reason']}; case-free: {case_free_note(found)}",
                             "case_free": found})
        out.append({**o, "versions": rows})
    return out, points.warnings
