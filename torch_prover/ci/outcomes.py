"""A batch report as a list of tests, each passed, failed or skipped with why: the one
enumeration that the annotations, the JUnit XML and the step summary render.

The grain is the *parameter* (one input or output of one schema version: what fix-tags
edits and what a PR changes), with every case result about it folded into one test: it
fails when one of them fails the run (``batch.summary.fails``, waivers applied), it is
skipped -- never dropped -- when the run accepts it without deciding it (a declared or
waived disagreement, inconclusive in every case, no tags), and it passes otherwise
(agree, proposed). What fails a run without a parameter verdict has a test of its own: a
failed or invalid case, a variant that failed a check, an op without a case. With
``--versions``, the per-version cells of the report are the parameter tests (each
version against its own tags). So ``exit 1`` and "some test failed" are the same thing
(tests/test_ci_outputs.py holds them to it on every report it makes).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from ..compat import StrEnum
from typing import Any, Iterable

from ..batch.summary import fails
from ..fix.pr_text import reproduce
from ..output.batch_report import MISSING, NO_TAGS, by_type_command


class Grain(StrEnum):
    """What one test is about."""
    PARAMETER = "parameter"   # one input or output of one schema version
    CASE = "case"             # a case that gave no usable proof (failed, invalid, no tags)
    VARIANT = "variant"       # a case variant (--versions) that failed a check
    OP = "op"                 # an op no case and no type decides


class Result(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"


class Why(StrEnum):
    """Why a test failed or was skipped (a passed test has none)."""
    DISAGREE = "undeclared disagreement"
    BY_TYPE = "by-type disagreement"
    INCONCLUSIVE = "inconclusive where evidence should have decided"
    CONFLICT = "the cases support different tags"
    FAILED_CASE = "failed case"
    INVALID_CASE = "invalid case"
    FAILED_VARIANT = "variant failed a check"
    DECLARED_FAILURE = "variant failure declared by the case"
    DECLARED = "disagreement declared by the case"
    WAIVED = "waived disagreement"
    UNDECIDED = "not decided"
    NO_TAGS = "no tags"
    NO_CASE = "no case"
    REFUTED = "changed tag refuted by the evidence"   # PR mode (docs/pr-gate.md)
    REMOVED = "parameter removed by the PR"
    NEEDS_BUILD = "not proved: build the PR's onnx"   # PR mode: the installed onnx lacks it
    INHERITED = "refuted tag inherited unchanged from the superseded version"   # PR mode


WARNED = (Why.INHERITED,)
"""Skipped tests annotated as a warning: the PR shows them, they do not fail it."""


@dataclass(frozen=True)
class Test:
    """One test: its subject, its result, and what a reviewer needs to act on it."""
    __test__ = False   # not a pytest class
    grain: Grain
    op: str
    domain: str
    version: int | None          # the schema version (None: not known, e.g. a failed case)
    io: str | None
    index: int | None
    name: str | None             # the parameter's name
    result: Result
    why: Why | None
    message: str                 # one line
    cases: tuple[str, ...] = ()  # the cases behind it
    reproduce: str | None = None
    opset: int | None = None     # a case's export opset (locates a failed case's schema)

    @property
    def schema(self) -> str:
        return f"{self.op}-{self.version}" if self.version is not None else self.op

    @property
    def label(self) -> str:
        """``Clip-13 input 1 (min)``, ``case clip_bad``: unique within one report."""
        if self.grain is Grain.PARAMETER:
            return f"{self.schema} {self.io} {self.index} ({self.name})"
        if self.grain is Grain.OP:
            return self.op
        return f"{self.grain} {self.cases[0] if self.cases else self.op}"


Key = tuple[str, str, Any, str, int]


def _waived(report: dict[str, Any]) -> dict[tuple[str, str | None, str], str]:
    """(op, case, "io index") -> the waiver's reason, from the report's summary."""
    return {(w["op"], w["case"], w["parameter"]): w["reason"]
            for w in report["summary"].get("waived", ())}


def _reproduce(report: dict[str, Any], op: str, case: str) -> str | None:
    """The command that reproduces ``case``'s verdicts from the report's tag source."""
    return reproduce(op, case, report["summary"].get("tags_path"))


def _fold(key: Key, hits: list[tuple[dict, dict]], waived: dict, report: dict) -> Test:
    """One parameter's test from every (record, parameter) about it."""
    op, domain, version, io, index = key
    cases = tuple(sorted({r["case"] for r, _ in hits if r.get("case")}))

    def waiver(r: dict, p: dict) -> str | None:
        return waived.get((r["op"], r.get("case"), f"{p['io']} {p['index']}"))

    def failing(r: dict, p: dict) -> bool:
        if p["verdict"] == "disagree" and waiver(r, p) is not None:
            return False
        return p["verdict"] == "disagree" if r.get("case") is None else fails(p)

    r0, p0 = hits[0]
    command = (by_type_command(report, op) if r0.get("case") is None
               else _reproduce(report, op, r0["case"]))

    def test(result: Result, why: Why | None, message: str, r=r0) -> Test:
        cmd = by_type_command(report, op) if r.get("case") is None else \
            _reproduce(report, op, r["case"])
        return Test(Grain.PARAMETER, op, domain, version, io, index, p0["name"], result, why,
                    message, cases, cmd or command)

    bad = [(r, p) for r, p in hits if failing(r, p)]
    if bad:
        r, p = bad[0]
        why = (Why.BY_TYPE if r.get("case") is None else
               Why.DISAGREE if p["verdict"] == "disagree" else Why.INCONCLUSIVE)
        return test(Result.FAILED, why, _said(r, p), r)
    dis = [(r, p) for r, p in hits if p["verdict"] == "disagree"]
    if dis:
        r, p = dis[0]
        w = waiver(r, p)
        return test(Result.SKIPPED, Why.WAIVED if w else Why.DECLARED,
                    f"{_said(r, p)}; " + (f"waived: {w}" if w else
                                          f"declared: {p.get('expected', {}).get('reason')}"), r)
    if all(p["verdict"] == "inconclusive" for _, p in hits):
        return test(Result.SKIPPED, Why.UNDECIDED, _said(r0, p0))
    decided = next((r, p) for r, p in hits if p["verdict"] != "inconclusive")
    return test(Result.PASSED, None, _said(*decided), decided[0])


