"""Renderings of proofs: text, JSON, Markdown. Pure functions of the records, no I/O.

Text is wrapped to a width the caller passes (the CLI passes the terminal's); Markdown
table cells escape ``|`` as ``\\|`` so a reason reads the same in every rendering.
"""
from __future__ import annotations

import json
import re
import textwrap
from typing import Any

from .body_text import body_summary
from .run_totals import cache_part, proofs_words, totals, wall_words
from .units import UNITS, count
from ..tags.schema import SchemaTags
from ..version import __version__
from ..vocab import ExportRoute

NOT_RUN, MISSING, BY_TYPE, NO_TAGS = "not run", "missing", "by type", "no tags"
DECLARED = "declared"   # every disagreement declared by its case (expect=) or waived
PARTLY = "partly decided"   # an op some of whose parameters no case decides
# Every status an op can have in a batch report, most urgent first. The one list every
# rendering sorts, colours and explains statuses by (op_status and batch_report produce them;
# ``by type``: an op without a case whose schema's types decide every parameter).
OP_STATUSES = ("disagrees", "error", NO_TAGS, "invalid", "inconclusive", PARTLY, "proposed",
               DECLARED, "proved", BY_TYPE, NOT_RUN, MISSING)
DEFAULT_WIDTH = 100   # text width when the caller does not know a terminal's
_GAP = "  "           # between text table columns
_FLEX_MIN = 30        # narrower than this, a table's reason goes under its row instead


# ----------------------------------------------------------------------------- text layout
def _words(text: str) -> int:
    """The longest word of ``text``: the narrowest a column can be without breaking words."""
    return max((len(w) for w in text.split()), default=0)


def _wrap(text: str, width: int | None) -> list[str]:
    if width is None or len(text) <= width:
        return [text]
    return textwrap.wrap(text, max(width, 1), break_long_words=True,
                         break_on_hyphens=False) or [""]  # "8e-11" stays whole


def wrap_line(text: str, width: int | None, indent: str = "  ") -> list[str]:
    """One logical line wrapped to ``width``, continuation lines indented."""
    if width is None or len(text) <= width:
        return [text]
    return textwrap.wrap(text, width, subsequent_indent=indent, break_long_words=True,
                         break_on_hyphens=False) or [""]


def _shrink(widths: list[int], floor: list[int], budget: int) -> list[int]:
    """Take width from the column with the most to spare (down to ``floor``) until the
    columns fit ``budget``; as close as the floors allow."""
    w = list(widths)
    while sum(w) > budget:
        spare = max(range(len(w)), key=lambda i: (w[i] - floor[i], w[i]))
        if w[spare] <= floor[spare]:
            break
        w[spare] -= 1
    return w


def _fit(natural: list[int], minimum: list[int], budget: int) -> list[int]:
    """Whole words if the budget allows, broken words (3 columns at least) if it does not."""
    w = _shrink(natural, minimum, budget)
    return w if sum(w) <= budget else _shrink(w, [min(n, 3) for n in natural], budget)


def _lines(cells: list[str], widths: list[int]) -> list[str]:
    """One table row, each cell wrapped in its column, as many lines as its tallest cell."""
    wrapped = [_wrap(c, w) for c, w in zip(cells, widths)]
    return [_GAP.join(f"{(col[k] if k < len(col) else ''):<{w}}"
                      for col, w in zip(wrapped, widths)).rstrip()
            for k in range(max(len(col) for col in wrapped))]


def _table(rows: list[list[str]], header: list[str], width: int | None = None,
           flex: int | None = None) -> list[str]:
    """A plain-text table, every line at most ``width`` long (None: no limit).

    Column ``flex`` (the long reason) takes what the others leave and wraps under itself;
    where that would be narrower than _FLEX_MIN it goes on lines of its own under its row
    instead, indented to the second column, so a row's facts stay on one line and its
    reason stays readable. Other columns wrap at spaces only when they alone overflow.
    """
    rows = [[str(c) for c in r] for r in rows]
    n = len(header)
    natural = [max(len(x) for x in [header[i]] + [r[i] for r in rows]) for i in range(n)]
    minimum = [max(_words(x) for x in [header[i]] + [r[i] for r in rows]) for i in range(n)]
    gaps = len(_GAP) * (n - 1)
    widths = natural
    if width is not None and sum(natural) + gaps > width:
        if flex is None:
            widths = _fit(natural, minimum, width - gaps)
        elif width - gaps - (sum(natural) - natural[flex]) >= _FLEX_MIN:
            widths = list(natural)
            widths[flex] = width - gaps - (sum(natural) - natural[flex])
        else:
            return _stacked(rows, header, width, flex, natural, minimum)
    out = _lines(header, widths) + [_GAP.join("-" * w for w in widths)]
    for r in rows:
        out += _lines(r, widths)
    return out


def table(rows: list[list[str]], header: list[str], width: int | None = None,
          flex: int | None = None) -> list[str]:
    """The plain-text table every text rendering uses (see ``_table``)."""
    return _table(rows, header, width, flex)


