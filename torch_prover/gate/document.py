"""The PR gate's report as data (``kind: pr-gate``): what every rendering reads.

One dict, built once from the diff, the provings, the verdicts and the records: the JSON
output is this document, and the text and Markdown comments (``comment.py``) only render
it. Its shape is ``torch_prover/schemas/pr-gate.json``.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..errors import EXIT_FINDING, EXIT_OK
from ..output.documents import head
from ..vocab import DocKind
from .changes import Diff
from .judge import FAILING, GateVerdict, Judged
from .select import Proving


def _param(j: Judged) -> dict[str, Any]:
    p = j.param
    return {"io": p.io, "index": p.position, "name": p.name, "base": p.base, "pr": p.pr,
            "base_name": p.base_name, "inherited": p.inherited, "verdict": j.verdict, "supports": j.supports,
            "why": j.why, "waiver": j.waiver, "witnesses": [w.as_dict() for w in j.witnesses]}


def _change(proving: Proving, judged: Sequence[Judged], domain: str = "") -> dict[str, Any]:
    c = proving.change
    return {"op": c.op, **({"domain": domain} if domain else {}), "version": c.version,
            "kind": c.kind,
            "parameters": [_param(j) for j in judged],
            "cases": [k.name for k in proving.cases],
            "gaps": [{"case": name, "why": why} for name, why in proving.gaps],
            "no_case": proving.no_case, "unbuilt": proving.unbuilt,
            "new_case": f"torch-prover new-case {c.op}" if proving.no_case else None}


def counts(judged: Sequence[Judged]) -> dict[str, int]:
    return {str(v): sum(j.verdict == v for j in judged) for v in GateVerdict}


def _reason(diff: Diff, n: dict[str, int], changes: int) -> str:
    if not changes:
        whose = "the installed onnx has" if diff.pr_path is None else "the PR's docs have"
        return (f"nothing to prove: {whose} the base's tags in each of the "
                f"{diff.compared} schema versions compared, and no other")
    total = sum(n.values()) - n[GateVerdict.REMOVED]
    shown = [f"{n[v]} {v}" for v in GateVerdict if n[v] and v is not GateVerdict.REMOVED]
    head_ = (f"{n[GateVerdict.REFUTED]} of {total} changed tags refuted by the evidence"
             if n[GateVerdict.REFUTED] else f"{total} changed tags, none refuted")
    return f"{head_} ({', '.join(shown)}) in {changes} changed schema versions"


def build(diff: Diff, provings: Sequence[Proving], judged: Sequence[Sequence[Judged]],
          records: Sequence[dict[str, Any]], also: Sequence[dict[str, Any]], *,
          onnx_version: str, wall_time_s: float, cache_hits: int,
          base_commit: str | None = None, absent: Sequence[Any] = (),
          points: Any = None, domain: str = "") -> dict[str, Any]:
    """``domain``: "" (ai.onnx) or the other domain the base documents (ai.onnx.ml), named
    on each change so that ``combine.py`` can join the domains' reports into one."""
    flat = [j for js in judged for j in js]
    n = counts(flat)
    code = EXIT_FINDING if any(j.verdict in FAILING for j in flat) else EXIT_OK
    failed = [{"case": r["case"], "op": r["op"], "status": r["status"], "error": r["error"]}
              for r in records if r.get("kind") == DocKind.FAILED_CASE]
    return {**head(DocKind.PR_GATE, code, _reason(diff, n, len(provings))),
            **({"domain": domain} if domain else {}),
            "base": {"path": diff.base_path, "kind": diff.base_kind,
                     "source": diff.base_source, "latest_only": diff.latest_only,
                     **({"commit": base_commit} if base_commit else {})},
            "pr": {"source": diff.pr_label if diff.pr_path is not None else "onnx.defs",
                   "onnx": onnx_version, "path": diff.pr_path},
            "summary": {"versions_compared": diff.compared, "changed_versions": len(provings),
                        "changed_parameters": len(flat), "verdicts": n,
                        "needs_build": sum(any(j.verdict is GateVerdict.NEEDS_BUILD
                                               for j in js) for js in judged),
                        "proofs": len(records), "cache_hits": cache_hits,
                        "failed_proofs": len(failed), "wall_time_s": round(wall_time_s, 2)},
            "changes": [_change(p, js, domain) for p, js in zip(provings, judged)],
            "removed": list(diff.removed),
            "absent": [{"version": a.label, "why": a.why.value} for a in absent],
            # where every ONNX point of a case-free verdict came from (None: none consulted)
            "points": None if points is None else {
                "origin": points.origin.value, "source": points.source,
                "problems": list(points.warnings)},
            "also": list(also), "failed": failed,
            "cases": list(records)}
