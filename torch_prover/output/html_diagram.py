"""The HTML report's per-op diagram (``html_report``): the op as a box, inputs on the left,
outputs on the right; an arrow's style says what the evidence was and the dot by its label
is the verdict's colour. Kept apart from the page so each module stays readable
(tests/test_layout.py's 450 lines).
"""
from __future__ import annotations

import html
import re
from collections import Counter
from typing import Any

VERDICTS = ("disagree", "inconclusive", "proposed", "agree")
# evidence -> (stroke colour, dash pattern, width, legend text)
EVIDENCE_STYLE = {
    "grad": ("#2563eb", "", 2.6, "gradient flows"),
    "zero-grad": ("#d97706", "7 3 2 3", 2.2, "gradient identically zero"),
    "no-grad": ("#64748b", "6 4", 1.6, "no gradient (autograd refuses / None)"),
    "integer": ("#64748b", "6 4", 1.6, "integer / bool: cannot carry one"),
    "detached": ("#64748b", "6 4", 1.6, "output detached from the inputs"),
    "constant": ("#94a3b8", "1.5 3.5", 1.8, "constant folded into the graph"),
    "absent": ("#cbd5e1", "1.5 4", 1.4, "not given in this case"),
    "ambiguous": ("#dc2626", "2 3", 1.6, "ambiguous attribution"),
    "untracked": ("#94a3b8", "2 3", 1.4, "not tracked"),
    "by type": ("#64748b", "6 4", 1.6, "no case: the schema's types decide (non-differentiable)"),
}
# strongest evidence wins when an op's cases are merged into one diagram
_EVIDENCE_RANK = ("grad", "zero-grad", "no-grad", "integer", "by type", "detached", "constant",
                  "ambiguous", "untracked", "absent")


def e(x: Any) -> str:
    """``x`` as HTML text or an attribute value (None: empty)."""
    return html.escape("" if x is None else str(x), quote=True)


def slug(value: Any) -> str:
    """``value`` as the tail of a CSS class name: ``not run`` -> ``not-run``; anything
    outside [a-z0-9_-] becomes ``-``, so a class attribute never splits or breaks."""
    return re.sub(r"[^a-z0-9_-]+", "-", str(value).lower()).strip("-") or "none"


def _short(s: str, n: int) -> str:
    return s if len(s) <= n else s[:n - 1] + "…"


def merge(records: list[dict]) -> list[dict]:
    """One entry per (io, index) over an op's cases: the strongest evidence, the worst verdict."""
    best: dict[tuple[str, int], dict] = {}
    for rec in records:
        for p in rec.get("parameters") or ():
            key = (p.get("io", "input"), int(p.get("index", 0)))
            cur = best.get(key)
            if cur is None:
                best[key] = dict(p)
                continue
            if _rank(p.get("evidence"), _EVIDENCE_RANK) < _rank(cur.get("evidence"), _EVIDENCE_RANK):
                cur.update(evidence=p.get("evidence"), source=p.get("source"))
            if _rank(p.get("verdict"), VERDICTS) < _rank(cur.get("verdict"), VERDICTS):
                cur.update(verdict=p.get("verdict"), reason=p.get("reason"), tag=p.get("tag"))
    return [best[k] for k in sorted(best)]


def _rank(value: Any, order: tuple[str, ...]) -> int:
    return order.index(value) if value in order else len(order)


def diagram_svg(op: str, params: list[dict]) -> str:
    """Inline SVG: op box, one arrow per input (left) and output (right)."""
    ins = [dict(p) for p in params if p.get("io") == "input"]
    outs = [dict(p) for p in params if p.get("io") == "output"]
    for side in (ins, outs):  # variadic entries share a name: number them
        names = Counter(p.get("name") for p in side)
        for p in side:
            p["_label"] = (f"{p.get('name')}[{p.get('index')}]" if names[p.get("name")] > 1
                           else str(p.get("name")))
    row, arrow, pad = 34, 128, 8
    box_w = max(96, 8 * len(op) + 28)
    n = max(len(ins), len(outs), 1)
    h = n * row + 2 * pad
    x0, x1 = pad + arrow, pad + arrow + box_w
    w = x1 + arrow + pad
    parts = [f'<svg class="flow" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
             f'aria-label="{e(op)} inputs and outputs">',
             f'<rect x="{x0}" y="{pad / 2}" width="{box_w}" height="{h - pad}" rx="9" '
             f'class="opbox"/>',
             f'<text x="{(x0 + x1) / 2}" y="{h / 2 + 4.5}" class="opname" '
             f'text-anchor="middle">{e(op)}</text>']
    for side, xa, xb in ((ins, pad, x0), (outs, x1, w - pad)):
        step = (h - pad) / max(len(side), 1)
        for i, p in enumerate(side):
            y = pad / 2 + step * (i + 0.5)
            parts.append(_arrow(p, xa, xb, y))
    parts.append("</svg>")
    return "".join(parts)


def _arrow(p: dict, xa: float, xb: float, y: float) -> str:
    ev = p.get("evidence") or "absent"
    colour, dash, width, meaning = EVIDENCE_STYLE.get(ev, EVIDENCE_STYLE["untracked"])
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    tip = (f"{p.get('io')} {p.get('index')} {p.get('name')} ← {p.get('source')}\n"
           f"evidence: {ev} ({meaning})\ntag: {p.get('tag')}\nverdict: {p.get('verdict')}\n"
           f"{p.get('reason') or ''}")
    verdict = p.get("verdict") or "inconclusive"
    faded = " faded" if ev == "absent" else ""
    source = p.get("source") or ""
    return (f'<g class="arrow ev-{slug(ev)}"><title>{e(tip)}</title>'
            f'<line x1="{xa}" y1="{y:.1f}" x2="{xb - 7}" y2="{y:.1f}" stroke="{colour}" '
            f'stroke-width="{width}"{dash_attr} stroke-linecap="round"/>'
            f'<path d="M{xb - 8} {y - 4.5:.1f} L{xb} {y:.1f} L{xb - 8} {y + 4.5:.1f} z" '
            f'fill="{colour}"/>'
            f'<circle cx="{xa + 5}" cy="{y - 9:.1f}" r="3.6" class="vdot v-{slug(verdict)}"/>'
            f'<text x="{xa + 13}" y="{y - 5.5:.1f}" class="pname{faded}">'
            f'{e(_short(p["_label"], 16))}</text>'
            f'<text x="{xa + 2}" y="{y + 13:.1f}" class="psrc{faded}">{e(_short(source, 21))}</text>'
            f"</g>")
