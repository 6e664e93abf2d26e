"""Renderings of a batch of proofs (verify-all, merge, report): its text and Markdown, and
the counts and commands they share with the HTML page and the step summary. Pure
functions of the batch report, no I/O.
"""
from __future__ import annotations

from typing import Any

from .report import md_row
from .run_totals import cache_part, proofs_words, totals, wall_words
from .text_table import DEFAULT_WIDTH, table, wrap_line
from .units import UNITS, count

NOT_RUN, MISSING, BY_TYPE, NO_TAGS = "not run", "missing", "by type", "no tags"
DECLARED = "declared"   # every disagreement declared by its case (expect=) or waived
PARTLY = "partly decided"   # an op some of whose parameters no case decides
# Every status an op can have in a batch report, most urgent first. The one list every
# rendering sorts, colours and explains statuses by (op_status and batch_report produce them;
# ``by type``: an op without a case whose schema's types decide every parameter).
OP_STATUSES = ("disagrees", "error", NO_TAGS, "invalid", "inconclusive", PARTLY, "proposed",
               DECLARED, "proved", BY_TYPE, NOT_RUN, MISSING)
_CPP = {"differentiable": "OpSchema::Differentiable",
        "non-differentiable": "OpSchema::NonDifferentiable"}


def param_key(rec: dict[str, Any], p: dict[str, Any]) -> tuple:
    """What one *parameter* is, for every count: one input or output of one schema version
    (fix-tags edits at this grain)."""
    return rec["op"], rec.get("schema_version"), p["io"], p["index"]


