"""A batch's records aggregated into the report every rendering reads (``batch_report``).

Aggregation, not rendering: which parameters fail a run (``fails``, the one rule of
``verdict.is_failure`` applied to record fields), each op's status over its cases, and the
summary counts. ``output.report`` and ``output.html_report`` only render the result.
"""
from __future__ import annotations

from typing import Any

from ..engine.verdict import VERDICTS, Rule, is_failure
from ..output.report import MISSING, NOT_RUN, expected_of
from ..vocab import Verdict


def fails(p: dict[str, Any]) -> bool:
    """``verdict.is_failure`` on a record's parameter (its fields, never its reason)."""
    expected = expected_of(p)
    return is_failure(Verdict(p["verdict"]), Rule(p["rule"]),
                      Verdict(expected) if expected else None)


def op_status(records: list[dict[str, Any]]) -> tuple[str, str]:
    """Aggregate the records of one op's cases into (status, reason)."""
    statuses = [r["status"] for r in records]
    names = ", ".join(r["case"] for r in records)
    for status, label in (("error", "error"), ("no-tags", "no tags"), ("invalid", "invalid"),
                          ("disagree", "disagrees")):
        hit = [r for r in records if r["status"] == status]
        if hit:
            r = hit[0]
            why = r.get("error") or r.get("invalid") or next(
                (f"{p['io']} {p['index']} {p['name']}: {p['reason']}" for p in r["parameters"]
                 if p["verdict"] == "disagree"), "")
            return label, why
    if any(p["verdict"] == "proposed" for r in records for p in r["parameters"]):
        return "proposed", f"evidence proposes tags for unknown parameters ({names})"
    if all(s == "inconclusive" for s in statuses):
        return "inconclusive", f"no parameter decided ({names})"
    return "proved", f"every tag agrees ({names})"


def batch_report(records: list[dict[str, Any]], coverage_entries: list[dict[str, Any]],
                 wall_time_s: float, waived: dict | None = None, stale: list | None = None,
                 cache_hits: int = 0, tags_from: str = "onnx.defs",
                 missing_from_docs: dict[str, list[str]] | None = None,
                 tags_path: str | None = None) -> dict[str, Any]:
    """The verify-all report (DESIGN §3): summary, proof records, and every ai.onnx op."""
    waived = waived or {}
    by_op: dict[str, list] = {}
    for r in records:
        by_op.setdefault(r["op"], []).append(r)
    ops = []
    for e in coverage_entries:
        recs = by_op.get(e["op"])
        if recs:
            status, reason = op_status(recs)
        elif e["status"] == "covered":
            status, reason = NOT_RUN, "not selected in this run"
        else:
            status, reason = MISSING, f"{e['reason_category']}: {e['reason']}"
        ops.append({"op": e["op"], "status": status, "reason": reason})
    counts = {v: 0 for v in VERDICTS}
    for r in records:
        for p in r["parameters"]:
            counts[p["verdict"]] += 1
    disagreements = [(r, p) for r in records for p in r["parameters"] if p["verdict"] == "disagree"]
    declared = [(r, p) for r, p in disagreements
                if expected_of(p) == "disagree"]
    unwaived = [(r, p) for r, p in disagreements
                if (r["case"], p["io"], p["index"]) not in waived
                and fails(p)]
    summary = {
        "ops_total": len(coverage_entries),
        "ops_covered": sum(e["status"] == "covered" for e in coverage_entries),
        "ops_run": len(by_op),
        "cases": len(records), "cache_hits": cache_hits,
        "parameters": counts,
        "disagreements": len(disagreements), "declared_disagreements": len(declared),
        "unwaived_disagreements": len(unwaived),
        "unexpected_inconclusive": sum(
            1 for r in records for p in r["parameters"]
            if p["verdict"] == "inconclusive" and fails(p)),
        "invalid_cases": sum(r["status"] == "invalid" for r in records),
        "failed_cases": sum(r["status"] == "error" for r in records),
        "cases_without_tags": sum(r["status"] == "no-tags" for r in records),
        "stale_waivers": [w.label() for w in (stale or [])],
        "waived": [{"case": k[0], "parameter": f"{k[1]} {k[2]}", "reason": w.reason}
                   for k, w in sorted(waived.items())],
        "tags_from": tags_from, "tags_path": tags_path,
        "missing_from_docs": missing_from_docs or {},
        "wall_time_s": round(wall_time_s, 2),
    }
    return {"format": 1, "summary": summary, "cases": records, "ops": ops}
