"""One verdict per changed tag, from the records of the proofs that reached its version.

The PR's tag is the one under test (the records judge the installed onnx's tags), so a
record's ``disagree`` on a changed parameter refutes the PR's change -- even where the
case declares that disagreement (``expect=``): a declaration records a known error of the
current tags, and this PR is the one introducing it. Only a waiver (the project's written
acceptance, ``--waivers``) turns a refutation into ``waived``. Tags the PR does not change
are not judged; their disagreements in the same proofs are listed apart (``also``).

Per changed parameter, over every record of its version (each case and variant):
refuted if one disagrees (waived if a waiver covers each), else confirmed if one agrees,
else proposed (the PR's tag is unknown and a record decides it), else not proved, with
why (no case, inconclusive, a failed case, a version no route reaches); a version the
installed onnx lacks is its own state, "not proved: build the PR's onnx" (``NEEDS_BUILD``:
what the workflow's build path proves).

Blame only what the PR writes: a refuted tag of a new version that the PR copied forward
unchanged from the version it supersedes (``ParamChange.inherited``) is ``inherited``, a
warning, not a failure -- the full run judges it in the version it came from. Each
verdict lists first the proofs that decided it (the refuting one of a refutation), then
the others, the not-exercised ones last: the reproduce command is the first one's.
"""
from __future__ import annotations

from dataclasses import dataclass
from ..compat import StrEnum
from typing import Any, Sequence

from ..batch.waivers import waiver_key
from ..output.batch_report import prove_command
from .changes import ParamChange
from .select import Proving


class GateVerdict(StrEnum):
    CONFIRMED = "confirmed"      # the evidence supports the PR's tag
    REFUTED = "refuted"          # the evidence supports the other tag: the gate fails
    WAIVED = "waived"            # refuted, and a waiver accepts it
    PROPOSED = "proposed"        # the PR leaves the tag unknown; the evidence decides it
    NOT_PROVED = "not proved"    # no proof decided it (the reason says why)
    REMOVED = "removed"          # the PR has no such parameter: nothing to prove
    INHERITED = "inherited"      # refuted, but copied unchanged from the superseded version
    NEEDS_BUILD = "not proved: build the PR's onnx"   # the installed onnx lacks the version


FAILING = (GateVerdict.REFUTED,)
WARNING = (GateVerdict.INHERITED,)
"""Verdicts annotated as a warning: shown on the PR, not failing it."""

BUILD_THE_PR = ("the installed onnx lacks this schema version: build the PR's onnx to "
                "prove it")


@dataclass(frozen=True)
class Witness:
    """One proof's verdict on a changed parameter, and how to reproduce it."""

    case: str
    opset: int | None
    verdict: str
    supports: str | None
    rule: str
    reason: str
    command: str | None          # None: decided by type, no case to run
    declared: str | None = None  # the verdict the case declares (expect=), if any

    def as_dict(self) -> dict[str, Any]:
        return {"case": self.case, "opset": self.opset, "verdict": self.verdict,
                "supports": self.supports, "rule": self.rule, "reason": self.reason,
                "command": self.command, "declared": self.declared}


@dataclass(frozen=True)
class Judged:
    param: ParamChange
    verdict: GateVerdict
    supports: str | None
    why: str
    witnesses: tuple[Witness, ...] = ()
    waiver: str | None = None


def _witness(rec: dict[str, Any] | None, p: dict[str, Any], tags_from: str | None
             ) -> Witness:
    if rec is None:   # a by-type row of an op without a case
        return Witness("by type", None, p["verdict"], p["supports"], p["rule"], p["reason"],
                       None)
    expected = (p.get("expected") or {}).get("verdict")
    return Witness(rec["case"], rec.get("opset"), p["verdict"], p.get("supports"), p["rule"],
                   p["reason"], prove_command(rec["op"], rec["case"], tags_from), expected)


_ORDER = {"disagree": 0, "agree": 1, "proposed": 1}


def deciding_first(witnesses: tuple[Witness, ...]) -> tuple[Witness, ...]:
    """The witnesses in the order a verdict reads them: a disagreement first (it decides a
    refutation), then agreements and proposals, the inconclusive (not exercised) last;
    catalogue order within each."""
    return tuple(sorted(witnesses, key=lambda w: _ORDER.get(w.verdict, 2)))


def inherited_why(label: str, supports: str, witnesses: Sequence[Witness]) -> str:
    """Why an inherited refutation does not fail the gate, and whether today's catalogue
    already declares it (every disagreeing case declares it)."""
    refuting = [w for w in witnesses if w.verdict == "disagree"]
    declared = all(w.declared == "disagree" for w in refuting)
    return (f"inherited from {label}: disagrees (the evidence supports {supports}), "
            + ("as today's catalogue declares" if declared else
               "as the base's tag there does")
            + "; the PR copied the tag, it did not write it")


