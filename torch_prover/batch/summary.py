"""A batch's records aggregated into the report every rendering reads (``batch_report``).

Aggregation, not rendering: which parameters fail a run (``fails``, the one rule of
``verdict.is_failure`` applied to record fields), each op's status over its cases, and the
summary counts. ``output.report`` and ``output.html_report`` only render the result.
"""
from __future__ import annotations

from typing import Any

from ..engine.rules.verdict import VERDICTS, Rule, is_failure
from ..output.coverage import COVERED, case_less_entry
from ..output.documents import head
from ..output.batch_report import (BY_TYPE, DECLARED, MISSING, NO_TAGS, NOT_RUN, PARTLY,
                                   disagreement_tally, expected_of)
from ..output.units import count
from ..tags.schema import UnknownOpError, schema_tags
from ..vocab import DocKind, Verdict
from .waivers import waiver_key


def fails(p: dict[str, Any]) -> bool:
    """``verdict.is_failure`` on a record's parameter (its fields, never its reason)."""
    expected = expected_of(p)
    return is_failure(Verdict(p["verdict"]), Rule(p["rule"]),
                      Verdict(expected) if expected else None)


def op_status(records: list[dict[str, Any]], waived: dict | None = None) -> tuple[str, str]:
    """Aggregate the records of one op's cases into (status, reason). Disagreements that
    are all declared by their cases or waived (they do not fail the run) are ``declared``,
    not ``disagrees``."""
    statuses = [r["status"] for r in records]
    names = ", ".join(r["case"] for r in records)
    for status, label in (("error", "error"), ("no-tags", NO_TAGS), ("invalid", "invalid"),
                          ("disagree", "disagrees")):
        hit = [r for r in records if r["status"] == status]
        if hit:
            if status == "disagree" and not any(
                    fails(p) and waiver_key(r, p) not in (waived or {})
                    for r in hit for p in r["parameters"] if p["verdict"] == "disagree"):
                label = DECLARED
            r = hit[0]
            why = r.get("error") or r.get("invalid") or next(
                (f"{p['io']} {p['index']} {p['name']}: {p['reason']}" for p in r["parameters"]
                 if p["verdict"] == "disagree"), "")
            return label, why
    params = {(p["io"], p["index"]): p["name"] for r in records for p in r["parameters"]}
    decided = {(p["io"], p["index"]) for r in records for p in r["parameters"]
               if p["verdict"] != "inconclusive"}
    open_ = [f"{io} {i} ({params[io, i]})" for io, i in params if (io, i) not in decided]
    by_convention = sum(bool(p.get("convention")) and p["verdict"] != "inconclusive"
                        for r in records for p in r["parameters"])
    conv = (f"; {count(by_convention, 'case result')} decided by a convention"
            if by_convention else "")
    undecided = (f"; {count(len(open_), 'parameter')} inconclusive in every case: "
                 f"{', '.join(open_)}" if open_ else "")
    if any(p["verdict"] == "proposed" for r in records for p in r["parameters"]):
        return "proposed", (f"evidence proposes tags for unknown parameters ({names})"
                            f"{undecided}{conv}")
    if all(s == "inconclusive" for s in statuses):
        return "inconclusive", f"no parameter decided ({names}){conv}"
    if open_:   # "proved" only when every parameter is decided (issue 21)
        return PARTLY, (f"partly decided ({len(open_)} inconclusive): every decided tag "
                        f"agrees ({names}){undecided}{conv}")
    return "proved", f"every parameter decided, every tag agrees ({names}){conv}"