def _said(r: dict, p: dict) -> str:
    """One case result in one line: verdict, tag, what the evidence supports, the reason."""
    who = f"case {r['case']}" if r.get("case") else "by type (no case)"
    supports = f", evidence supports {p['supports']}" if p.get("supports") else ""
    return (f"{p['verdict']}: tagged {p['tag']}{supports} ({who}, rule: {p['rule']}): "
            f"{p.get('reason', '')}")


def _latest(report: dict[str, Any], waived: dict) -> dict[Key, Test]:
    """Parameter tests from the cases' records and the case-less ops' by-type rows."""
    groups: dict[Key, list[tuple[dict, dict]]] = {}
    for r in report["cases"]:
        if r.get("status") in ("error", "no-tags"):
            continue
        for p in r.get("parameters") or ():
            key = (r["op"], r.get("domain", ""), r.get("schema_version"), p["io"], p["index"])
            groups.setdefault(key, []).append((r, p))
    for o in report["ops"]:
        for p in o.get("parameters") or ():
            pseudo = {"op": o["op"], "case": None}
            groups.setdefault((o["op"], "", o.get("schema_version"), p["io"], p["index"]),
                              []).append((pseudo, p))
    return {k: _fold(k, hits, waived, report) for k, hits in groups.items()}


_LABEL = re.compile(r"^(input|output) (\d+) \((.*)\)$")


