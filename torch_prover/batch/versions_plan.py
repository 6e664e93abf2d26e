"""Static views over every schema version, no proof run: ``tags OP --all-versions`` (each
version's tags, one column per version) and ``coverage --versions`` (how each version
would be decided: which case variants prove it, by which exporter and opset, or why none
can)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import EXIT_OK
from ..output.coverage import CASE_FREE
from ..output.documents import head
from ..vocab import DocKind
from .versions import (Band, Gap, Selection, covers, route, schema_versions,
                              version_at)
from ..tags.schema import schema_tags

_LETTER = {"differentiable": "D", "non-differentiable": "N", "unknown": "?"}


def tags_all_versions(op: str) -> dict[str, Any]:
    """Every schema version of ``op`` with its parameters' tags (JSON shape)."""
    out = []
    for v in schema_versions(op):
        t = schema_tags(op, v.first)
        out.append({"version": v.version, "in_force": [v.first, v.last], "band": v.band.value,
                    "parameters": [{"io": f.io, "index": f.position, "name": f.name,
                                    "tag": f.tag} for f in t.inputs + t.outputs]})
    return {**head(DocKind.TAGS_VERSIONS, EXIT_OK, f"the tags of every schema version of {op}"),
            "op": op, "versions": out}


def tags_all_versions_text(doc: dict[str, Any]) -> str:
    """One row per parameter, one column per version (D / N / ? / - absent; = unchanged)."""
    versions = doc["versions"]
    labels: list[tuple[str, str]] = []
    for e in versions:
        for p in e["parameters"]:
            if (p["io"], p["name"]) not in labels:
                labels.append((p["io"], p["name"]))
    head = ["param"] + [str(e["version"]) for e in versions]
    rows = []
    for io, name in labels:
        cells, last = [], None
        for e in versions:
            p = next((p for p in e["parameters"] if (p["io"], p["name"]) == (io, name)), None)
            text = _LETTER[p["tag"]] if p else "-"
            cells.append("=" if text == last and text != "-" else text)
            last = text
        rows.append([f"{'in' if io == 'input' else 'out'} {name}"] + cells)
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    lines = [f"{doc['op']}: tags of every schema version (D differentiable, N "
             f"non-differentiable, ? unknown, - no such parameter, = unchanged)"]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
              for r in [head] + rows]
    return "\n".join(lines) + "\n"


def coverage_versions(entries: list[dict[str, Any]], selection: Selection,
                      torchscript: bool = True) -> list[dict]:
    """Per op, per selected schema version: ``cases`` (the case and its exporter/opset that
    would prove it), ``equivalence`` (below opset 7), ``by type`` or ``none``, with why
    (``coverage --versions`` then judges the ``none`` ones case-free).
    ``torchscript=False``: the plan of ``verify-all --no-torchscript``."""
    from ..cases import cases_for
    from .verify import exporter_mode
    out = []
    for e in entries:
        op, rows = e["op"], []
        scripted, mine, left_out = exporter_mode(torchscript, cases_for(op))
        for v in schema_versions(op):
            if not selection.wants(v):
                continue
            row: dict[str, Any] = {"version": v.version, "in_force": [v.first, v.last],
                                   "band": v.band.value}
            provers = []
            gaps = [f"{n}: needs the TorchScript exporter" for n in left_out]
            for c in mine:
                if covers(c, v):
                    provers.append({"case": c.name, "exporter": c.exporter,
                                    "opset": c.export_opset})
                    continue
                r = route(c, v, scripted)
                if isinstance(r, Gap):
                    gaps.append(f"{c.name}: {r.value}")
                else:
                    provers.append({"case": f"{c.name}@{r.opset}", "exporter": r.exporter,
                                    "opset": r.opset})
            if provers:
                row.update({"decided": "cases", "cases": provers})
            elif v.band is Band.BELOW_RUNTIME and cases_for(op):
                w = version_at(op, 7)
                row.update({"decided": "equivalence",
                            "reason": f"parameters the same as {w.label()}'s take its "
                                      f"verdicts" if w else "no version in force at 7"})
            elif e.get("by_type"):
                row.update({"decided": "by type", "reason": e.get("reason", "")})
            else:
                row.update({"decided": "none",
                            "reason": "; ".join(gaps) or e.get("reason", "no case")})
            rows.append(row)
        if rows:
            out.append({"op": op, "versions": rows})
    return out


def coverage_versions_text(ops: list[dict[str, Any]]) -> str:
    """One line per op: each version and how it is decided."""
    def cell(r: dict[str, Any]) -> str:
        if r["decided"] == "cases":
            routes = sorted({f"{c['exporter'][:2]}@{c['opset']}" for c in r["cases"]})
            return f"{r['version']}:{'/'.join(routes)}"
        return f"{r['version']}:{_SHORT.get(r['decided'], '-')}"
    lines = ["schema versions: VERSION:EXPORTER@OPSET (dy dynamo, to torchscript), ~7 by "
             "equivalence with the version in force at opset 7, type by type, cf case-free "
             "(ONNX's node tests), - none"]
    counts: dict[str, int] = {}
    why = []
    for o in ops:
        lines.append(f"{o['op']}: " + "  ".join(cell(r) for r in o["versions"]))
        for r in o["versions"]:
            counts[r["decided"]] = counts.get(r["decided"], 0) + 1
            if r["decided"] in (CASE_FREE, "none"):
                why.append(f"  {o['op']}-{r['version']}: {r['decided']}: {r['reason']}")
    lines.append("schema versions: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return "\n".join(lines + why) + "\n"


_SHORT = {"equivalence": "~7", "by type": "type", CASE_FREE: "cf"}


def coverage_versions_output(entries: list[dict[str, Any]], versions: str, fmt: str,
                             torchscript: bool | None = None, cache_dir: Path | None = None
                             ) -> tuple[str, tuple[str, ...]]:
    """``coverage --versions SEL``: the JSON document (coverage's, with ``versions``) or text,
    each version no case route decides judged case-free (``batch/coverage_case_free.py``;
    ONNX's node tests from ``cache_dir``'s collection); and the warnings."""
    from ..output.coverage import summary
    from ..output.documents import coverage_doc
    from ..output.report import to_json
    from .coverage_case_free import rows_with_case_free
    from .verify import selection_of
    table, warnings = rows_with_case_free(
        coverage_versions(entries, selection_of(versions), torchscript), cache_dir)
    if fmt == "json":
        return to_json({**coverage_doc(summary(entries), entries, "every ai.onnx schema "
                                       "version and how it is decided"), "versions": table}), \
            warnings
    return coverage_versions_text(table), warnings
