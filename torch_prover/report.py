"""Renderings of proofs: text, JSON, Markdown. Pure functions of the records, no I/O."""
from __future__ import annotations

import json
from typing import Any

from .tags import SchemaTags
from .verdict import VERDICTS, is_failure

VERDICT_MARK = {"agree": "ok", "disagree": "DISAGREE", "proposed": "proposed",
                "inconclusive": "inconclusive"}


def _table(rows: list[list[str]], header: list[str]) -> list[str]:
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*header), fmt.format(*("-" * w for w in widths))] + [
        fmt.format(*map(str, r)) for r in rows]


def numeric_line(rec: dict[str, Any]) -> str:
    n = rec.get("numeric")
    if n is None:
        return "numeric check: off (--no-numeric)"
    if n["runtime"] is None:
        return f"numeric check: no runtime could run the model ({n['why']})"
    vjp = ", ".join(f"{k} {v}" for k, v in n["vjp_rel_err"].items()) or "none to check"
    via = f" (onnxruntime skipped: {n['why']})" if n.get("why") else ""
    return (f"numeric check ({n['runtime']}{via}): forward max abs err "
            f"{n['forward_max_abs_err']} ({'ok' if n['forward_ok'] else 'MISMATCH'}); "
            f"VJP rel err: {vjp} (step {n['step']:g})")


def proof_text(rec: dict[str, Any]) -> str:
    head = (f"{rec['op']} / {rec['case']}  ({rec['kind']}, {rec['exporter']} exporter, "
            f"opset {rec['opset']}, schema {rec['op']}-{rec['schema_version']}"
            + (f", latest {rec['latest_schema_version']}"
               if rec['latest_schema_version'] != rec['schema_version'] else "") + ")")
    lines = [head]
    if rec.get("invalid"):
        lines.append(f"INVALID: {rec['invalid']}")
    rows = [[f"{p['io']} {p['index']}", p["name"], p["source"], p["evidence"], p["tag"]
             + (f" (latest: {p['tag_latest']})" if p.get("tag_latest") else ""),
             VERDICT_MARK[p["verdict"]], p["reason"]] for p in rec["parameters"]]
    if rows:
        lines += _table(rows, ["param", "name", "pytorch tensor", "evidence", "tag", "verdict",
                               "reason"])
    for p in rec["parameters"]:
        if p.get("expected"):
            lines.append(f"  declared by the case for {p['io']} {p['index']}: "
                         f"{p['expected']['verdict']} - {p['expected']['reason']}")
    lines.append(numeric_line(rec))
    lines.append(f"model sha256 {rec['model']['sha256']}; " + ", ".join(
        f"{k} {v}" for k, v in rec["versions"].items()))
    lines.append(f"status: {rec['status']}")
    return "\n".join(lines) + "\n"


def proof_markdown(rec: dict[str, Any], script: str | None = None) -> str:
    """A PR-ready comment: the per-parameter table, numeric check, versions, sha256."""
    lines = [f"### Differentiability proof: `{rec['op']}` ({rec['case']})", ""]
    if rec.get("invalid"):
        lines += [f"**Invalid case:** {rec['invalid']}", ""]
    if script:
        lines += ["<details><summary>proof script</summary>", "", "```python",
                  script.rstrip(), "```", "", "</details>", ""]
    lines += ["| parameter | PyTorch tensor | evidence | tag | verdict | reason |",
              "|---|---|---|---|---|---|"]
    for p in rec["parameters"]:
        verdict = f"**{p['verdict']}**" if p["verdict"] == "disagree" else p["verdict"]
        lines.append(f"| {p['io']} {p['index']} `{p['name']}` | `{p['source']}` | "
                     f"{p['evidence']} | {p['tag']} | {verdict} | {p['reason'].replace('|', '/')} |")
    lines += ["", numeric_line(rec), "",
              f"Exported with the {rec['exporter']} exporter at opset {rec['opset']} "
              f"(schema {rec['op']}-{rec['schema_version']}); model sha256 "
              f"`{rec['model']['sha256']}`; " + ", ".join(
                  f"{k} {v}" for k, v in rec["versions"].items()), ""]
    return "\n".join(lines)