def _cells(report: dict[str, Any], waived: dict) -> dict[Key, Test]:
    """Parameter tests from the per-version table (``--versions``): one per cell, and a
    skipped one per parameter the table lists as undecided, with its version's reason."""
    section = report["versions"]
    records: dict[str, dict] = {r["case"]: r for r in list(report["cases"])
                                + list(section.get("cases", ())) if r.get("case")}
    out: dict[Key, Test] = {}
    for o in section["ops"]:
        for e in o["versions"]:
            for c in e["cells"]:
                key = (o["op"], "", e["version"], c["io"], c["index"])
                out[key] = _cell_test(key, c, records, waived, report)
            for label in e.get("undecided", ()):
                m = _LABEL.match(label)
                io, index, name = (m[1], int(m[2]), m[3]) if m else (label, -1, label)
                key = (o["op"], "", e["version"], io, index)
                out.setdefault(key, Test(
                    Grain.PARAMETER, o["op"], "", e["version"], io, index, name,
                    Result.SKIPPED, Why.UNDECIDED,
                    f"{e['decided_by']}: {e.get('reason') or 'no case reaches it'}"))
    return out


def _cell_test(key: Key, c: dict, records: dict[str, dict], waived: dict,
               report: dict) -> Test:
    op, domain, version, io, index = key
    cases = tuple(c.get("cases") or ())
    found = [(records[n], p) for n in cases if n in records
             for p in records[n].get("parameters") or () if (p["io"], p["index"]) == (io, index)]
    command = (_reproduce(report, op, cases[0]) if cases
               else by_type_command(report, op) if c.get("rule") == "by type" else None)
    head = (f"{c['verdict']}: tagged {c['tag']}"
            + (f", evidence supports {c['supports']}" if c.get("supports") else "")
            + f" (rule: {c['rule']}" + (f"; cases: {', '.join(cases)}" if cases else "") + ")")
    reason = c.get("reason") or next((p.get("reason") for _, p in found), "")
    message = f"{head}: {reason}" if reason else head

    def test(result: Result, why: Why | None, text: str = message) -> Test:
        return Test(Grain.PARAMETER, op, domain, version, io, index, c["name"], result, why,
                    text, cases, command)

    if c["failing"]:
        why = (Why.CONFLICT if c.get("rule") == "cases conflict" else
               Why.BY_TYPE if c.get("rule") == "by type" and c["verdict"] == "disagree" else
               Why.DISAGREE if c["verdict"] == "disagree" else Why.INCONCLUSIVE)
        return test(Result.FAILED, why)
    if c["verdict"] == "disagree":
        w = next((waived[k] for r, p in found
                  if (k := (r["op"], r["case"], f"{io} {index}")) in waived), None)
        declared = next((p["expected"]["reason"] for _, p in found if p.get("expected")), None)
        return test(Result.SKIPPED, Why.WAIVED if w else Why.DECLARED,
                    f"{message}; " + (f"waived: {w}" if w else f"declared: {declared}"))
    if c["verdict"] == "inconclusive":
        return test(Result.SKIPPED, Why.UNDECIDED)
    return test(Result.PASSED, None)


def _case_tests(report: dict[str, Any]) -> Iterable[Test]:
    """A case without a usable proof, a failed variant, an op nothing decides."""
    for r in report["cases"]:
        status = r.get("status")
        if status not in ("error", "invalid", "no-tags"):
            continue
        result, why, text = {
            "error": (Result.FAILED, Why.FAILED_CASE, r.get("error")),
            "invalid": (Result.FAILED, Why.INVALID_CASE, r.get("invalid")),
            "no-tags": (Result.SKIPPED, Why.NO_TAGS, r.get("error"))}[status]
        yield Test(Grain.CASE, r["op"], r.get("domain", ""), r.get("schema_version"), None,
                   None, None, result, why, f"{status}: {text}", (r["case"],),
                   _reproduce(report, r["op"], r["case"]), r.get("opset"))
    section = report.get("versions") or {}
    by_name = {r["case"]: r for r in section.get("cases", ()) if r.get("case")}
    for f in section.get("summary", {}).get("failed_variants", ()):
        name, r = f["case"], by_name.get(f["case"], {})
        text = f"{f['kind']}: {f['reason']}"
        result, why = ((Result.SKIPPED, Why.DECLARED_FAILURE) if f["declared"] else
                       (Result.FAILED, Why.FAILED_VARIANT))
        yield Test(Grain.VARIANT, f["op"], r.get("domain", ""), f["version"], None, None,
                   None, result, why,
                   text + (f"; declared: {f['declared']}" if f["declared"] else ""), (name,),
                   _reproduce(report, f["op"], name), r.get("opset"))
    for o in report["ops"]:
        if o["status"] == MISSING or (o["status"] == NO_TAGS and not o.get("parameters")
                                      and o["op"] not in {r["op"] for r in report["cases"]}):
            yield Test(Grain.OP, o["op"], "", o.get("schema_version"), None, None, None,
                       Result.SKIPPED, Why.NO_CASE if o["status"] == MISSING else Why.NO_TAGS,
                       f"{o['status']}: {o['reason']}")


