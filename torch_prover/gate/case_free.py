"""PR mode with ``--case-free``: each changed version judged from ONNX's node tests alone
(``batch/case_free.py``), so a new op is decided on the PR that proposes it, before any case.

Each changed parameter's case-free cell judges the PR's tag (the installed onnx's: the PR's
build; its node tests are the installed onnx's, or with ``--onnx-src`` the PR's: its committed
test data, or where it commits none (after onnx #7959) the tests its own generators write,
``engine/onnx_points/generators.py``): ``confirmed``, ``refuted`` or ``proposed`` as a
proof's record would, its witness named ``case-free`` and its reason naming the tests and
where they came from (``PointsOrigin``). A version without a usable ONNX node test is ``not
proved``: "no case and no ONNX node test".

Without ``--case-free``, the cases decide; a changed version no case reaches (a new op on the
PR that proposes it) falls back to the same case-free judgement (``fallback``), parameter by
parameter, where ONNX's node tests decide; what they leave undecided stays ``not proved``
with the command that starts its case.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from ..batch.case_free import cells
from ..batch.onnx_points import PointsRun
from ..vocab import BodyOutcome
from .changes import PrTags
from .judge import GateVerdict, Judged, Witness
from .select import Proving

_FROM_VERDICT = {"agree": GateVerdict.CONFIRMED, "disagree": GateVerdict.REFUTED,
                 "proposed": GateVerdict.PROPOSED}


def what_was_measured(run: PointsRun, op: str, version: int, io: str, name: str) -> str:
    """What ONNX's node tests measured for one parameter, test by test, as a case's line
    says what its witnesses measured: ``test_abs (onnxruntime): smooth; test_x: flat``
    (the function body's outcome too, where it applies)."""
    out = []
    for w in run.by_version.get((op, version), ()):
        if w.skip is not None:
            continue
        for p in w.params:
            if (p.io, p.name) != (io, name):
                continue
            body = "" if p.body == BodyOutcome.NOT_APPLICABLE else f", function body {p.body}"
            out.append(f"{w.test} ({w.runtime or 'no runtime'}): {p.outcome}{body}")
    return "; ".join(out) or "no test exercises it"


def _one(j: Judged, cell: dict[str, Any] | None, tests: Sequence[str], origin: str,
         seen: str = "") -> Judged:
    if cell is None or not tests:
        return replace(j, verdict=GateVerdict.NOT_PROVED, supports=None,
                       why=f"not proved: no case and no ONNX node test ({origin})")
    w = Witness("case-free", None, cell["verdict"], cell["supports"], cell["rule"],
                f"{cell['rule']}: ONNX's node tests measured {seen or 'nothing'} ({origin})"
                + (f"; measured again: {cell['precision']}" if cell.get("precision") else ""),
                None)
    verdict = _FROM_VERDICT.get(cell["verdict"])
    if verdict is None:
        return replace(j, verdict=GateVerdict.NOT_PROVED, supports=None,
                       why=f"no case; ONNX's node tests leave it undecided ({cell['rule']})",
                       witnesses=(w,))
    return replace(j, verdict=verdict, supports=cell["supports"],
                   why=f"case-free: the evidence supports {cell['supports']} ({cell['rule']})",
                   witnesses=(w,))


def rejudge(provings: Sequence[Proving], judged: Sequence[tuple[Judged, ...]],
            run: PointsRun, pr: PrTags) -> list[tuple[Judged, ...]]:
    """``judged`` with each parameter the PR has decided case-free (a removed one stays),
    against the PR's tags (``pr``: its docs with ``--tags-from``, else the installed onnx's).
    A version the installed onnx lacks stays "not proved: build the PR's onnx" unless the
    PR's reference implementation measured its tests (``engine/onnx_points/generators.py``
    says what that allows and what not)."""
    out = []
    for p, js in zip(provings, judged):
        if p.unbuilt and not run.used(p.change.op, p.change.version):
            out.append(tuple(js))
            continue
        change = p.change
        tags = pr.tags(change.op, change.version)
        found = {(c["io"], c["name"]): c for c in (cells(run, tags) if tags is not None else ())}
        tests = run.used(change.op, change.version)
        out.append(tuple(_one(j, found.get((j.param.io, j.param.name)), tests,
                              run.origin.value,
                              what_was_measured(run, change.op, change.version, j.param.io,
                                                j.param.name))
                         if j.param.pr is not None else j for j in js))
    return out


def needs_fallback(p: Proving) -> bool:
    """A changed version no case reaches, that the installed onnx can run (PR mode's
    case-free fallback; an unbuilt one waits for the PR's build)."""
    return not p.cases and not p.unbuilt


def fallback(provings: Sequence[Proving], judged: Sequence[tuple[Judged, ...]],
             run: PointsRun, pr: PrTags) -> list[tuple[Judged, ...]]:
    """``judged`` with each ``not proved`` parameter of a version no case reaches decided
    case-free where ONNX's node tests decide it; every other parameter as it was."""
    out = []
    for p, js in zip(provings, judged):
        if not (needs_fallback(p) or (p.unbuilt and run.used(p.change.op, p.change.version))):
            out.append(tuple(js))
            continue
        redo = rejudge([p], [js], run, pr)[0]
        out.append(tuple(n if j.verdict in (GateVerdict.NOT_PROVED, GateVerdict.NEEDS_BUILD)
                         and n.verdict is not GateVerdict.NOT_PROVED else j
                         for j, n in zip(js, redo)))
    return out
