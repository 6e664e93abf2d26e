"""Renderings of proofs: text, JSON, Markdown. Pure functions of the records, no I/O."""
from __future__ import annotations

import json
from typing import Any, Iterable

from .tags import SchemaTags

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
    vjp = ", ".join(f"{k} {v:.1e}" if isinstance(v, float) else f"{k} {v}"
                    for k, v in n["vjp_rel_err"].items()) or "none to check"
    via = f" (onnxruntime skipped: {n['why']})" if n.get("why") else ""
    return (f"numeric check ({n['runtime']}{via}): forward max abs err "
            f"{n['forward_max_abs_err']:.1e} ({'ok' if n['forward_ok'] else 'MISMATCH'}, "
            f"tol {n['fwd_tol']:g}); VJP rel err: {vjp} (tol {n['vjp_tol']:g}, step {n['step']:g})")


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
