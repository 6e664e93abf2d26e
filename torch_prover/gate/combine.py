"""One PR gate verdict from the gate's reports of several domains (``torch-prover merge``).

ONNX commits each domain's tags in a file of its own: ai.onnx's in docs/Changelog.md,
ai.onnx.ml's in docs/Changelog-ml.md, and ``verify-all --changed-from`` judges one base file
per run (command.py). A pull request gets one check, one comment, one set of annotations
and one JUnit file, so the workflow (docs/ci/torch-prover.yml) runs the gate once per
changed domain, ``--format json``, and ``merge`` joins those reports here into one
``pr-gate`` document that every rendering reads as it reads one run's: the changes of
every domain (each non-default one named on its change), the counts summed, the exit code
the worst, the reason recomputed, and each domain's base, PR and verdict under ``parts``.

Each report is read as ``merge`` reads a shard (``batch/report_io.read_document``: bounded,
validated against the shipped schema); two reports of one domain are refused, one line.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..errors import UsageError
from ..output.documents import head
from ..vocab import DocKind
from .judge import GateVerdict

DEFAULT = "ai.onnx"


def domain_of(doc: dict[str, Any]) -> str:
    """The domain whose tags a report judged (``document.build`` names it unless ai.onnx)."""
    return doc.get("domain") or DEFAULT


def read(paths: Sequence[str]) -> list[dict[str, Any]]:
    """The gate's JSON reports at ``paths``, one per domain, ai.onnx's first."""
    from ..batch.report_io import read_document
    docs = [read_document(p, "merge", DocKind.PR_GATE) for p in paths]
    seen: dict[str, str] = {}
    for path, doc in zip(paths, docs):
        d = domain_of(doc)
        if d in seen:
            raise UsageError(f"merge {path}: a second PR gate report of {d} (the first: "
                             f"{seen[d]}); give one report per domain")
        seen[d] = path
    return sorted(docs, key=lambda doc: domain_of(doc) != DEFAULT)


def _reason(docs: Sequence[dict[str, Any]], n: dict[str, int], changes: int) -> str:
    if not changes:
        return "; ".join(f"{domain_of(d)}: {d['reason']}" for d in docs)
    total = sum(n.values()) - n[GateVerdict.REMOVED]
    shown = [f"{n[v]} {v}" for v in GateVerdict if n[v] and v is not GateVerdict.REMOVED]
    lead = (f"{n[GateVerdict.REFUTED]} of {total} changed tags refuted by the evidence"
            if n[GateVerdict.REFUTED] else f"{total} changed tags, none refuted")
    return (f"{lead} ({', '.join(shown)}) in {changes} changed schema versions of "
            f"{', '.join(domain_of(d) for d in docs)}")


def _summed(docs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    first = docs[0]["summary"]
    out: dict[str, Any] = {}
    for key, value in first.items():
        if key == "verdicts":
            out[key] = {v: sum(d["summary"][key][v] for d in docs) for v in value}
        elif key == "wall_time_s":   # the runs follow one another
            out[key] = round(sum(d["summary"][key] for d in docs), 2)
        else:
            out[key] = sum(d["summary"][key] for d in docs)
    return out


def combine(docs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One ``pr-gate`` document of ``docs`` (``read``'s, one per domain); one doc: itself."""
    if len(docs) == 1:
        return docs[0]
    summary = _summed(docs)
    code = max(d["exit_code"] for d in docs)
    changes = [c for d in docs for c in d["changes"]]
    points = next((d["points"] for d in docs if d.get("points")), None)
    return {**head(DocKind.PR_GATE, code,
                   _reason(docs, summary["verdicts"], summary["changed_versions"])),
            "base": docs[0]["base"], "pr": docs[0]["pr"],
            "parts": [{"domain": domain_of(d), "base": d["base"], "pr": d["pr"],
                       "versions_compared": d["summary"]["versions_compared"],
                       "exit_code": d["exit_code"], "reason": d["reason"]} for d in docs],
            "summary": summary, "changes": changes,
            **{key: [x for d in docs for x in d.get(key) or ()]
               for key in ("removed", "absent")},
            "points": points,
            **{key: [x for d in docs for x in d[key]] for key in ("also", "failed", "cases")}}
