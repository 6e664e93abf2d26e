"""``tags OP --explain``: per parameter, the tag, each witness's outcome and the convention.

Why: a reviewer signing a tag change wants the reasoning of every parameter in one screen,
not a proof record per case. The rows come from the op's proof records (its catalogue
cases, served by the verify-all cache or proved on the spot: ``cli``), one row per
(parameter, case); a witness is printed by its name in the record, so a witness a record
gains later (issue 21's function body) shows without a change here. An op without a case
is explained from its by-type rows. Pure: records in, text or JSON out.
"""
from __future__ import annotations

from typing import Any

from ..conventions import RULES, Convention
from ..tags.schema import SchemaTags
from .text_table import DEFAULT_WIDTH, table, wrap_line
from .units import count


def _witnesses(p: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Every witness the record holds, by name: outcome and, for autograd, its source."""
    return {name: {k: v for k, v in w.items() if k in ("outcome", "source")}
            for name, w in (p.get("witnesses") or {}).items() if isinstance(w, dict)}


def explain(tags: SchemaTags, records: list[dict[str, Any]], cached: int,
            by_type: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The explanation as data (``--format json``): ``parameters`` in the schema's order,
    each with its tag and one row per case; ``conventions`` every one named, with its
    statement, precedent and implied tag."""
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for f in tags.inputs + tags.outputs:
        rows[f.io, f.position] = {"io": f.io, "index": f.position, "name": f.name,
                                  "tag": f.tag, "cases": []}
    named: set[str] = set()
    for rec in records:
        for p in rec.get("parameters") or ():
            key = (p["io"], p["index"])
            row = rows.setdefault(key, {"io": p["io"], "index": p["index"], "name": p["name"],
                                        "tag": p["tag"], "cases": []})
            if p.get("convention"):
                named.add(p["convention"])
            row["cases"].append({
                "case": rec.get("case"), "schema_version": rec.get("schema_version"),
                "tag": p["tag"], "verdict": p["verdict"], "rule": p.get("rule"),
                "convention": p.get("convention"), "witnesses": _witnesses(p),
                "reason": p.get("reason")})
    for p in by_type or ():
        rows[p["io"], p["index"]]["cases"].append({
            "case": None, "schema_version": tags.since_version, "tag": p["tag"],
            "verdict": p["verdict"], "rule": p["rule"], "convention": None, "witnesses": {},
            "reason": p["reason"]})
    from ..errors import EXIT_OK
    from ..vocab import DocKind
    from .documents import head
    return {**head(DocKind.TAGS_EXPLAIN, EXIT_OK, f"the tags of {tags.op} and what decides "
                                                  f"each"), "op": tags.op, "domain": tags.domain,
            "schema_version": tags.since_version, "source": tags.source,
            "cases": [r.get("case") for r in records], "cached": cached,
            "parameters": sorted(rows.values(), key=lambda r: (r["io"] != "input", r["index"])),
            "conventions": [{"name": str(c), "statement": RULES[c].statement,
                             "precedent": RULES[c].precedent,
                             "implies": RULES[c].implies} for c in Convention if c in named]}


def _witness_words(ws: dict[str, dict[str, str]]) -> str:
    return "; ".join(f"{name} {w.get('outcome', '?')}" for name, w in ws.items())


def explain_text(data: dict[str, Any], width: int | None = DEFAULT_WIDTH) -> str:
    n = len(data["cases"])
    head = (f"{data['op']} (schema version {data['schema_version']}, tags from "
            f"{data['source']}): " + (f"explained from {count(n, 'case')} "
                                     f"({data['cached']} from the cache)" if n else
                                     "no case: explained by the schema's types"))
    lines = wrap_line(head, width)
    rows = []
    for p in data["parameters"]:
        label = [f"{p['io']} {p['index']}", p["name"], p["tag"]]
        if not p["cases"]:
            rows.append(label + ["-", "inconclusive", "no case reaches it", ""])
        for k, c in enumerate(p["cases"]):
            cells = label if k == 0 else ["", "", ""]
            tag = "" if c["tag"] == p["tag"] else f" (tag {c['tag']})"
            rule = c["rule"] + (f": {c['convention']}" if c["convention"] else "")
            rows.append(cells + [f"{c['case'] or 'by type'}{tag}", c["verdict"], rule,
                                 _witness_words(c["witnesses"]) or "-"])
    lines += table(rows, ["param", "name", "tag", "case", "verdict", "rule (convention)",
                           "witnesses"], width, flex=6)
    sources: dict[str, str] = {}
    for p in data["parameters"]:
        for c in p["cases"]:
            for name, w in c["witnesses"].items():
                if w.get("source") and c["case"]:
                    sources.setdefault(f"{c['case']}", f"{name}: {w['source']}")
    for case, source in sources.items():
        lines += wrap_line(f"{case}: {source}", width, "    ")
    for c in data["conventions"]:
        lines += wrap_line(f"convention '{c['name']}': {c['statement']} -> "
                           f"{c['implies'] or 'no tag'} (precedent: {c['precedent']})",
                           width, "    ")
    return "\n".join(lines) + "\n"