def _stacked(rows: list[list[str]], header: list[str], width: int, flex: int,
             natural: list[int], minimum: list[int]) -> list[str]:
    """The narrow layout of _table: column ``flex`` on lines of its own under each row."""
    keep = [i for i in range(len(header)) if i != flex]
    widths = _fit([natural[i] for i in keep], [minimum[i] for i in keep],
                  width - len(_GAP) * (len(keep) - 1))
    indent = " " * min(widths[0] + len(_GAP), width // 3)

    def row(cells: list[str]) -> list[str]:
        return _lines([cells[i] for i in keep], widths) + [
            indent + line for line in _wrap(cells[flex], width - len(indent))]

    out = row(header) + [_GAP.join("-" * w for w in widths)]
    for r in rows:
        out += row(r)
    return out


def numeric_line(rec: dict[str, Any]) -> str:
    n = rec.get("numeric")
    if n is None and rec.get("invalid"):
        return "numeric check: not run (the case is invalid)"
    if n is None:
        return "numeric check: off (--no-numeric)"
    if n["runtime"] is None:
        return f"numeric check: no runtime could run the model ({n['why']})"
    vjp = ", ".join(f"{k} {v}" for k, v in n["vjp_rel_err"].items()) or n.get(
        "vjp_skipped") or "none to check"
    # a float32 copy ran (engine/float32_copy.py): ``why`` says why the float64 runs did not
    skipped = "float64 runs" if n.get("copy") else "onnxruntime skipped"
    via = f" ({skipped}: {n['why']})" if n.get("why") else ""
    drawn = "".join(f"; output {j} a random draw ({op}): shape and type compared only"
                    for j, op in (n.get("drawn") or {}).items())
    if n.get("precision"):
        via += f", {n['precision']['why']}"
    return (f"numeric check ({n['runtime']}{via}): forward max abs err "
            f"{n['forward_max_abs_err']} ({'ok' if n['forward_ok'] else 'MISMATCH'}){drawn}; "
            f"VJP rel err: {vjp} (step {n['step']:g})")


def autograd_source_line(rec: dict[str, Any]) -> str:
    """Whose autograd the autograd witness reports (a PyTorch operator, or the case's own
    reference implementation), once per case; empty for a record that does not say."""
    sources = sorted({p.get("witnesses", {}).get("autograd", {}).get("source", "")
                      for p in rec.get("parameters") or ()} - {""})
    return f"autograd witness: {', '.join(sources)}" if sources else ""


def md_cell(text: Any) -> str:
    """``text`` as one Markdown table cell: ``|`` escaped (GitHub renders ``\\|`` as ``|``,
    code spans included), line breaks as ``<br>``; the words themselves unchanged."""
    return re.sub(r"\r?\n", "<br>", str(text)).replace("|", "\\|")


def md_row(*cells: Any) -> str:
    return "| " + " | ".join(md_cell(c) for c in cells) + " |"


def proof_text(rec: dict[str, Any], width: int | None = DEFAULT_WIDTH,
               model_label: str = "model") -> str:
    """One case as text: the per-parameter table (wrapped to ``width``), numeric check,
    versions and status; ``model_label`` names the proved model (``run``: evidence copy)."""
    head = (f"{rec['op']} / {rec['case']}  ({rec['case_kind']}, {rec['exporter']} exporter, "
            f"opset {rec['opset']}, schema {rec['op']}-{rec['schema_version']}"
            + (f", latest {rec['latest_schema_version']}"
               if rec['latest_schema_version'] != rec['schema_version'] else "") + ")")
    lines = wrap_line(head, width)
    if rec.get("invalid"):
        lines += wrap_line(f"INVALID: {rec['invalid']}", width)
    rows = [[f"{p['io']} {p['index']}", p["name"], p["source"], p["evidence"], p["tag"]
             + (f" (latest: {p['tag_latest']})" if p.get("tag_latest") else ""),
             p["verdict"], p["reason"]] for p in rec["parameters"]]
    if rows:
        lines += _table(rows, ["param", "name", "pytorch tensor", "evidence", "tag", "verdict",
                               "reason"], width, flex=6)
    for p in rec["parameters"]:
        if p.get("expected"):
            lines += wrap_line(declared_line(rec, p), width, "    ")
    lines += [x for n in rec.get("notes", ()) for x in wrap_line(f"note: {n}", width, "  ")]
    lines += wrap_line(numeric_line(rec), width)
    lines += wrap_line(body_summary(rec), width)
    source = autograd_source_line(rec)
    if source:
        lines += wrap_line(source, width)
    if rec.get("route_note"):   # a relabelled variant: how, and every adaptation
        lines += wrap_line(f"route: relabelled, {rec['route_note']}", width, "  ")
    lines += wrap_line(f"{model_label} sha256 {rec['model']['sha256']}; " + ", ".join(
        f"{k} {v}" for k, v in rec["versions"].items()), width)
    lines.append(f"status: {rec['status']}")
    return "\n".join(lines) + "\n"


def declared_line(rec: dict[str, Any], p: dict[str, Any]) -> str:
    """A parameter's declared verdict (``expect=``), said against the verdict it is about: a
    declaration made against the latest tag, shown under a row of an older schema version
    whose tag differs (``prove --opset 11``: Clip-11's unknown tag, a proposal), says so
    rather than "declared ... disagree" beside a ``proposed``."""
    exp = p["expected"]
    head = f"  declared by the case for {p['io']} {p['index']}: {exp['verdict']}"
    if exp["verdict"] == p["verdict"]:
        return f"{head} - {exp['reason']}"
    if p.get("tag_latest") and p.get("verdict_latest") == exp["verdict"]:
        return (f"{head} against the latest tag ({rec['op']}-{rec['latest_schema_version']}: "
                f"{p['tag_latest']}); against {rec['op']}-{rec['schema_version']}'s "
                f"tag ({p['tag']}) the verdict is {p['verdict']} - {exp['reason']}")
    return f"{head}, but the verdict is {p['verdict']} - {exp['reason']}"


def status_line(rec: dict[str, Any]) -> str:
    """One line a reader sees first: the case's status and its verdicts counted."""
    counts: dict[str, int] = {}
    for p in rec["parameters"]:
        counts[p["verdict"]] = counts.get(p["verdict"], 0) + 1
    tally = ", ".join(f"{n} {v}" for v, n in counts.items())
    return f"status: {rec['status']}" + (f" ({tally})" if tally else "")


def proof_markdown(rec: dict[str, Any], script: str | None = None,
                   model_label: str = "model") -> str:
    """A PR-ready comment: the per-parameter table, numeric check, versions, sha256."""
    lines = [f"### Differentiability proof: `{rec['op']}` ({rec['case']})", "",
             f"**{status_line(rec).replace('status: ', 'Status: ', 1)}**", ""]
    if rec.get("invalid"):
        lines += [f"**Invalid case:** {rec['invalid']}", ""]
    if script:
        lines += ["<details><summary>proof script</summary>", "", "```python",
                  script.rstrip(), "```", "", "</details>", ""]
    lines += ["| parameter | PyTorch tensor | evidence | tag | verdict | reason |",
              "|---|---|---|---|---|---|"]
    for p in rec["parameters"]:
        verdict = f"**{p['verdict']}**" if p["verdict"] == "disagree" else p["verdict"]
        lines.append(md_row(f"{p['io']} {p['index']} `{p['name']}`", f"`{p['source']}`",
                            p["evidence"], p["tag"], verdict, p["reason"]))
    source = autograd_source_line(rec)
    lines += [""] + [x for n in rec.get("notes", ()) for x in (f"Note: {n}", "")] + [
        numeric_line(rec), ""] + ([source, ""] if source else []) + [
        body_summary(rec), ""] + ([f"Route: relabelled, {rec['route_note']}", ""]
                                  if rec.get("route_note") else []) + [
              f"Exported with the {rec['exporter']} exporter at opset {rec['opset']} "
              f"(schema {rec['op']}-{rec['schema_version']}"
              + "".join(f"; {n}" for n in [route_note(rec['exporter'], rec['opset'])] if n)
              + f"); {model_label} sha256 "
              f"`{rec['model']['sha256']}`; " + ", ".join(
                  f"{k} {v}" for k, v in rec["versions"].items())
              + f"; rendered by torch-prover {__version__}", ""]
    return "\n".join(lines)


def route_note(exporter: str, opset: int) -> str:
    """How a model above the exporter's opset was made (``engine/next_opset.py``), in words
    for a reviewer; empty for the direct route."""
    # imported here: engine.next_opset imports torch, and the CLI imports this module
    # before a command runs (a Ctrl-C during torch's import must reach cli.run)
    from ..engine.next_opset import EXPORTER_MAX_OPSET, PRIVATE_DOMAIN, export_route
    if export_route(exporter, opset) is not ExportRoute.RAISED:
        return ""
    return (f"exported at opset {EXPORTER_MAX_OPSET} with the node in {PRIVATE_DOMAIN}, "
            f"then moved into ai.onnx at opset {opset}")


def tags_text(tags: SchemaTags, latest: SchemaTags | None = None,
              width: int | None = DEFAULT_WIDTH) -> str:
    lines = [f"{tags.op} (schema version {tags.since_version}, from {tags.source})"]
    rows = []
    for f in tags.inputs + tags.outputs:
        note = "non-differentiable by type" if f.non_differentiable_by_type else ""
        rows.append([f"{f.io} {f.position}", f.name, f.option, f.tag, note])
    lines += _table(rows, ["param", "name", "option", "tag", "note"], width)
    if latest is not None and latest.since_version != tags.since_version:
        lines.append(f"(latest schema version: {latest.since_version})")
    return "\n".join(lines) + "\n"


def to_json(obj: Any) -> str:
    return json.dumps(obj, indent=2) + "\n"


# ----------------------------------------------------------------------------- batch reports
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
    ``<case>@<opset>`` (``batch/versions.py``) is its case at that opset."""
    name, at, opset = case.partition("@")
    return (f"torch-prover prove {op} --case {name}" + (f" --opset {opset}" if at else "")
            + (f" --tags-from {tags_path}" if tags_path else ""))


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
    lines = _table([[o["op"], o["status"], o["reason"]] for o in report["ops"]
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
