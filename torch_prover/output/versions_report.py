"""The per-version table of ``verify-all --versions``, rendered compactly (pure functions).

One row per parameter, one column per schema version; a cell equal to the one on its
left is ``=``, so only changes are spelled out. A cell reads: ``D``/``N`` agreed (the
tag, confirmed), ``N!D`` a disagreement (tag N, evidence D), ``?>D`` a proposal for an
unknown tag, ``?`` inconclusive, ``-`` the version has no such parameter; a trailing
``~`` marks a cell decided by equivalence with the version in force at opset 7, ``t`` one
decided by type alone. Text and Markdown here; the HTML page's table, with colour and a
legend, is ``html_versions.py``'s, from the same ``grid``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_LETTER = {"differentiable": "D", "non-differentiable": "N", "unknown": "?"}

LEGEND = ("cells: D/N = tag confirmed; N!D = tag N, evidence D (disagree); ?>D = unknown "
          "tag, evidence proposes D; ? = inconclusive (?f: the variant exercising it failed; "
          "?v: versions disagree); - = no such parameter in that "
          "version; = = same as the version on the left; ~ = by equivalence with the "
          "version in force at opset 7; t = by type")
_MARK = {"variant failed": "f", "versions disagree": "v"}
"""The rules of an inconclusive cell the table spells out (batch/version_table.py)."""


def cell_text(c: dict[str, Any] | None) -> str:
    if c is None:
        return "-"
    tag, sup = _LETTER.get(c["tag"], "?"), _LETTER.get(c.get("supports") or "", "")
    v = c["verdict"]
    text = {"agree": tag, "disagree": f"{tag}!{sup}", "proposed": f"?>{sup}"}.get(
        v, "?" + _MARK.get(c.get("rule", ""), ""))
    rule = c.get("rule", "")
    return text + ("~" if c.get("basis") else "t" if rule == "by type" else "")


@dataclass(frozen=True)
class Cell:
    """One cell of the table: its code (``cell_text``), what is shown (``=`` when it repeats
    the cell on its left), and the record's cell (None: no such parameter, or undecided)."""

    text: str
    shown: str
    cell: dict[str, Any] | None
    undecided: bool = False


def grid(op_entry: dict[str, Any]) -> tuple[list[int], list[tuple[str, list[Cell]]]]:
    """(versions, [(parameter label, cells)]): one row per parameter, one cell a version."""
    versions = [e["version"] for e in op_entry["versions"]]
    labels: list[tuple[str, str]] = []
    for e in op_entry["versions"]:
        for c in e["cells"]:
            key = (c["io"], c["name"])
            if key not in labels:
                labels.append(key)
        for u in e.get("undecided", ()):
            io, _, rest = u.partition(" ")
            key = (io, rest.split("(", 1)[-1].rstrip(")"))
            if key not in labels:
                labels.append(key)
    rows = []
    for io, name in labels:
        cells, last = [], None
        for e in op_entry["versions"]:
            c = next((c for c in e["cells"] if (c["io"], c["name"]) == (io, name)), None)
            undecided = c is None and any(u.startswith(f"{io} ") and u.endswith(f"({name})")
                                          for u in e.get("undecided", ()))
            text = "?" if undecided else cell_text(c)
            cells.append(Cell(text, "=" if text == last and text != "-" else text, c, undecided))
            last = text
        rows.append((f"{'in' if io == 'input' else 'out'} {name}", cells))
    return versions, rows


def _rows(op_entry: dict[str, Any]) -> tuple[list[int], list[tuple[str, list[str]]]]:
    """(versions, [(parameter label, cells)]) with repeated cells shown as ``=``."""
    versions, rows = grid(op_entry)
    return versions, [(label, [c.shown for c in cells]) for label, cells in rows]


def version_notes(op_entry: dict[str, Any]) -> list[str]:
    """One line per version not proved by a case (how it was decided, or why it was not),
    and per cell the versions disagree on."""
    out = []
    for e in op_entry["versions"]:
        if e.get("reason"):
            out.append(f"  {op_entry['op']}-{e['version']} ({e['decided_by']}): {e['reason']}")
        out.extend(f"  {op_entry['op']}-{e['version']} {c['io']} {c['name']}: {c['reason']}"
                   for c in e["cells"] if c.get("rule") == "versions disagree")
    return out