def _matches(rec: dict[str, Any], version: int, param: ParamChange) -> list[dict[str, Any]]:
    if rec.get("schema_version") != version:
        return []
    return [p for p in rec.get("parameters", ())
            if p["io"] == param.io and p["name"] == param.name]


def _not_proved(proving: Proving, records: Sequence[dict[str, Any]],
                found: Sequence[Witness]) -> str:
    """Why no proof decided the parameter, in one line."""
    op = proving.change.op
    if proving.no_case and not found:
        return (f"{op} has no case in the catalogue and its types do not decide this "
                f"parameter; `torch-prover new-case {op}` writes one to complete")
    parts = []
    if found:
        parts.append("inconclusive in every proof: " + found[0].reason)
    failed = [r for r in records if r.get("status") in ("error", "no-tags")]
    parts += [f"{r['case']} failed: {r.get('error', r['status'])}" for r in failed]
    parts += [f"{case}: {why}" for case, why in proving.gaps]
    if not parts:
        parts.append("no case of the op exercises it")
    return "; ".join(parts)


def judge(proving: Proving, records: dict[str, dict[str, Any]],
          waived: dict[tuple, Any], tags_from: str | None = None) -> tuple[Judged, ...]:
    """The changed parameters of ``proving``'s version, judged from the ``records`` (by case
    name) of its proofs; ``waived`` as ``batch.waivers.apply`` gives it; ``tags_from``: the
    PR's docs the records judged (each reproduce command names it)."""
    change = proving.change
    recs = [records[c.name] for c in proving.cases if c.name in records]
    out = []
    for param in change.params:
        if param.pr is None:
            out.append(Judged(param, GateVerdict.REMOVED, None,
                              "the PR has no such parameter: nothing to prove"))
            continue
        if proving.unbuilt:
            out.append(Judged(param, GateVerdict.NEEDS_BUILD, None, BUILD_THE_PR))
            continue
        pairs = [(r, p) for r in recs for p in _matches(r, change.version, param)]
        pairs += [(None, p) for p in proving.by_type
                  if p["io"] == param.io and p["name"] == param.name]
        witnesses = deciding_first(tuple(_witness(r, p, tags_from) for r, p in pairs))
        refuting = [(r, p) for r, p in pairs if p["verdict"] == "disagree"]
        if refuting:
            keys = [waiver_key(r or {"op": change.op, "case": None}, p) for r, p in refuting]
            waivers = [waived.get(k) for k in keys]
            supports = refuting[0][1]["supports"]
            if all(waivers):
                out.append(Judged(param, GateVerdict.WAIVED, supports,
                                  f"the evidence supports {supports}; waived: "
                                  f"{waivers[0].reason}", witnesses, waivers[0].reason))
            elif param.inherited:
                out.append(Judged(param, GateVerdict.INHERITED, supports,
                                  inherited_why(param.inherited, supports, witnesses),
                                  witnesses))
            else:
                out.append(Judged(param, GateVerdict.REFUTED, supports,
                                  f"the PR tags it {param.pr}; the evidence supports "
                                  f"{supports}", witnesses))
            continue
        agreeing = [p for _, p in pairs if p["verdict"] == "agree"]
        proposed = [p for _, p in pairs if p["verdict"] == "proposed"]
        if agreeing:
            out.append(Judged(param, GateVerdict.CONFIRMED, param.pr,
                              f"the evidence supports {param.pr}", witnesses))
        elif proposed:
            s = proposed[0]["supports"]
            out.append(Judged(param, GateVerdict.PROPOSED, s,
                              f"the PR leaves it unknown; the evidence supports {s}",
                              witnesses))
        else:
            out.append(Judged(param, GateVerdict.NOT_PROVED, None,
                              _not_proved(proving, recs, witnesses), witnesses))
    return tuple(out)


def also_found(provings: Sequence[Proving], records: dict[str, dict[str, Any]]
               ) -> list[dict[str, Any]]:
    """Disagreements the proofs found on tags the PR does not change (in the proved
    versions): not the PR's doing, so they do not fail the gate; listed so a reviewer sees
    them."""
    out = []
    for proving in provings:
        change = proving.change
        changed = {(p.io, p.name) for p in change.params}
        for c in proving.cases:
            rec = records.get(c.name)
            if rec is None or rec.get("schema_version") != change.version:
                continue
            for p in rec.get("parameters", ()):
                if p["verdict"] == "disagree" and (p["io"], p["name"]) not in changed:
                    out.append({"op": change.op, "version": change.version,
                                "case": rec["case"], "io": p["io"], "index": p["index"],
                                "name": p["name"], "tag": p["tag"], "supports": p["supports"],
                                "declared": (p.get("expected") or {}).get("verdict")
                                == "disagree"})
    return out