def disagreement_tally(cases: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Disagreements counted in every unit, those a convention decides (the parameter's
    record names one) apart from the math ones: ``{"math": {...}, "convention": {...}}``,
    each with ``case_results``, ``parameters``, ``cases`` and ``ops``."""
    out = {}
    for kind, want in (("math", False), ("convention", True)):
        hits = [(r, p) for r in cases for p in r.get("parameters") or ()
                if p.get("verdict") == "disagree" and bool(p.get("convention")) is want]
        out[kind] = {"case_results": len(hits),
                     "parameters": len({param_key(r, p) for r, p in hits}),
                     "cases": len({(r["op"], r.get("case")) for r, _ in hits}),
                     "ops": len({r["op"] for r, _ in hits})}
    return out


def tally_words(t: dict[str, int]) -> str:
    """``3 parameters (5 case results, in 2 ops)``."""
    return (f"{count(t['parameters'], 'parameter')} ({count(t['case_results'], 'case result')}, "
            f"in {count(t['ops'], 'op')})")


def convention_label(p: dict[str, Any]) -> str:
    """``convention: state output``, or, when the convention has no precedent outside the
    schema under test and the math decided, ``convention without precedent: state output``."""
    return f"{p['rule'] if p.get('rule') == 'convention without precedent' else 'convention'}: " \
           f"{p['convention']}"


def expected_of(p: dict[str, Any]) -> str | None:
    """The verdict a record's parameter declares (``expect=``), or None."""
    return p.get("expected", {}).get("verdict")


def by_type_rows(report: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(ops entry, row) for every parameter of a case-less op decided by type."""
    return [(o, p) for o in report["ops"] for p in o.get("parameters") or ()]


def proposals(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Proposed tags for unknown parameters, one per (op, version, parameter): from the
    cases, then from case-less ops decided by type (``case`` None, evidence ``by type``)."""
    seen: dict[tuple, dict[str, Any]] = {}
    found = [(r, p, r.get("latest_schema_version"), r["case"], p["evidence"], p["source"])
             for r in report["cases"] for p in r["parameters"]]
    found += [(o, p, o.get("schema_version"), None, "by type", "schema types")
              for o, p in by_type_rows(report)]
    for r, p, version, case, evidence, source in found:
        if p["verdict"] != "proposed":
            continue
        tag = p["reason"].rsplit("propose ", 1)[-1]
        key = (r["op"], version, p["io"], p["name"])
        seen.setdefault(key, {"op": r["op"], "version": version,
                              "io": p["io"], "index": p["index"], "name": p["name"],
                              "tag": tag, "cpp": _CPP.get(tag, tag), "case": case,
                              "convention": p.get("convention"),
                              "evidence": evidence, "source": source})
    return list(seen.values())


def by_type_command(report: dict[str, Any], op: str) -> str:
    """The command that reproduces a case-less op's by-type verdicts, tag source included."""
    path = report["summary"].get("tags_path")
    return f"torch-prover verify-all --ops {op} --no-write" + (f" --tags-from {path}" if path else "")


def by_type_mark(report: dict[str, Any], o: dict[str, Any], p: dict[str, Any]) -> str | None:
    """The waiver's reason when one covers this by-type disagreement, else None."""
    key = (o["op"], None, f"{p['io']} {p['index']}")
    return next((w["reason"] for w in report["summary"]["waived"]
                 if (w.get("op"), w["case"], w["parameter"]) == key), None)


def prove_command(op: str, case: str, tags_path: str | None = None) -> str:
    """The command that proves one catalogue case (and reproduces its verdicts); a variant
    ``<case>@<opset>`` (``batch/versions.py``) is its case at that opset. A reference case
    of another domain (``cases/other_domains.py``), which ``prove`` does not know, is
    proved by ``verify-all --domain`` with its op's cases."""
    name, at, opset = case.partition("@")
    tags = f" --tags-from {tags_path}" if tags_path else ""
    from ..cases.other_domains import DOMAIN_CASES
    domain = next((c.domain for c in DOMAIN_CASES if c.name == name and c.op == op), None)
    if domain is not None:
        return f"torch-prover verify-all --domain {domain} --ops {op} --no-write{tags}"
    return f"torch-prover prove {op} --case {name}" + (f" --opset {opset}" if at else "") + tags


def reproduce(report: dict[str, Any], rec: dict[str, Any]) -> str:
    """The command that reproduces one case's verdicts, tag source included."""
    return prove_command(rec["op"], rec["case"], report["summary"].get("tags_path"))


def not_run(report: dict[str, Any]) -> list[str]:
    """The ops that have a case but were not selected in this batch (``--ops``)."""
    return [o["op"] for o in report["ops"] if o["status"] == NOT_RUN]


def _not_run_line(names: list[str], list_names: bool) -> str:
    what = f"{len(names)} op{'s' if len(names) != 1 else ''} not run in this batch"
    pointer = "`torch-prover coverage OP` lists an op's cases"
    return f"{what}: {', '.join(names)} ({pointer})" if list_names else f"{what} ({pointer})"


def batch_text(report: dict[str, Any], width: int | None = DEFAULT_WIDTH) -> str:
    """verify-all as text: the per-op table of the ops this batch ran (ops not run, and ops
    without a case, one line each), then the summary and what needs a decision, last,
    where a terminal leaves the reader."""
    s = report["summary"]
    c = s["parameters"]
    lines = table([[o["op"], o["status"], o["reason"]] for o in report["ops"]
                    if o["status"] not in (NOT_RUN, MISSING)], ["op", "status", "reason"],
                   width, flex=2)
    # what this batch did not prove is one line each; the reasons are `coverage`'s
    skipped = not_run(report)
    if skipped:  # names only while they are few: the reader chose --ops, the rest is the rest
        lines += wrap_line(_not_run_line(skipped, len(skipped) <= 12), width)
    missing = [o["op"] for o in report["ops"] if o["status"] == MISSING]
    if missing:
        lines += wrap_line(f"{len(missing)} op{'s' if len(missing) != 1 else ''} without a case: "
                       f"{', '.join(missing)} (`torch-prover coverage OP` says why)", width)
    lines.append("")
    by_type_ops = (s.get("by_type") or {}).get("ops", 0)
    tally = disagreement_tally(report["cases"])
    for line in (f"ops: {s['ops_covered']} of {count(s['ops_total'], 'op')} (ai.onnx) have a "
                 f"case" + (f" ({by_type_ops} more decided by type)" if by_type_ops else "")
                 + f", {s['ops_run']} run in {proofs_words(totals(report))}"
                 + cache_part(report),
                 f"case results: {c['agree']} agree, {c['disagree']} disagree "
                 f"({s['declared_disagreements']} declared by their cases, "
                 f"{s['unwaived_disagreements']} new), {c['proposed']} proposed, "
                 f"{c['inconclusive']} inconclusive",
                 f"disagreements: {tally_words(tally['math'])} by the math; "
                 f"{tally_words(tally['convention'])} decided by a convention",
                 f"cases: {s['invalid_cases']} invalid, {s['failed_cases']} failed; "
                 + wall_words(report)):
        lines += wrap_line(line, width)
    t = s.get("by_type")
    if t and (t["ops"] or t["partly"]):
        b = t["parameters"]
        lines += wrap_line(f"by type (ops without a case): {count(t['ops'], 'op')} decided, "
                           f"{t['partly']} partly; parameters: {b['agree']} agree, "
                           f"{b['disagree']} disagree "
                           f"({t['unwaived_disagreements']} new), {b['proposed']} proposed", width)
    for r in report["cases"]:
        if r["status"] == "error":
            lines += wrap_line(f"  FAILED   {r['op']}/{r['case']}: {r['error']}", width, "    ")
        elif r["status"] == "no-tags":
            lines += wrap_line(f"  NO TAGS  {r['op']}/{r['case']}: {r['error']}", width, "    ")
        elif r["status"] == "invalid":
            lines += wrap_line(f"  INVALID  {r['invalid']}", width, "    ")
    waived = {(w["case"], w["parameter"]) for w in s["waived"]}
    # the math's disagreements first, then those a convention decides (issue 21)
    ordered = sorted(((r, p) for r in report["cases"] for p in r["parameters"]),
                     key=lambda rp: bool(rp[1].get("convention")))
    for r, p in ordered:
        if p["verdict"] != "disagree":
            continue
        mark = ("waived" if (r["case"], f"{p['io']} {p['index']}") in waived else
                "declared by the case" if expected_of(p) == "disagree"
                else "NEW, needs a decision")
        if p.get("convention"):
            mark += f"; {convention_label(p)}"
        lines += wrap_line(f"  disagree ({mark}): {r['op']} {p['io']} {p['index']} "
                       f"({p['name']}): tag {p['tag']}, evidence {p['evidence']} - "
                       f"{p['reason']}", width, "    ")
        lines += wrap_line(f"    reproduce: {reproduce(report, r)}", width, "      ")
    for o, p in by_type_rows(report):
        if p["verdict"] == "disagree":
            mark = "waived" if by_type_mark(report, o, p) else "NEW, needs a decision"
            lines += wrap_line(f"  disagree ({mark}): {o['op']} {p['io']} {p['index']} "
                               f"({p['name']}): tag {p['tag']}, by type (no case) - "
                               f"{p['reason']}", width, "    ")
            lines += wrap_line(f"    reproduce: {by_type_command(report, o['op'])}", width, "      ")
    for op, params in sorted(s.get("missing_from_docs", {}).items()):
        lines += wrap_line(f"  {op}: not in {s['tags_from']}: {', '.join(params)} "
                       "(reported, not guessed)", width, "    ")
    for w in s["stale_waivers"]:
        lines += wrap_line(f"  stale waiver: {w} matches no disagreement any more", width, "    ")
    return "\n".join(lines) + "\n"


def _by_type_sentence(s: dict[str, Any]) -> str:
    t = s.get("by_type")
    if not t or not (t["ops"] or t["partly"]):
        return ""
    b = t["parameters"]
    return (f" Ops without a case decided by their schema's types: {t['ops']} (and {t['partly']} "
            f"partly), parameters **{b['disagree']} disagree**, {b['agree']} agree, "
            f"{b['proposed']} proposed.")


def batch_markdown(report: dict[str, Any]) -> str:
    """A PR or issue description: disagreements first, then proposals, then the op table."""
    s = report["summary"]
    c = s["parameters"]
    tally = disagreement_tally(report["cases"])
    out = ["# ONNX differentiability tags, checked by torch_prover", "",
           f"{s['ops_covered']} of {count(s['ops_total'], 'op')} (ai.onnx) have a proof case; "
           f"{count(s['cases'], 'case')} ran. Case results (one parameter in one case): "
           f"**{c['disagree']} disagree**, {c['agree']} agree, "
           f"{c['proposed']} proposed for unknown tags, {c['inconclusive']} inconclusive. "
           f"Disagreements: {tally_words(tally['math'])} by the math, "
           f"{tally_words(tally['convention'])} decided by a convention. "
           f"{s['invalid_cases']} invalid and {s['failed_cases']} failed cases."
           + _by_type_sentence(s), "", f"Units: {UNITS}.", ""]
    dis = [(r, p) for r in report["cases"] for p in r["parameters"]
           if p["verdict"] == "disagree" and not p.get("convention")]
    type_dis = [(o, p) for o, p in by_type_rows(report) if p["verdict"] == "disagree"]
    out += [f"## Disagreements ({tally_words(tally['math'])}"
            + (f"; {count(len(type_dis), 'parameter')} by type, in ops without a case"
               if type_dis else "") + ")", ""]
    if not dis and not type_dis:
        out += ["None: every exercised tag agrees with the evidence.", ""]
    for o, p in type_dis:
        w = by_type_mark(report, o, p)
        out += [f"### `{o['op']}` {p['io']} {p['index']} `{p['name']}`: tagged {p['tag']}, its "
                "types say non-differentiable" + (" (waived)" if w else ""), "",
                f"- by type, no case (schema {o['op']}-{o.get('schema_version')}): {p['reason']}",
                f"- reproduce: `{by_type_command(report, o['op'])}`"]
        out += [f"- waived: {w}", ""] if w else [""]
    out += _md_disagreements(report, dis)
    conv = [(r, p) for r in report["cases"] for p in r["parameters"]
            if p["verdict"] == "disagree" and p.get("convention")]
    if conv:
        out += [f"## Disagreements decided by a convention ({tally_words(tally['convention'])})",
                "", "The math alone does not decide these: each names the convention that "
                "does (`torch-prover tags OP --explain` shows both halves).", ""]
        out += _md_disagreements(report, conv)
    props = proposals(report)
    out += [f"## Proposed tags for unknown parameters ({count(len(props), 'parameter')})", ""]
    if props:
        out += ["| op | version | parameter | proposed tag | evidence (case) | convention |",
                "|---|---|---|---|---|---|"]
        for q in props:
            out.append(md_row(f"`{q['op']}`", q["version"], f"{q['io']} {q['index']} `{q['name']}`",
                              f"`{q['cpp']}`", f"{q['evidence']} from `{q['source']}` ({q['case']})",
                              q.get("convention") or ""))
        out.append("")
    bad = [r for r in report["cases"] if r["status"] in ("error", "invalid")]
    if bad:
        out += [f"## Failed or invalid cases ({len(bad)})", ""]
        out += [f"- `{r['op']}/{r['case']}`: {r.get('error') or r.get('invalid')}" for r in bad]
        out.append("")
    out += ["## Per-op status", ""]
    shown = [o for o in report["ops"] if o["status"] != NOT_RUN]
    if shown:
        out += ["| op | status | detail |", "|---|---|---|"]
        out += [md_row(f"`{o['op']}`", o["status"], o["reason"]) for o in shown]
        out.append("")
    skipped = not_run(report)
    if skipped:
        out.append(_not_run_line(skipped, True) + ".")
    return "\n".join(out) + "\n"


def _md_disagreements(report: dict[str, Any], dis: list[tuple[dict, dict]]) -> list[str]:
    """One entry per parameter (``param_key``), every case that shows it listed."""
    groups: dict[tuple, list] = {}
    for r, p in dis:
        groups.setdefault(param_key(r, p), []).append((r, p))
    out: list[str] = []
    waived = {(w["case"], w["parameter"]): w["reason"] for w in report["summary"]["waived"]}
    for (op, version, io, index), hits in groups.items():
        r, p = hits[0]
        name, tag = p["name"], p["tag"]
        w = waived.get((r["case"], f"{io} {index}"))
        said = "its convention" if p.get("rule") == "convention" else "evidence"
        out += [f"### `{op}`-{version} {io} {index} `{name}`: tagged {tag}, {said} says "
                f"{'non-differentiable' if tag == 'differentiable' else 'differentiable'}"
                + (f" ({convention_label(p)})" if p.get("convention") else "")
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
        if expected_of(p) == "disagree":
            out.append(f"- known, declared by the case: {p['expected']['reason']}")
        out.append("")
    return out
