"""Coverage of the catalogue: every ai.onnx op, covered by which cases, or why not."""
from __future__ import annotations

from typing import Any

from .cases import all_cases, all_missing
from .tags import all_ops


def coverage() -> list[dict[str, Any]]:
    """One entry per ai.onnx op of the installed onnx (DESIGN §3 ``coverage`` shape)."""
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
                {"name": c.name, "kind": c.kind, "exporter": c.exporter, "opset": c.export_opset}
                for c in cases]})
        else:
            category, reason = missing.get(op, ("not yet written", "no case has been written yet"))
            entries.append({"op": op, "status": "missing", "reason_category": category,
                            "reason": reason})
    return entries


def summary(entries: list[dict[str, Any]]) -> dict[str, int]:
    covered = [e for e in entries if e["status"] == "covered"]
    natural = [e for e in covered if any(c["kind"] == "natural" for c in e["cases"])]
    return {"ops": len(entries), "covered": len(covered), "natural": len(natural),
            "reference_only": len(covered) - len(natural), "missing": len(entries) - len(covered)}


def coverage_text(entries: list[dict[str, Any]]) -> str:
    s = summary(entries)
    lines = [f"{s['covered']} of {s['ops']} ai.onnx ops covered ({s['natural']} by natural cases, "
             f"{s['reference_only']} by reference cases only); {s['missing']} without a case", ""]
    for e in entries:
        if e["status"] == "covered":
            kinds = sorted({f"{c['kind']}/{c['exporter']}/opset {c['opset']}" for c in e["cases"]})
            lines.append(f"  {e['op']:<28} covered  {len(e['cases'])} case(s): "
                         f"{', '.join(c['name'] for c in e['cases'])}  [{'; '.join(kinds)}]")
    lines.append("")
    for e in entries:
        if e["status"] == "missing":
            lines.append(f"  {e['op']:<28} missing  {e['reason_category']}: {e['reason']}")
    return "\n".join(lines) + "\n"