def case_less(coverage_entries: list[dict[str, Any]], selected: set[str] | None,
              tags=None) -> list[dict[str, Any]]:
    """Case-less ops as pseudo-records ``{"op", "case": None, "status", "parameters",
    "undecided", "schema_version"}``: each ``selected`` op without a case (every one when
    None) whose schema's types decide some parameter, decided against the run's tag
    source (``tags``: a TagSource, the installed onnx when None). An op the tag source
    lacks is ``no tags`` with the reason, never guessed."""
    out = []
    for e in coverage_entries:
        if e["status"] == COVERED or not e.get("by_type") or (
                selected is not None and e["op"] not in selected):
            continue
        try:
            t = (tags or schema_tags)(e["op"])
        except UnknownOpError as exc:
            out.append({"op": e["op"], "case": None, "status": NO_TAGS, "error": str(exc),
                        "parameters": []})
            continue
        entry = case_less_entry(e["op"], t)
        out.append({"op": e["op"], "case": None, "schema_version": t.since_version,
                    "status": entry["status"], "parameters": entry["by_type"],
                    **({"undecided": entry["undecided"]} if "undecided" in entry else {})})
    return out


def _case_less_op(e: dict[str, Any], c: dict[str, Any]) -> dict[str, Any]:
    """A case-less op's ``ops`` entry: its by-type rows as ``parameters`` (the shape of a
    record's), status ``by type`` (``disagrees`` when a row does, ``missing`` when some
    parameter is not decidable by type, ``no tags``), and a reason that says which."""
    why = f"no case ({e['reason_category']}: {e['reason']})"
    if c["status"] == NO_TAGS:
        return {"op": e["op"], "status": NO_TAGS, "reason": c["error"], "parameters": []}
    rows = c["parameters"]
    counts = ", ".join(f"{sum(p['verdict'] == v for p in rows)} {v}" for v in VERDICTS
                       if any(p["verdict"] == v for p in rows))
    dis = [p for p in rows if p["verdict"] == "disagree"]
    if c["status"] == MISSING:
        status = "disagrees" if dis else MISSING
        reason = (f"{e['reason_category']}: {e['reason']}; decided by type: "
                  + ", ".join(f"{p['io']} {p['index']} ({p['name']})" for p in rows)
                  + f" ({counts}); not decidable by type: {', '.join(c['undecided'])}")
    elif dis:
        p = dis[0]
        status, reason = "disagrees", f"{p['io']} {p['index']} {p['name']}: {p['reason']}"
    else:
        status, reason = BY_TYPE, f"every parameter non-differentiable by type: {counts}; {why}"
    return {"op": e["op"], "status": status, "reason": reason,
            "schema_version": c["schema_version"], "parameters": rows,
            **({"undecided": c["undecided"]} if "undecided" in c else {})}


