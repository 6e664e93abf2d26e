"""Coverage of the catalogue: every ai.onnx op, and how its tags are decided.

Per op (docs/design.md §3.2: ``coverage``'s shape, fields added, none renamed): ``status`` is
``covered`` (it has cases), ``by type`` (no case, and the schema's types decide every
parameter: ``engine.rules.by_type``), ``case-free`` (no case, and ONNX's node tests decide the
rest: the ``coverage`` command adds it, ``batch/coverage_case_free.py``) or ``missing`` (no
case; ``reason`` says why, and a partly decidable op lists its decided parameters in
``by_type`` and the rest in ``undecided``, and what ONNX's node tests say in ``case_free``).
``decided`` says how: ``natural`` (a natural case), ``reference`` (reference cases only),
``case-free``, ``by type`` or ``missing``. Deprecated ops (``deprecated``) are counted
apart: their tags stand in older opsets only.
"""
from __future__ import annotations

from typing import Any

from ..cases import all_cases, all_missing
from ..engine.rules.by_type import TypeRow, decide_op, row_record, undecided_label
from ..engine.versions.next_opset import EXPORTER_MAX_OPSET, export_route
from ..vocab import ExportRoute
from .batch_report import BY_TYPE, MISSING, prove_command
from .report import route_note
from .text_table import DEFAULT_WIDTH, wrap_line
from ..tags.schema import SchemaTags, all_ops, is_deprecated, schema_tags

COVERED = "covered"
CASE_FREE = "case-free"
"""No case, and ONNX's node tests (with the schema's types) decide every parameter
(``batch/coverage_case_free.py``: what ``verify-all --case-free`` would decide)."""
DECIDED = ("natural", "reference", CASE_FREE, BY_TYPE, MISSING)
"""How an op is decided, in the order the summary counts them."""


def by_type_fields(rows: tuple[TypeRow, ...]) -> dict[str, Any]:
    """A case-less op's by-type decisions: ``by_type`` rows (decided parameters, in the
    shape of a record's parameters) and ``undecided`` (labels) when some are not."""
    decided = [row_record(r) for r in rows if r.decision is not None]
    undecided = [undecided_label(r) for r in rows if r.decision is None]
    return {"by_type": decided, **({"undecided": undecided} if undecided else {})}


def case_less_status(rows: tuple[TypeRow, ...]) -> str:
    """``by type`` when the types decide every parameter, else ``missing``."""
    return BY_TYPE if rows and all(r.decision is not None for r in rows) else MISSING


def case_less_entry(op: str, tags: SchemaTags) -> dict[str, Any]:
    """The by-type part of a case-less op's entry, from ``tags`` (installed onnx for
    ``coverage``; verify-all passes its own tag source)."""
    rows = decide_op(tags)
    return {"status": case_less_status(rows), **by_type_fields(rows)}


def coverage() -> list[dict[str, Any]]:
    """One entry per ai.onnx op of the installed onnx, each case with the command that
    proves it, each case-less op with its by-type decisions against the installed tags."""
    by_op: dict[str, list] = {}
    for c in all_cases():
        if c.domain in ("", "ai.onnx"):
            by_op.setdefault(c.op, []).append(c)
    missing = all_missing()
    entries = []
    for op in all_ops():
        cases = by_op.get(op)
        base = {"op": op, "deprecated": is_deprecated(op)}
        if cases:
            natural = any(c.kind == "natural" for c in cases)
            entries.append({**base, "status": COVERED,
                            "decided": "natural" if natural else "reference", "cases": [
                {"name": c.name, "kind": c.kind, "exporter": c.exporter, "opset": c.export_opset,
                 "route": export_route(c.exporter, c.export_opset),
                 "command": prove_command(op, c.name)}
                for c in cases]})
        else:
            category, reason = missing.get(op, ("not yet written", "no case has been written yet"))
            entry = case_less_entry(op, schema_tags(op))
            entries.append({**base, "status": entry["status"], "decided": entry["status"],
                            "reason_category": category, "reason": reason,
                            **{k: v for k, v in entry.items() if k != "status"}})
    return entries


