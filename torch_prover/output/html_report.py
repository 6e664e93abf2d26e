"""One self-contained HTML page for a batch report (``verify-all --format html``).

Why a separate module: the page is the artefact a maintainer opens from CI, so it must
work offline and from a file (inline CSS, JS and SVG, no network asset), show what needs
a decision first (disagreements, then broken cases), and let the reader find any op
quickly (text + status filters). A pure function of the batch report dict (docs/design.md
§3.2), like ``batch_report``'s renderings; every string from the report is data, escaped.

Each covered op gets a small diagram (``html_diagram``): the op as a box, inputs on the
left, outputs on the right; an arrow's style says what the evidence was (solid blue: a gradient flows;
amber: gradient identically zero; grey dashes: integer / no-grad / detached; dots:
constant or absent) and the dot by its label is the verdict's colour.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Iterable

from .batch_report import NOT_RUN, OP_STATUSES, disagreement_tally, tally_words
from .body_text import body_summary
from .html_diagram import EVIDENCE_STYLE, VERDICTS, diagram_svg, merge
from .html_diagram import e as _e, slug as _slug
from .html_versions import versions_card, versions_section
from .report import numeric_line
from .units import UNITS, count
from .run_totals import cache_words, stated, totals


def _statuses(present: Iterable[Any]) -> list[str]:
    """OP_STATUSES, then any other status the report holds (tolerated, listed last)."""
    return list(OP_STATUSES) + sorted({str(s) for s in present} - set(OP_STATUSES))


# ----------------------------------------------------------------------------- pieces
def _badge(status: str, text: str | None = None) -> str:
    return f'<span class="badge s-{_slug(status)}">{_e(text or status)}</span>'


def _verdict_chip(v: str, n: int | None = None) -> str:
    label = v if n is None else f"{n} {v}"
    return f'<span class="chip v-{_slug(v)}">{_e(label)}</span>'


def _param_table(rec: dict) -> str:
    rows = []
    for p in rec.get("parameters") or ():
        exp = p.get("expected")
        note = (f'<div class="declared">declared by the case: {_e(exp.get("verdict"))} — '
                f'{_e(exp.get("reason"))}</div>' if isinstance(exp, dict) else "")
        if p.get("convention"):
            note += f'<div class="declared">convention: {_e(p["convention"])}</div>'
        latest = (f' <span class="muted">(latest: {_e(p["tag_latest"])})</span>'
                  if p.get("tag_latest") else "")
        rows.append(
            f'<tr class="pv-{_slug(p.get("verdict"))}"><td class="mono">{_e(p.get("io"))} '
            f'{_e(p.get("index"))}</td><td class="mono">{_e(p.get("name"))}</td>'
            f'<td class="mono">{_e(p.get("source"))}</td><td>{_ev(p.get("evidence"))}</td>'
            f'<td>{_e(p.get("tag"))}{latest}</td><td>{_verdict_chip(str(p.get("verdict")))}</td>'
            f'<td>{_e(p.get("reason"))}{note}</td></tr>')
    if not rows:
        return ""
    return (f'<table class="params"><caption class="sr-only">{_e(rec.get("op"))} '
            f'{_e(rec.get("case"))}: evidence and verdict per parameter</caption><thead><tr>'
            + _heads("param", "name", "PyTorch tensor", "evidence", "schema tag", "verdict",
                     "reason") + f'</tr></thead><tbody>{"".join(rows)}</tbody></table>')


def _heads(*names: str) -> str:
    """A table's column headers, each a ``th scope="col"`` (a screen reader names the column
    of every cell it reads)."""
    return "".join(f'<th scope="col">{_e(n)}</th>' for n in names)


def _ev(ev: Any) -> str:
    colour = EVIDENCE_STYLE.get(str(ev), EVIDENCE_STYLE["untracked"])[0]
    return f'<span class="ev"><i style="background:{colour}"></i>{_e(ev)}</span>'


def _case_meta(rec: dict) -> str:
    bits = [f"{rec.get('case_kind', '')} case".strip(), f"{rec.get('exporter')} exporter"
            if rec.get("exporter") else "", f"opset {rec.get('opset')}" if rec.get("opset") else "",
            f"schema {rec.get('op')}-{rec.get('schema_version')}" if rec.get("schema_version") else "",
            f"tags from {rec.get('tags_from')}" if rec.get("tags_from") else ""]
    return " · ".join(_e(b) for b in bits if b)


def _case_block(rec: dict) -> str:
    status = rec.get("status") or "error"
    head = (f'<div class="casehead">{_badge(_case_status(status), status)} '
            f'<b class="mono">{_e(rec.get("case"))}</b> <span class="muted">{_case_meta(rec)}'
            f'</span></div>')
    if status == "error":
        return f'<div class="case">{head}<div class="errline">{_e(rec.get("error"))}</div></div>'
    body = [head]
    if rec.get("invalid"):
        body.append(f'<div class="errline">invalid: {_e(rec["invalid"])}</div>')
    if rec.get("parameters"):
        body.append(f'<div class="caseflow">{diagram_svg(str(rec.get("op")), rec["parameters"])}</div>')
    body.append(_param_table(rec))
    if "numeric" in rec and "versions" in rec:
        try:
            body.append(f'<div class="numeric">{_e(numeric_line(rec))}</div>')
        except (KeyError, TypeError, ValueError):
            pass
    if "function_body" in rec:
        body.append(f'<div class="numeric">{_e(body_summary(rec))}</div>')
    sha = (rec.get("model") or {}).get("sha256")
    if sha:
        body.append(f'<div class="muted small mono">model sha256 {_e(sha)}</div>')
    return f'<div class="case">{"".join(body)}</div>'


def _case_status(status: str) -> str:
    return {"disagree": "disagrees"}.get(status, status)


# ----------------------------------------------------------------------------- sections
def _header(report: dict, cases: list[dict], ops: list[dict]) -> str:
    s = report.get("summary") or {}
    params = s.get("parameters") or {}
    total = s.get("ops_total", len(ops))
    covered = s.get("ops_covered", len({c.get("op") for c in cases}))
    pct = 100.0 * covered / total if total else 0.0
    first = next((c for c in cases if c.get("versions")), {})
    versions = " · ".join(f"{_e(k)} {_e(v)}" for k, v in (first.get("versions") or {}).items())
    sources = sorted({str(c.get("tags_from")) for c in cases if c.get("tags_from")})
    opsets = sorted({c.get("opset") for c in cases if c.get("opset") is not None})
    meta = [versions, "tags from " + ", ".join(_e(x) for x in sources) if sources else "",
            "opset " + ", ".join(_e(o) for o in opsets) if opsets else ""]
    n_par = sum(int(params.get(v, 0) or 0) for v in VERDICTS) or 1
    pbar = "".join(f'<span class="seg v-{_slug(v)}" style="width:{100.0 * int(params.get(v, 0) or 0) / n_par:.2f}%"'
                   f' title="{v}: {int(params.get(v, 0) or 0)}"></span>' for v in reversed(VERDICTS))
    by_status = Counter(str(o.get("status")) for o in ops)
    n_ops = len(ops) or 1
    statuses = _statuses(by_status)
    sbar = "".join(f'<button class="seg s-{_slug(st)}" style="width:{100.0 * by_status[st] / n_ops:.2f}%" '
                   f'data-filter="{_e(st)}" title="{_e(st)}: {by_status[st]} (click to filter)"></button>'
                   for st in statuses if by_status[st])
    # the legend explains every status a report can hold, the absent ones dimmed
    slegend = "".join(f'<button class="legend-item{"" if by_status[st] else " zero"}" '
                      f'data-filter="{_e(st)}">{_badge(st)} <b>{by_status[st]}</b></button>'
                      for st in statuses)
    wall = s.get("wall_time_s")
    t = totals(report)
    nav = "".join(f'<a href="#{a}">{title}</a>' for a, title in _sections(report))
    cards = [
        ("ops covered", f"{_e(covered)}<small>/{_e(total)}</small>",
         f'<div class="bar"><span class="seg s-proved" style="width:{pct:.1f}%"></span></div>'
         f'<div class="muted small">{pct:.0f}% of ai.onnx ops have a case</div>'),
        ("cases", _e(s.get("cases", len(cases))) + (
            f"<small> + {t.variants} variants</small>" if t.variants else ""),
         f'<div class="muted small">{_e(s.get("failed_cases", 0))} failed · '
         f'{_e(s.get("invalid_cases", 0))} invalid' + (" · variants: the cases at other "
                                                       "schema versions" if t.variants else "")
         + "</div>"),
        ("case results", _e(sum(int(params.get(v, 0) or 0) for v in VERDICTS)),
         f'<div class="bar">{pbar}</div><div class="chips">' + "".join(
             _verdict_chip(v, int(params.get(v, 0) or 0)) for v in VERDICTS) + "</div>"),
        ("wall time", f"{float(wall):.0f}<small> s</small>" if stated(report, "wall_time_s")
         else "–", f'<div class="muted small cache">{_e(cache_words(report))}</div>'),
    ]
    if report.get("versions"):
        cards.insert(3, versions_card(report["versions"]))
    card_html = "".join(f'<div class="card"><div class="label">{k}</div><div class="big">{v}</div>'
                        f"{extra}</div>" for k, v, extra in cards)
    return (f'<header><h1>torch_prover <span>differentiability proofs</span></h1>'
            f'<div class="meta">{" · ".join(m for m in meta if m)}</div>'
            f'<nav aria-label="report sections">{nav}</nav>'
            f'<div class="cards">{card_html}</div>'
            f'<div class="statusbar"><div class="bar big">{sbar}</div>'
            f'<div class="legend">{slegend}</div></div></header>')


def _sections(report: dict) -> list[tuple[str, str]]:
    """(anchor, title) of the page's sections, in page order: the navigation's links."""
    return ([("disagreements", "disagreements"), ("broken", "failed &amp; invalid cases")]
            + [("versions", "schema versions")] * bool(report.get("versions"))
            + [("operators", "all operators")])


def _declared(p: dict) -> bool:
    exp = p.get("expected")
    return isinstance(exp, dict) and exp.get("verdict") == "disagree"


def _disagreements(cases: list[dict]) -> str:
    """The disagreements by the math, then those a convention decides, each counted in units."""
    tally = disagreement_tally([c for c in cases if c.get("case") != "by type"])
    math = _disagreement_blocks(cases, convention=False)
    conv = _disagreement_blocks(cases, convention=True)
    if not math and not conv:
        return ('<section id="disagreements"><h2>Disagreements</h2><p class="ok">No parameter disagrees with its '
                'schema tag.</p></section>')
    new = sum(not _declared(p) for rec in cases for p in rec.get("parameters") or ()
              if p.get("verdict") == "disagree")
    out = (f'<section id="disagreements"><h2>Disagreements <span class="count">'
           f'{_e(tally_words(tally["math"]))}; {_e(count(new, "case result"))} not declared by '
           f'their case</span></h2><p class="muted small">{_e(UNITS)}</p>{"".join(math)}')
    if conv:
        out += (f'<h3 id="convention-disagreements">Decided by a convention <span class="count">'
                f'{_e(tally_words(tally["convention"]))}</span></h3><p class="muted small">The '
                f'math alone does not decide these: each parameter names the convention that '
                f'does.</p>{"".join(conv)}')
    return out + "</section>"


def _disagreement_blocks(cases: list[dict], convention: bool) -> list[str]:
    blocks = []
    bad_cases = [(rec, [p for p in rec.get("parameters") or () if p.get("verdict") == "disagree"
                        and bool(p.get("convention")) is convention])
                 for rec in cases]
    bad_cases = [(rec, bad) for rec, bad in bad_cases if bad]
    # a disagreement no case declares needs a decision: those first
    bad_cases.sort(key=lambda rb: all(_declared(p) for p in rb[1]))
    for rec, bad in bad_cases:
        items = []
        for p in bad:
            exp = p.get("expected") if isinstance(p.get("expected"), dict) else None
            flag = (_badge("declared", "declared by the case") if _declared(p)
                    else _badge("new", "not declared: needs a decision"))
            declared = (f'<div class="declared">case says: {_e(exp.get("reason"))}</div>'
                        if exp else "")
            if p.get("convention"):
                flag += " " + _badge("convention", f"convention: {p['convention']}")
            items.append(
                f'<li><div class="dtitle"><span class="mono">{_e(p.get("io"))} {_e(p.get("index"))} '
                f'<b>{_e(p.get("name"))}</b></span> ← <span class="mono">{_e(p.get("source"))}</span> '
                f'{flag}</div><div class="dfacts">evidence {_ev(p.get("evidence"))} · schema says '
                f'<b>{_e(p.get("tag"))}</b></div><div class="reason">{_e(p.get("reason"))}</div>'
                f'{declared}</li>')
        blocks.append(
            f'<article class="dis" id="dis-{_e(rec.get("op"))}-{_e(rec.get("case"))}">'
            f'<div class="dishead"><a href="#op-{_e(rec.get("op"))}" class="opname-link">'
            f'{_e(rec.get("op"))}</a> <span class="mono muted">{_e(rec.get("case"))}</span> '
            f'<span class="muted small">{_case_meta(rec)}</span></div><div class="disbody">'
            f'<div class="caseflow">{diagram_svg(str(rec.get("op")), rec["parameters"])}'
            f'</div><ul>{"".join(items)}</ul></div></article>')
    return blocks


def _broken(cases: list[dict]) -> str:
    rows = []
    for rec in cases:
        if rec.get("status") == "error" or rec.get("invalid"):
            why = rec.get("error") if rec.get("status") == "error" else rec.get("invalid")
            st = "error" if rec.get("status") == "error" else "invalid"
            rows.append(f'<tr><td><a href="#op-{_e(rec.get("op"))}">{_e(rec.get("op"))}</a></td>'
                        f'<td class="mono">{_e(rec.get("case"))}</td><td>{_badge(st)}</td>'
                        f'<td>{_e(why)}</td></tr>')
    if not rows:
        return ('<section id="broken"><h2>Failed and invalid cases</h2><p class="ok">Every case '
                'ran and every tensor was attributed to one node input or output.</p></section>')
    return (f'<section id="broken"><h2>Failed and invalid cases <span class="count">{len(rows)}</span></h2>'
            '<table class="broken"><caption class="sr-only">failed and invalid cases, with '
            'their cause</caption><thead><tr>' + _heads("op", "case", "status", "cause")
            + f'</tr></thead><tbody>{"".join(rows)}</tbody></table></section>')


def _op_rows(ops: list[dict], by_op: dict[str, list[dict]]) -> Iterable[str]:
    order = {s: i for i, s in enumerate(_statuses(str(o.get("status")) for o in ops))}
    for o in sorted(ops, key=lambda o: (order[str(o.get("status"))], str(o.get("op")))):
        op, status = str(o.get("op")), str(o.get("status"))
        recs = by_op.get(op, [])
        counts = Counter(p.get("verdict") for r in recs for p in r.get("parameters") or ())
        chips = "".join(_verdict_chip(v, counts[v]) for v in VERDICTS if counts[v])
        merged = merge(recs)
        flow = diagram_svg(op, merged) if merged else ""
        case_names = " ".join(
            f'<span class="casename c-{_slug(_case_status(str(r.get("status"))))}">{_e(r.get("case"))}</span>'
            for r in recs)
        search = " ".join([op, status, str(o.get("reason") or "")] +
                          [str(r.get("case")) for r in recs] +
                          [str(p.get("name")) for r in recs for p in r.get("parameters") or ()])
        more = ""
        if recs:
            failed = sum(r.get("status") == "error" for r in recs)
            label = (f'{len(recs)} case{"s" if len(recs) != 1 else ""}'
                     + (f" ({failed} failed)" if failed else "") + ": evidence per parameter")
            more = (f'<tr class="more"><td colspan="4"><details><summary>{_e(label)}</summary>'
                    f'{"".join(_case_block(r) for r in recs)}</details></td></tr>')
        yield (f'<tbody class="op" id="op-{_e(op)}" data-status="{_e(status)}" '
               f'data-search="{_e(search.lower())}"><tr class="oprow"><td class="opcell">'
               f'<b>{_e(op)}</b><div class="cases">{case_names}</div></td><td>{_badge(status)}</td>'
               f'<td class="flowcell">{flow}</td><td><div class="reason">{_e(o.get("reason"))}</div>'
               f'<div class="chips">{chips}</div></td></tr>{more}</tbody>')


def _not_run(names: list[str]) -> str:
    """The ops this batch did not select (``--ops``), in one line: a 3-op report is not 200
    rows saying "not selected"."""
    if not names:
        return ""
    return (f'<p class="muted small" id="not-run">{_e(count(len(names), "op"))} not run in this '
            f'batch (not selected): {_e(", ".join(names))}</p>')


def _op_table(ops: list[dict], by_op: dict[str, list[dict]]) -> str:
    skipped = [str(o.get("op")) for o in ops
               if o.get("status") == NOT_RUN and not by_op.get(str(o.get("op")))]
    summarised = set(skipped)
    ops = [o for o in ops if str(o.get("op")) not in summarised]
    counts = Counter(str(o.get("status")) for o in ops)
    options = "".join(f'<option value="{_e(st)}">{_e(st)} ({counts[st]})</option>'
                      for st in _statuses(counts) if counts[st])
    legend = "".join(
        f'<span class="lg"><svg width="46" height="10"><line x1="2" y1="5" x2="44" y2="5" '
        f'stroke="{c}" stroke-width="{w}"' + (f' stroke-dasharray="{d}"' if d else "")
        + f' stroke-linecap="round"/></svg>{_e(ev)}: {_e(m)}</span>'
        for ev, (c, d, w, m) in EVIDENCE_STYLE.items() if ev not in ("untracked",))
    vlegend = "".join(f'<span class="lg"><i class="vdot-i v-{_slug(v)}"></i>{v}</span>' for v in VERDICTS)
    return (f'<section id="operators"><h2>Operators <span class="count" id="shown">{len(ops)} of {len(ops)}</span>'
            f'</h2><div class="controls"><input id="q" type="search" placeholder="Filter by op, '
            f'case, parameter or reason…" autocomplete="off" aria-label="filter the ops by op, '
            f'case, parameter or reason"><select id="st" aria-label="show ops of this status">'
            f'<option value="">'
            f'all statuses ({len(ops)})</option>{options}</select></div>'
            f'<div class="keys">{legend}<span class="sep"></span>{vlegend}</div>'
            '<table class="ops"><caption class="sr-only">every op of the report: its status, '
            'gradient flow, reason and verdicts</caption><thead><tr>'
            + _heads("op", "status", "gradient flow", "reason · verdicts")
            + f'</tr></thead>{"".join(_op_rows(ops, by_op))}'
            '</table><p id="none" hidden>No op matches the filter.</p>'
            f'{_not_run(skipped)}</section>')


def _by_type_records(ops: list[dict]) -> list[dict]:
    """Each case-less op decided by type (an ``ops`` entry with ``parameters``) as a
    case-like block, so its diagram, parameter table and disagreements show like a case's:
    evidence ``by type``, no PyTorch tensor."""
    out = []
    for o in ops:
        rows = [p for p in o.get("parameters") or () if isinstance(p, dict)]
        if rows:
            dis = any(p.get("verdict") == "disagree" for p in rows)
            out.append({"op": o.get("op"), "case": "by type", "kind": "no",
                        "status": "disagree" if dis else "proved",
                        "parameters": [{**p, "evidence": "by type", "source": "schema types"}
                                       for p in rows]})
    return out


def render_html(report: dict) -> str:
    """The batch report as one self-contained HTML document (no network access needed)."""
    cases = [c for c in report.get("cases") or () if isinstance(c, dict)]
    ops = [o for o in report.get("ops") or () if isinstance(o, dict)]
    by_op: dict[str, list[dict]] = defaultdict(list)
    by_type = _by_type_records(ops)
    for c in cases + by_type:
        by_op[str(c.get("op"))].append(c)
    known = {str(o.get("op")) for o in ops}
    for op, recs in sorted(by_op.items()):  # a case whose op is missing from "ops" still shows
        if op not in known:
            st = "error" if all(r.get("status") == "error" for r in recs) else "proved"
            ops.append({"op": op, "status": st, "reason": "(not listed in the report's ops)"})
    section = report.get("versions")
    body = (_header(report, cases, ops) + "<main>" + _disagreements(cases + by_type)
            + _broken(cases) + (versions_section(section) if section else "")
            + _op_table(ops, by_op) + "</main>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<title>torch_prover report</title>"
            f"<style>{_asset('report.css')}</style></head><body>{body}"
            f"<script>{_asset('report.js')}</script></body></html>\n")


def _asset(name: str) -> str:
    """The page's stylesheet and filter script, kept as package data (output/html/) so they
    are edited as CSS and JS, and inlined so the page needs no network and no other file."""
    from importlib.resources import files
    return files(__package__).joinpath("html", name).read_text(encoding="utf-8")