def batch_report(records: list[dict[str, Any]], coverage_entries: list[dict[str, Any]],
                 wall_time_s: float | None, waived: dict | None = None,
                 stale: list | None = None, cache_hits: int | None = 0,
                 tags_from: str = "onnx.defs",
                 missing_from_docs: dict[str, list[str]] | None = None,
                 tags_path: str | None = None,
                 case_less_ops: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The verify-all report (docs/design.md §3.2): summary, proof records, and every ai.onnx op;
    ``case_less_ops`` (``case_less``) are decided by type in ``ops``, counted in
    ``summary.by_type``, apart from the cases' counts. ``wall_time_s`` and ``cache_hits``
    None: a report rebuilt from saved records, which cannot state them
    (``output/run_totals.RUN_ONLY``)."""
    waived = waived or {}
    by_op: dict[str, list] = {}
    for r in records:
        by_op.setdefault(r["op"], []).append(r)
    decided = {c["op"]: c for c in case_less_ops or ()}
    ops = []
    for e in coverage_entries:
        recs = by_op.get(e["op"])
        if recs:
            status, reason = op_status(recs, waived)
        elif e["op"] in decided:
            ops.append(_case_less_op(e, decided[e["op"]]))
            continue
        elif e["status"] in (COVERED, BY_TYPE):
            status, reason = NOT_RUN, "not selected in this run"
        else:
            status, reason = MISSING, f"{e['reason_category']}: {e['reason']}"
        ops.append({"op": e["op"], "status": status, "reason": reason})
    rows = [(c, p) for c in decided.values() for p in c["parameters"]]
    by_type_dis = [(c, p) for c, p in rows if p["verdict"] == "disagree"]
    counts = {v: 0 for v in VERDICTS}
    for r in records:
        for p in r["parameters"]:
            counts[p["verdict"]] += 1
    disagreements = [(r, p) for r in records for p in r["parameters"] if p["verdict"] == "disagree"]
    declared = [(r, p) for r, p in disagreements
                if expected_of(p) == "disagree"]
    unwaived = [(r, p) for r, p in disagreements
                if waiver_key(r, p) not in waived
                and fails(p)]
    summary = {
        "ops_total": len(coverage_entries),
        "ops_covered": sum(e["status"] == "covered" for e in coverage_entries),
        "ops_run": len(by_op),
        "cases": len(records), "cache_hits": cache_hits,
        "parameters": counts,
        "disagreements": len(disagreements), "declared_disagreements": len(declared),
        "disagreement_units": disagreement_tally(records),
        "convention_results": {v: sum(p["verdict"] == v and bool(p.get("convention"))
                                      for r in records for p in r["parameters"])
                               for v in VERDICTS},
        "unwaived_disagreements": len(unwaived),
        "unexpected_inconclusive": sum(
            1 for r in records for p in r["parameters"]
            if p["verdict"] == "inconclusive" and fails(p)),
        "invalid_cases": sum(r["status"] == "invalid" for r in records),
        "failed_cases": sum(r["status"] == "error" for r in records),
        "cases_without_tags": sum(r["status"] == "no-tags" for r in records),
        "stale_waivers": [w.label() for w in (stale or [])],
        "waived": [{"op": k[0], "case": k[1], "parameter": f"{k[2]} {k[3]}", "reason": w.reason}
                   for k, w in sorted(waived.items(), key=lambda kw: (kw[0][0], kw[0][1] or "",
                                                                      kw[0][2], kw[0][3]))],
        "by_type": {
            "ops": sum(c["status"] == BY_TYPE for c in decided.values()),
            "partly": sum(c["status"] == MISSING for c in decided.values()),
            "parameters": {v: sum(p["verdict"] == v for _, p in rows) for v in VERDICTS},
            "disagreements": len(by_type_dis),
            "unwaived_disagreements": sum(waiver_key(c, p) not in waived
                                          for c, p in by_type_dis)},
        "tags_from": tags_from, "tags_path": tags_path,
        "missing_from_docs": missing_from_docs or {},
        "wall_time_s": round(wall_time_s, 2) if wall_time_s is not None else None,
    }
    code = exit_code({"summary": summary})
    return {**head(DocKind.BATCH_REPORT, code, _reason(summary)), "summary": summary,
            "cases": records, "ops": ops}


def _reason(s: dict[str, Any]) -> str:
    """What decides the exit code, in one line: the counts that fail a run, or that none
    does (with the disagreements that are declared or waived)."""
    failing = [(s["unwaived_disagreements"], "unwaived disagreements"),
               (s["by_type"]["unwaived_disagreements"], "unwaived by-type disagreements"),
               (s["failed_cases"], "failed cases"), (s["invalid_cases"], "invalid cases"),
               (s["unexpected_inconclusive"], "inconclusive verdicts where evidence should "
                                              "have decided")]
    shown = [f"{what}: {n}" for n, what in failing if n]
    if shown:
        return ", ".join(shown)
    return (f"{s['cases']} cases: no unwaived disagreement, no failed or invalid case "
            f"({s['declared_disagreements']} disagreements declared by their cases, "
            f"{len(s['waived'])} waived)")


def exit_code(rep: dict[str, Any]) -> int:
    """verify-all's exit code from its report: 1 for an unwaived disagreement (a case's or a
    by-type row's), a failed or invalid case, or an inconclusive verdict where evidence
    should have decided; with ``--versions``, a failing cell or a failed variant its case
    does not declare (``batch/failures.py``); else 0 (``output/run_totals.failing``)."""
    from ..output import run_totals
    return run_totals.exit_code(rep)
