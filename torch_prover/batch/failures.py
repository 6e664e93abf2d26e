"""Failed variants: which record of an all-versions run failed, why (typed), and whether the
catalogue declares it.

A variant ``<case>@<opset>`` fails when it produced no proof (its export or onnx.checker
refused it, its worker died or timed out twice, the tag source lacks the op), when its
attribution is ambiguous, when its run is not one of its schema version
(``engine/versions/fidelity.py``: a node the version does not accept, no runtime that implements
it), or when a check an undeclared verdict rests on failed (a forward mismatch, a VJP
check, witnesses in conflict). Its version is then not proved by it, the report lists it
with its reason, and the run fails -- unless the case declares that failure at that
version (``Case.fails_at``, with the reason: a limit of the case or of the runtimes, shown
with the failure). Nothing here reads a message's text: the kinds come from record fields.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..compat import StrEnum
from ..engine.rules.verdict import Rule
from .one_case import Failure
from .summary import fails


class Kind(StrEnum):
    """Why a variant failed: the ``kind`` of a ``failed_variants`` entry."""

    EXPORT = "no model"               # the case did not export / pass onnx.checker
    CRASH = "worker died"
    TIMEOUT = "timed out"
    NO_TAGS = "no tags"
    ERROR = "error"                   # evidence not written, or a bug of ours
    INVALID = "invalid"               # ambiguous attribution
    UNFAITHFUL = "not a run of its version"
    FORWARD = "forward mismatch"
    CHECK = "a check failed"          # VJP, witnesses in conflict or disagreeing


_FROM_FAILURE = {Failure.CASE: Kind.EXPORT, Failure.CRASH: Kind.CRASH,
                 Failure.TIMEOUT: Kind.TIMEOUT, Failure.NO_TAGS: Kind.NO_TAGS}
"""A failed-case record's ``failure`` (``one_case.Failure``, a StrEnum: the record's string
finds its member) -> its variant's kind; the others (evidence not written, an internal
error) are ``Kind.ERROR``."""


@dataclass(frozen=True)
class FailedVariant:
    case: str
    op: str
    version: int | None
    kind: Kind
    reason: str
    declared: str | None = None      # the case's declaration (``fails_at``) when there is one

    def as_json(self) -> dict[str, Any]:
        return {"case": self.case, "op": self.op, "version": self.version,
                "kind": self.kind.value, "reason": self.reason, "declared": self.declared}

    def line(self) -> str:
        tail = f" (declared: {self.declared})" if self.declared else ""
        return f"{self.case}: {self.kind}: {self.reason}{tail}"


def failure_of(rec: Mapping[str, Any]) -> tuple[Kind, str] | None:
    """(kind, reason) when ``rec`` is a failed run, else None."""
    status = rec.get("status")
    if status in ("error", "no-tags"):
        kind = Kind.NO_TAGS if status == "no-tags" else _FROM_FAILURE.get(
            rec.get("failure", ""), Kind.ERROR)
        return kind, str(rec.get("error") or "")
    if status == "invalid":
        return Kind.INVALID, str(rec.get("invalid") or "")
    problems = (rec.get("fidelity") or {}).get("problems") or []
    if problems:
        return Kind.UNFAITHFUL, "; ".join(f"{p['kind']}: {p['detail']}" for p in problems)
    failing = [p for p in rec.get("parameters", [])
               if p.get("verdict") == "inconclusive" and fails(p)]
    if not failing:
        return None
    p = failing[0]
    kind = Kind.FORWARD if p.get("rule") == Rule.FORWARD else Kind.CHECK
    return kind, f"{p['io']} {p['index']} ({p['name']}): {p['reason']}"


def failed_variants(records: Iterable[Mapping[str, Any]], version_of,
                    declared_at) -> list[FailedVariant]:
    """Every failed record among ``records`` (``version_of(rec)``: the schema version it
    stands for; ``declared_at(rec, version)``: the case's declared reason, or None)."""
    out = []
    for r in records:
        found = failure_of(r)
        if found is None:
            continue
        version = version_of(r)
        out.append(FailedVariant(str(r.get("case")), str(r.get("op")), version, found[0],
                                 found[1], declared_at(r, version)))
    return out
