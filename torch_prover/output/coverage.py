"""Coverage of the catalogue: every ai.onnx op, covered by which cases, or why not."""
from __future__ import annotations

from typing import Any

from ..cases import all_cases, all_missing
from ..engine.next_opset import EXPORTER_MAX_OPSET, export_route
from ..vocab import ExportRoute
from .report import DEFAULT_WIDTH, prove_command, route_note, wrap_line
from ..tags.schema import all_ops


def coverage() -> list[dict[str, Any]]:
    """One entry per ai.onnx op of the installed onnx (DESIGN §3 ``coverage`` shape), each
    case with the command that proves it."""
    by_op: dict[str, list] = {}
    for c in all_cases():
        if c.domain in ("", "ai.onnx"):
            by_op.setdefault(c.op, []).append(c)
    missing = all_missing()
    entries = []
    for op in all_ops():
        cases = by_op.get(op)
        if cases:
            entries.append({"op": op, "status": "covered", "cases": [
                {"name": c.name, "kind": c.kind, "exporter": c.exporter, "opset": c.export_opset,
                 "route": export_route(c.exporter, c.export_opset),
                 "command": prove_command(op, c.name)}
                for c in cases]})
        else:
            category, reason = missing.get(op, ("not yet written", "no case has been written yet"))
            entries.append({"op": op, "status": "missing", "reason_category": category,
                            "reason": reason})
    return entries


def _via(case: dict[str, Any]) -> str:
    """The raised route in the summary's short form (``/via 25``); nothing for direct."""
    return f" via {EXPORTER_MAX_OPSET}" if case["route"] == ExportRoute.RAISED else ""


def summary(entries: list[dict[str, Any]]) -> dict[str, int]:
    covered = [e for e in entries if e["status"] == "covered"]
    natural = [e for e in covered if any(c["kind"] == "natural" for c in e["cases"])]
    return {"ops": len(entries), "covered": len(covered), "natural": len(natural),
            "reference_only": len(covered) - len(natural), "missing": len(entries) - len(covered)}


def coverage_text(entries: list[dict[str, Any]], width: int | None = DEFAULT_WIDTH) -> str:
    s = summary(entries)
    lines = wrap_line(f"{s['covered']} of {s['ops']} ai.onnx ops covered ({s['natural']} by "
                      f"natural cases, {s['reference_only']} by reference cases only); "
                      f"{s['missing']} without a case", width) + [""]
    for e in entries:
        if e["status"] == "covered":
            kinds = sorted({f"{c['kind']}/{c['exporter']}/opset {c['opset']}{_via(c)}"
                            for c in e["cases"]})
            lines += wrap_line(f"  {e['op']:<28} covered  {len(e['cases'])} case(s): "
                               f"{', '.join(c['name'] for c in e['cases'])}  "
                               f"[{'; '.join(kinds)}]", width, " " * 39)
    lines.append("")
    for e in entries:
        if e["status"] == "missing":
            lines += wrap_line(f"  {e['op']:<28} missing  {e['reason_category']}: {e['reason']}",
                               width, " " * 39)
    lines.append("")
    lines += wrap_line("`torch-prover coverage OP` lists one op's cases and the command that "
                       "proves each", width)
    return "\n".join(lines) + "\n"


def op_text(entries: list[dict[str, Any]], width: int | None = DEFAULT_WIDTH) -> str:
    """The given ops' entries: each case (kind, exporter, opset) with the command that
    proves it, on a line of its own and never wrapped so it can be copied; or why the op
    has no case."""
    lines: list[str] = []
    for e in entries:
        if lines:
            lines.append("")
        if e["status"] != "covered":
            lines += wrap_line(f"{e['op']}: {e['status']}, no case ({e['reason_category']}): "
                               f"{e['reason']}", width)
            continue
        n = len(e["cases"])
        lines.append(f"{e['op']}: {n} case{'s' if n != 1 else ''}")
        for c in e["cases"]:
            note = route_note(c["exporter"], c["opset"])
            lines += wrap_line(f"  {c['name']}  ({c['kind']}, {c['exporter']} exporter, "
                               f"opset {c['opset']}{'; route: ' + note if note else ''})",
                               width, "    ")
            lines.append(f"    {c['command']}")
        if n > 1:
            lines.append(f"  all {n}: torch-prover prove {e['op']} --all")
    return "\n".join(lines) + "\n"
