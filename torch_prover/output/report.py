"""Renderings of one proof: text, JSON, Markdown. Pure functions of the records, no I/O.

Text is wrapped to a width the caller passes (the CLI passes the terminal's; the layout is
``text_table``'s); Markdown table cells escape ``|`` as ``\\|`` so a reason reads the same in
every rendering. A batch of proofs is ``batch_report``'s.
"""
from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from .body_text import body_summary
from .text_table import DEFAULT_WIDTH, table, wrap_line
from ..version import __version__
from ..vocab import ExportRoute

if TYPE_CHECKING:   # a name for annotations only: `table` runs without onnx (docs/table.md)
    from ..tags.schema import SchemaTags


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
    # a float32 copy ran (engine/versions/float32_copy.py): ``why`` says why the float64 runs did not
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
        lines += table(rows, ["param", "name", "pytorch tensor", "evidence", "tag", "verdict",
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
    """How a model above the exporter's opset was made (``engine/versions/next_opset.py``), in words
    for a reviewer; empty for the direct route."""
    # imported here: engine.versions.next_opset imports torch, and the CLI imports this module
    # before a command runs (a Ctrl-C during torch's import must reach cli.run)
    from ..engine.versions.next_opset import EXPORTER_MAX_OPSET, PRIVATE_DOMAIN, export_route
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
    lines += table(rows, ["param", "name", "option", "tag", "note"], width)
    if latest is not None and latest.since_version != tags.since_version:
        lines.append(f"(latest schema version: {latest.since_version})")
    return "\n".join(lines) + "\n"


def to_json(obj: Any) -> str:
    return json.dumps(obj, indent=2) + "\n"