def tags_text(tags: SchemaTags, latest: SchemaTags | None = None) -> str:
    lines = [f"{tags.op} (schema version {tags.since_version}, from {tags.source})"]
    rows = []
    for f in tags.inputs + tags.outputs:
        note = "non-differentiable by type" if f.non_differentiable_by_type else ""
        rows.append([f"{f.io} {f.position}", f.name, f.option, f.tag, note])
    lines += _table(rows, ["param", "name", "option", "tag", "note"])
    if latest is not None and latest.since_version != tags.since_version:
        lines.append(f"(latest schema version: {latest.since_version})")
    return "\n".join(lines) + "\n"


def tags_json(tags: SchemaTags) -> dict[str, Any]:
    return {"format": 1, "op": tags.op, "domain": tags.domain,
            "since_version": tags.since_version, "source": tags.source,
            "parameters": [{"io": f.io, "index": f.position, "name": f.name, "option": f.option,
                            "tag": f.tag, "types": list(f.types),
                            "non_differentiable_by_type": f.non_differentiable_by_type}
                           for f in tags.inputs + tags.outputs]}


def to_json(obj: Any) -> str:
    return json.dumps(obj, indent=2) + "\n"


# ----------------------------------------------------------------------------- batch reports
_CPP = {"differentiable": "OpSchema::Differentiable",
        "non-differentiable": "OpSchema::NonDifferentiable"}


def _expected(p: dict[str, Any]) -> str | None:
    return p.get("expected", {}).get("verdict")


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
            status, reason = "not run", "not selected in this run"
        else:
            status, reason = "missing", f"{e['reason_category']}: {e['reason']}"
        ops.append({"op": e["op"], "status": status, "reason": reason})
    counts = {v: 0 for v in VERDICTS}
    for r in records:
        for p in r["parameters"]:
            counts[p["verdict"]] += 1
    disagreements = [(r, p) for r in records for p in r["parameters"] if p["verdict"] == "disagree"]
    declared = [(r, p) for r, p in disagreements
                if _expected(p) == "disagree"]
    unwaived = [(r, p) for r, p in disagreements
                if (r["case"], p["io"], p["index"]) not in waived
                and is_failure(p["verdict"], p["reason"], _expected(p))]
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
            if p["verdict"] == "inconclusive" and is_failure(p["verdict"], p["reason"], _expected(p))),
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