def versions_text(section: dict[str, Any], width: int = 100, notable_only: bool = True) -> str:
    """Each op's table (by default only ops whose versions are not all confirmed: a
    disagreement, a proposal or an undecided parameter), then the counts by band."""
    lines = [f"schema versions ({section['selection']}): " + LEGEND, ""]
    shown = 0
    for o in section["ops"]:
        if notable_only and not notable(o):
            continue
        shown += 1
        versions, rows = _rows(o)
        head = ["param"] + [str(v) for v in versions]
        widths = [max(len(head[0]), *(len(r[0]) for r in rows))] + [
            max(len(h), *(len(r[1][i]) for r in rows)) for i, h in enumerate(head[1:])]
        lines.append(o["op"])
        lines.append("  " + "  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
        for label, cells in rows:
            lines.append("  " + "  ".join(t.ljust(w) for t, w in
                                          zip([label] + cells, widths)).rstrip())
        lines.extend(version_notes(o))
    hidden = len(section["ops"]) - shown
    if hidden:
        lines.append(f"{hidden} ops whose every version confirms its tags are not shown "
                     f"(--format json has them)")
    lines.append("")
    lines.extend(summary_lines(section))
    return "\n".join(lines) + "\n"


def notable(o: dict[str, Any]) -> bool:
    return any(c["verdict"] != "agree" for e in o["versions"] for c in e["cells"]) or any(
        e.get("undecided") or e["decided_by"] in ("failed", "explained", "no tags")
        for e in o["versions"])


def summary_lines(section: dict[str, Any]) -> list[str]:
    """The counts by band, with their units: schema versions, and parameters."""
    out = []
    for band, b in section["summary"]["by_band"].items():
        how = ", ".join(f"{b[k]} {k}" for k in ("proved", "failed", "equivalence", "by type",
                                                "explained", "no tags") if b[k])
        params = ", ".join(f"{n} {v}" for v, n in b["parameters"].items() if n)
        und = b["undecided_parameters"]
        out.append(f"{band}: {b['versions']} schema versions ({how}); parameters: "
                   f"{params or 'none'}" + (f", {und} undecided" if und else ""))
    out.append(f"failing version cells (undeclared, unwaived): {section['summary']['failing']}")
    failed = section["summary"].get("failed_variants") or []
    undeclared = [f for f in failed if not f["declared"]]
    out.append(f"failed variants: {len(failed)} ({len(undeclared)} not declared by their "
               f"cases, which fails the run)")
    out.extend(failed_lines(failed))
    stale = section["summary"].get("stale_declarations") or []
    if stale:
        out.append(f"declared failures that did not fail (remove the declaration): "
                   f"{'; '.join(stale)}")
    return out


def failed_lines(failed: list[dict[str, Any]]) -> list[str]:
    """One line per failed variant: the case, the version it stood for, why (its kind and
    reason), and the case's declaration when it has one."""
    return [f"  {f['case']} ({f['op']}-{f['version']}): {f['kind']}: {f['reason']}"
            + (f" [declared: {f['declared']}]" if f["declared"] else " [not declared]")
            for f in failed]


def versions_markdown(section: dict[str, Any]) -> str:
    """A table per notable op, in a collapsed block: fits a PR comment."""
    parts = [f"### Schema versions ({section['selection']})", "",
             *[f"- {line}" for line in summary_lines(section)], "", f"_{LEGEND}_", ""]
    for o in section["ops"]:
        if not notable(o):
            continue
        versions, rows = _rows(o)
        parts.append(f"<details><summary>{o['op']}</summary>")
        parts.append("")
        parts.append("| parameter | " + " | ".join(str(v) for v in versions) + " |")
        parts.append("|---|" + "---|" * len(versions))
        for label, cells in rows:
            parts.append(f"| {label} | " + " | ".join(c.replace("|", "\\|") for c in cells)
                         + " |")
        notes = version_notes(o)
        if notes:
            parts.append("")
            parts.extend(f"- {n.strip()}" for n in notes)
        parts.append("")
        parts.append("</details>")
        parts.append("")
    return "\n".join(parts) + "\n"
