"""The per-version table of ``verify-all --versions`` as a section of the HTML page (pure).

Part of the page ``html_report.render_html`` builds, reached from its navigation: the
counts by band, a legend of the cell codes (``versions_report.LEGEND``'s, each shown as a
coloured cell), a jump list of the ops shown, then one table per op whose versions hold
something to look at (``versions_report.notable``), from the same ``grid`` the text and
Markdown tables use. A cell is coloured by its verdict; a cell equal to the one on its
left reads ``=`` but keeps its colour, and says in full what it is when hovered.
"""
from __future__ import annotations

import html
from typing import Any

from .run_totals import version_totals
from .versions_report import Cell, grid, notable, summary_lines, version_notes

# (code, class, meaning): the legend, in the order a reader meets the codes
CODES = (
    ("D", "agree", "tag differentiable, confirmed by the evidence"),
    ("N", "agree", "tag non-differentiable, confirmed"),
    ("N!D", "disagree", "disagreement: tag N, the evidence says D (D!N: the reverse)"),
    ("?>D", "proposed", "unknown tag: the evidence proposes D (?>N: proposes N)"),
    ("?", "inconclusive", "inconclusive, or no case decides it"),
    ("?f", "inconclusive", "inconclusive: the variant that exercised it failed (see the "
                           "failed variants)"),
    ("?v", "inconclusive", "inconclusive: the versions disagree on a parameter that did not "
                           "change"),
    ("-", "none", "the version has no such parameter"),
    ("=", "agree", "same as the version on its left (keeps that cell's colour)"),
    ("?>D~", "proposed vc-equiv", "~: decided by equivalence with the version in force at "
                                  "opset 7"),
    ("Nt", "agree vc-type", "t: decided by the schema's types alone"),
)


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def cell_class(cell: Cell) -> str:
    """The colour class of a cell: its verdict, ``none`` for no parameter, ``inconclusive``
    for an undecided one; a mark for equivalence or type as a second class."""
    if cell.cell is None:
        return "vc vc-inconclusive" if cell.undecided else "vc vc-none"
    verdict = str(cell.cell.get("verdict"))
    kind = verdict if verdict in ("agree", "disagree", "proposed") else "inconclusive"
    mark = (" vc-equiv" if cell.cell.get("basis") else
            " vc-type" if cell.cell.get("rule") == "by type" else "")
    return f"vc vc-{kind}{mark}"


def _title(op: str, version: int, label: str, cell: Cell) -> str:
    """What a cell is, in words (its tooltip)."""
    c = cell.cell
    if c is None:
        return (f"{op}-{version} {label}: no case decides it" if cell.undecided
                else f"{op}-{version} has no parameter {label.split(' ', 1)[-1]}")
    bits = [f"{op}-{version} {label}: tag {c.get('tag')}", f"verdict {c.get('verdict')}"]
    if c.get("supports"):
        bits.append(f"evidence supports {c['supports']}")
    if c.get("rule"):
        bits.append(f"rule: {c['rule']}")
    if c.get("convention"):
        bits.append(f"convention: {c['convention']}")
    if c.get("cases"):
        bits.append("cases: " + ", ".join(map(str, c["cases"])))
    if c.get("not_deciding"):
        bits.append("not deciding: " + ", ".join(map(str, c["not_deciding"])))
    return "; ".join(bits)


def legend() -> str:
    return ('<div class="vlegend">' + "".join(
        f'<span class="lg"><span class="vc vc-{cls}">{_e(code)}</span>{_e(meaning)}</span>'
        for code, cls, meaning in CODES) + "</div>")


def _op_table(o: dict[str, Any]) -> str:
    op = str(o["op"])
    versions, rows = grid(o)
    head = "".join(f'<th scope="col">{_e(v)}</th>' for v in versions)
    body = []
    for label, cells in rows:
        tds = "".join(f'<td class="{cell_class(c)}" title="{_e(_title(op, v, label, c))}">'
                      f"{_e(c.shown)}</td>" for v, c in zip(versions, cells))
        body.append(f'<tr><th scope="row" class="mono">{_e(label)}</th>{tds}</tr>')
    notes = version_notes(o)
    note_html = ('<ul class="vnotes">' + "".join(f"<li>{_e(n.strip())}</li>" for n in notes)
                 + "</ul>") if notes else ""
    return (f'<article class="vop" id="v-{_e(op)}"><h3><a href="#op-{_e(op)}">{_e(op)}</a></h3>'
            f'<table class="vtable"><caption class="sr-only">{_e(op)}: each parameter\'s '
            f'verdict at each schema version</caption><thead><tr><th scope="col">parameter'
            f'</th>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>{note_html}</article>')


def versions_section(section: dict[str, Any]) -> str:
    """The ``<section id="versions">`` of the page."""
    shown = [o for o in section["ops"] if notable(o)]
    hidden = len(section["ops"]) - len(shown)
    jump = "".join(f'<a href="#v-{_e(o["op"])}">{_e(o["op"])}</a>' for o in shown)
    rest = (f'<p class="muted small">{hidden} ops whose every version confirms its tags are '
            f"not shown (--format json has them).</p>" if hidden else "")
    return (f'<section id="versions"><h2>Schema versions <span class="count">'
            f'{_e(section["selection"])}: {len(shown)} ops with something to look at</span></h2>'
            '<ul class="vsummary">' + "".join(f"<li>{_e(x)}</li>" for x in summary_lines(section))
            + f'</ul>{legend()}<nav class="vjump" aria-label="ops in the schema versions table">'
            f"{jump}</nav>{rest}"
            f'<div class="vops">{"".join(_op_table(o) for o in shown)}</div></section>')


def versions_card(section: dict[str, Any]) -> tuple[str, str, str]:
    """The header's card for the versions table: how many schema versions, their cells by
    verdict (the units of ``summary_lines``), and the link to the table."""
    versions, cells = version_totals(section)
    chips = "".join(f'<span class="chip v-{v}">{cells[v]} {v}</span>'
                    for v in ("disagree", "inconclusive", "proposed", "agree") if cells[v])
    return ("schema versions", _e(versions),
            f'<div class="chips">{chips}</div><div class="muted small"><a class="cardlink" '
            f'href="#versions">parameters by version: the table</a></div>')