def _via(case: dict[str, Any]) -> str:
    """The raised route in the summary's short form (``/via 25``); nothing for direct."""
    return f" via {EXPORTER_MAX_OPSET}" if case["route"] == ExportRoute.RAISED else ""


def summary(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts over every op, deprecated ones included (``ops``; ``with_case``, of them
    ``natural`` and ``reference_only``; ``without_case``), and ``decided``: how the
    non-deprecated ops are decided (a case-less op may be decided by type), the deprecated
    ones apart. Named so that no count reads as "missing" for an op decided by type."""
    covered = [e for e in entries if e["status"] == COVERED]
    natural = [e for e in covered if e["decided"] == "natural"]

    def how(group: list[dict[str, Any]]) -> dict[str, int]:
        return {d: sum(e["decided"] == d for e in group) for d in DECIDED}

    current = [e for e in entries if not e["deprecated"]]
    old = [e for e in entries if e["deprecated"]]
    return {"ops": len(entries), "with_case": len(covered), "natural": len(natural),
            "reference_only": len(covered) - len(natural),
            "without_case": len(entries) - len(covered),
            "decided": {"ops": len(current), **how(current),
                        "deprecated": {"ops": len(old), "names": [e["op"] for e in old],
                                       **how(old)}}}


def _how_line(counts: dict[str, int], of: str = "") -> str:
    decided = sum(counts[d] for d in DECIDED if d != MISSING)
    return (f"{decided}{of} decided ({counts['natural']} natural, {counts['reference']} "
            f"reference, {counts[CASE_FREE]} case-free, {counts['by type']} by type); "
            f"{counts['missing']} missing")


def summary_line(entries: list[dict[str, Any]]) -> str:
    """``N of 201 non-deprecated ai.onnx ops decided (a natural, b reference, c case-free,
    d by type); e missing``, and the deprecated ops counted apart."""
    d = summary(entries)["decided"]
    old = d["deprecated"]
    line = _how_line(d, f" of {d['ops']} non-deprecated ai.onnx ops")
    if old["ops"]:
        line += (f"; {old['ops']} deprecated ({', '.join(old['names'])}): "
                 f"{_how_line(old)}")
    return line


def case_free_note(found: dict[str, Any]) -> str:
    """What ONNX's node tests decide for a case-less op or version, in one line: its tests
    and verdicts, or why they decide it not (``batch/coverage_case_free.decide``)."""
    if found["decided"] == BY_TYPE:
        return "every parameter non-differentiable by type"
    if found["decided"] == CASE_FREE:
        n: dict[str, int] = {}
        for c in found["cells"]:
            n[c["verdict"]] = n.get(c["verdict"], 0) + 1
        return (f"every parameter decided at ONNX's node tests of {found['version']} "
                f"({', '.join(found['tests'])}): "
                + ", ".join(f"{k} {v}" for v, k in sorted((v, k) for k, v in n.items())))
    return found["why"]


def _by_type_note(e: dict[str, Any]) -> str:
    decided = ", ".join(f"{p['io']} {p['index']} ({p['name']})" for p in e.get("by_type", ()))
    undecided = ", ".join(e.get("undecided", ()))
    if e["status"] == BY_TYPE or not decided:
        return ""
    return f" (decided by type: {decided}; not decidable by type: {undecided})"


def coverage_text(entries: list[dict[str, Any]], width: int | None = DEFAULT_WIDTH) -> str:
    lines = wrap_line(summary_line(entries), width) + [""]
    for e in entries:
        if e["status"] == COVERED:
            kinds = sorted({f"{c['kind']}/{c['exporter']}/opset {c['opset']}{_via(c)}"
                            for c in e["cases"]})
            lines += wrap_line(f"  {e['op']:<28} {e['decided']:<9} {len(e['cases'])} case(s): "
                               f"{', '.join(c['name'] for c in e['cases'])}  "
                               f"[{'; '.join(kinds)}]", width, " " * 41)
    lines.append("")
    for e in entries:
        if e["status"] == CASE_FREE:
            lines += wrap_line(f"  {e['op']:<28} case-free {case_free_note(e['case_free'])} "
                               f"(no case: {e['reason_category']})", width, " " * 41)
    for e in entries:
        if e["status"] == BY_TYPE:
            lines += wrap_line(f"  {e['op']:<28} by type   every parameter non-differentiable "
                               f"by type (no case: {e['reason_category']})", width, " " * 41)
    lines.append("")
    for e in entries:
        if e["status"] == MISSING:
            free = e.get("case_free")
            lines += wrap_line(f"  {e['op']:<28} missing   {e['reason_category']}: {e['reason']}"
                               + _by_type_note(e)
                               + (f"; case-free: {case_free_note(free)}" if free else ""),
                               width, " " * 41)
    lines.append("")
    lines += wrap_line("`torch-prover coverage OP` lists one op's cases and the command that "
                       "proves each, or its by-type and case-free decisions", width)
    return "\n".join(lines) + "\n"


def op_text(entries: list[dict[str, Any]], width: int | None = DEFAULT_WIDTH) -> str:
    """The given ops' entries: each case (kind, exporter, opset) with the command that
    proves it, on a line of its own and never wrapped so it can be copied; or why the op
    has no case, and what its types decide."""
    lines: list[str] = []
    for e in entries:
        if lines:
            lines.append("")
        if e["status"] != COVERED:
            head = {BY_TYPE: "decided by type", CASE_FREE: "decided case-free"}.get(
                e["status"], e["status"])
            lines += wrap_line(f"{e['op']}: {head}, no case ({e['reason_category']}): "
                               f"{e['reason']}", width)
            free = e.get("case_free")
            if free:
                lines += wrap_line(f"  ONNX's node tests: {case_free_note(free)}", width, "    ")
                for c in (c for c in free["cells"] if c["rule"] != BY_TYPE):   # by type: below
                    lines += wrap_line(f"  {c['io']} {c['index']} {c['name']}: {c['verdict']} "
                                       f"(tag {c['tag']}, supports {c['supports'] or '-'}; "
                                       f"{c['rule']})", width, "    ")
            for p in e.get("by_type", ()):
                lines += wrap_line(f"  {p['io']} {p['index']} {p['name']}: non-differentiable by "
                                   f"type ({p['by_type']}), tag {p['tag']}: {p['verdict']} -- "
                                   f"{p['reason']}", width, "    ")
            for label in e.get("undecided", ()) if e.get("by_type") else ():
                lines += wrap_line(f"  {label}: not decidable by type", width, "    ")
            continue
        n = len(e["cases"])
        lines.append(f"{e['op']}: {n} case{'s' if n != 1 else ''} ({e['decided']})")
        for c in e["cases"]:
            note = route_note(c["exporter"], c["opset"])
            lines += wrap_line(f"  {c['name']}  ({c['kind']}, {c['exporter']} exporter, "
                               f"opset {c['opset']}{'; route: ' + note if note else ''})",
                               width, "    ")
            lines.append(f"    {c['command']}")
        if n > 1:
            lines.append(f"  all {n}: torch-prover prove {e['op']} --all")
    return "\n".join(lines) + "\n"


def where_to_look(op: str) -> str:
    """The hint after "no such case": an op without a case whose types decide it is
    checked by verify-all, not prove."""
    from ..cases import cases_for
    if not cases_for(op) and any(e["op"] == op and e.get("by_type") for e in coverage()):
        return (f"its tags are decided by type: `torch-prover coverage {op}` shows them, "
                f"`torch-prover verify-all --ops {op}` checks them")
    return "`torch-prover coverage` lists what exists"