def _gate_tests(doc: dict[str, Any]) -> Iterable[Test]:
    """PR mode's tests (``kind: pr-gate``): one per changed tag, its gate verdict as the
    result -- refuted fails (what makes the gate exit 1), waived and not proved are skipped
    with why, removed is skipped, inherited is skipped with a warning, confirmed and
    proposed pass -- plus one per failed proof. The reproduce command is the first
    witness's: the gate lists the deciding proof first (``judge.deciding_first``)."""
    from ..gate.judge import GateVerdict as G
    outcome = {G.REFUTED: (Result.FAILED, Why.REFUTED), G.WAIVED: (Result.SKIPPED, Why.WAIVED),
               G.NOT_PROVED: (Result.SKIPPED, Why.UNDECIDED),
               G.NEEDS_BUILD: (Result.SKIPPED, Why.NEEDS_BUILD),
               G.REMOVED: (Result.SKIPPED, Why.REMOVED),
               G.INHERITED: (Result.SKIPPED, Why.INHERITED),
               G.CONFIRMED: (Result.PASSED, None), G.PROPOSED: (Result.PASSED, None)}
    for c in doc["changes"]:
        for p in c["parameters"]:
            result, why = outcome[G(p["verdict"])]
            ws = p.get("witnesses") or []
            cmd = next((w["command"] for w in ws if w.get("command")), None)
            tag = f"PR tags it {p['pr']}" + (f" (base: {p['base']})" if p.get("base") else
                                             " (new)")
            yield Test(Grain.PARAMETER, c["op"], c.get("domain", ""), c["version"], p["io"],
                       p["index"],
                       p["name"], result, why, f"{p['verdict']}: {tag}: {p['why']}",
                       tuple(w["case"] for w in ws), cmd)
    for f in doc.get("failed", ()):
        yield Test(Grain.CASE, f["op"], "", None, None, None, None, Result.FAILED,
                   Why.FAILED_CASE, f"{f['status']}: {f['error']}", (f["case"],),
                   reproduce(f["op"], f["case"]))


def all_tests(report: dict[str, Any]) -> list[Test]:
    """Every test of a batch report (``verify-all`` or ``merge``) or of PR mode's
    document (``pr-gate``), failed ones first."""
    order = {Result.FAILED: 0, Result.SKIPPED: 1, Result.PASSED: 2}
    if report.get("kind") == "pr-gate":
        return sorted(_gate_tests(report), key=lambda t: (
            order[t.result], t.op, t.version or 0, t.grain, t.io or "", t.index or 0, t.label))
    waived = _waived(report)
    params = _latest(report, waived)
    if report.get("versions"):
        cells = _cells(report, waived)
        for key, t in params.items():   # what fails a default run fails here too
            if t.result is Result.FAILED and cells.get(key, t).result is not Result.FAILED:
                cells[key] = t
        params = cells
    found = list(params.values()) + list(_case_tests(report))
    return sorted(found, key=lambda t: (order[t.result], t.op, t.version or 0,
                                        t.grain, t.io or "", t.index or 0, t.label))


def counts(found: Iterable[Test]) -> dict[str, int]:
    """``{"tests", "passed", "failed", "skipped"}``."""
    found = list(found)
    return {"tests": len(found), **{r.value: sum(t.result is r for t in found) for r in Result}}