def proposals(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Proposed tags for unknown parameters, one per (op, version, parameter)."""
    seen: dict[tuple, dict[str, Any]] = {}
    for r in report["cases"]:
        for p in r["parameters"]:
            if p["verdict"] != "proposed":
                continue
            tag = p["reason"].rsplit("propose ", 1)[-1]
            key = (r["op"], r.get("latest_schema_version"), p["io"], p["name"])
            seen.setdefault(key, {"op": r["op"], "version": r.get("latest_schema_version"),
                                  "io": p["io"], "index": p["index"], "name": p["name"],
                                  "tag": tag, "cpp": _CPP.get(tag, tag), "case": r["case"],
                                  "evidence": p["evidence"], "source": p["source"]})
    return list(seen.values())


def reproduce(report: dict[str, Any], rec: dict[str, Any]) -> str:
    """The command that reproduces one case's verdicts, tag source included."""
    path = report["summary"].get("tags_path")
    return (f"torch-prover prove {rec['op']} --case {rec['case']}"
            + (f" --tags-from {path}" if path else ""))


def batch_text(report: dict[str, Any]) -> str:
    s = report["summary"]
    c = s["parameters"]
    lines = [f"ops: {s['ops_covered']} of {s['ops_total']} ai.onnx ops covered, {s['ops_run']} run "
             f"in {s['cases']} cases ({s['cache_hits']} from cache)",
             f"parameters: {c['agree']} agree, {c['disagree']} disagree "
             f"({s['declared_disagreements']} declared by their cases, "
             f"{s['unwaived_disagreements']} new), {c['proposed']} proposed, "
             f"{c['inconclusive']} inconclusive",
             f"cases: {s['invalid_cases']} invalid, {s['failed_cases']} failed; "
             f"wall time {s['wall_time_s']:.1f} s"]
    for r in report["cases"]:
        if r["status"] == "error":
            lines.append(f"  FAILED   {r['op']}/{r['case']}: {r['error']}")
        elif r["status"] == "no-tags":
            lines.append(f"  NO TAGS  {r['op']}/{r['case']}: {r['error']}")
        elif r["status"] == "invalid":
            lines.append(f"  INVALID  {r['invalid']}")
    waived = {(w["case"], w["parameter"]) for w in s["waived"]}
    for r in report["cases"]:
        for p in r["parameters"]:
            if p["verdict"] == "disagree":
                mark = ("waived  " if (r["case"], f"{p['io']} {p['index']}") in waived else
                        "declared" if _expected(p) == "disagree"
                        else "DISAGREE")
                lines.append(f"  {mark} {r['op']} {p['io']} {p['index']} ({p['name']}): tag "
                             f"{p['tag']}, evidence {p['evidence']} - {p['reason']} "
                             f"[{reproduce(report, r)}]")
    for op, params in sorted(s.get("missing_from_docs", {}).items()):
        lines.append(f"  {op}: not in {s['tags_from']}: {', '.join(params)} (reported, not guessed)")
    for w in s["stale_waivers"]:
        lines.append(f"  stale waiver: {w} matches no disagreement any more")
    return "\n".join(lines) + "\n"


def batch_markdown(report: dict[str, Any]) -> str:
    """A PR or issue description: disagreements first, then proposals, then the op table."""
    s = report["summary"]
    c = s["parameters"]
    out = ["# ONNX differentiability tags, checked by torch_prover", "",
           f"{s['ops_covered']} of {s['ops_total']} ai.onnx operators have a proof case; "
           f"{s['cases']} cases ran. Parameters: **{c['disagree']} disagree**, {c['agree']} agree, "
           f"{c['proposed']} proposed for unknown tags, {c['inconclusive']} inconclusive. "
           f"{s['invalid_cases']} invalid and {s['failed_cases']} failed cases.", ""]
    dis = [(r, p) for r in report["cases"] for p in r["parameters"] if p["verdict"] == "disagree"]
    groups: dict[tuple, list] = {}
    for r, p in dis:  # one entry per ONNX parameter, every case that shows it listed
        groups.setdefault((r["op"], p["io"], p["index"], p["name"], p["tag"]), []).append((r, p))
    out += [f"## Disagreements ({len(groups)} parameters, {len(dis)} case results)", ""]
    if not dis:
        out += ["None: every exercised tag agrees with the evidence.", ""]
    waived = {(w["case"], w["parameter"]): w["reason"] for w in s["waived"]}
    for (op, io, index, name, tag), hits in groups.items():
        r, p = hits[0]
        w = waived.get((r["case"], f"{io} {index}"))
        out += [f"### `{op}` {io} {index} `{name}`: tagged {tag}, evidence says "
                f"{'non-differentiable' if tag == 'differentiable' else 'differentiable'}"
                + (" (waived)" if w else ""), "",
                f"- evidence: **{p['evidence']}** from PyTorch tensor `{p['source']}` "
                f"(case `{r['case']}`, {r['exporter']} exporter, opset {r['opset']}, "
                f"schema {op}-{r.get('schema_version')})",
                f"- {p['reason']}"]
        if len(hits) > 1:
            out.append("- also shown by: " + ", ".join(
                f"`{h[0]['case']}` ({h[1]['evidence']})" for h in hits[1:]))
        out.append(f"- reproduce: `{reproduce(report, r)}`")
        if w:
            out.append(f"- waived: {w}")
        if _expected(p) == "disagree":
            out.append(f"- known, declared by the case: {p['expected']['reason']}")
        out.append("")
    props = proposals(report)
    out += [f"## Proposed tags for unknown parameters ({len(props)})", ""]
    if props:
        out += ["| op | version | parameter | proposed tag | evidence (case) |", "|---|---|---|---|---|"]
        for q in props:
            out.append(f"| `{q['op']}` | {q['version']} | {q['io']} {q['index']} `{q['name']}` | "
                       f"`{q['cpp']}` | {q['evidence']} from `{q['source']}` ({q['case']}) |")
        out.append("")
    bad = [r for r in report["cases"] if r["status"] in ("error", "invalid")]
    if bad:
        out += [f"## Failed or invalid cases ({len(bad)})", ""]
        out += [f"- `{r['op']}/{r['case']}`: {r.get('error') or r.get('invalid')}" for r in bad]
        out.append("")
    out += ["## Per-op status", "", "| op | status | detail |", "|---|---|---|"]
    for o in report["ops"]:
        out.append(f"| `{o['op']}` | {o['status']} | {o['reason'].replace('|', '/')} |")
    return "\n".join(out) + "\n"
