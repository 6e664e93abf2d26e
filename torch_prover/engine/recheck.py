"""A proof record read back (a cache entry) checked against the rules that make one.

The cache must not be able to change a verdict (docs/commands.md, "Cache"). A cached record is used
only if, re-derived here, it says what a proof would: each parameter's tag is the tag
the run's tag source gives today (at the record's opset, and the latest one), its rule
and support are what the verdict table gives for its own recorded witnesses
(``verdict.rule_holds``), its verdict is that support judged against that tag
(``verdict.judge``), its declared verdict is the case's ``expect=``, and the record's
status follows from all of them (``record.status_of``). What it defends against: a stale
or hand-edited entry, an entry made under other tags or rules. Not against a deliberate
forger who writes self-consistent false witness outcomes: whoever can write the cache can
as well edit the package; ``--no-cache`` proves everything afresh.
"""
from __future__ import annotations

from typing import Any, Callable

from ..case import Case
from ..vocab import AutogradOutcome, NumericOutcome, Tag, Verdict
from .float32_copy import KernelGap
from .numeric import FWD_TOL, STEP, VJP_TOL
from .precision import Given, Precision
from .record import status_of
from .runtimes import version_at
from .verdict import Rule, judge, rule_holds

TagsOf = Callable[[str, "int | None", str], Any]


def _parameter_problem(p: dict[str, Any], case: Case, schema, latest) -> str | None:
    label = f"{p['io']} {p['index']}"
    formal = schema.formal(p["io"], p["index"])
    if formal is None or formal.tag != p["tag"]:
        return (f"{label}: the record says {p['tag']}, the tag source "
                f"{formal.tag if formal else 'has no such parameter'}")
    newest = latest.formal(p["io"], p["index"])
    newest_tag = newest.tag if newest is not None else None
    if newest_tag is not None and newest_tag != formal.tag:
        if p.get("tag_latest") != newest_tag:
            return f"{label}: the latest schema's tag is {newest_tag}, not {p.get('tag_latest')}"
        supports = _tag(p["supports"])
        want = None if supports is None else judge(supports, Tag(newest_tag))
        # an ambiguous case's parameters keep the verdict_latest their evidence gave
        if p.get("verdict_latest") != want and p["rule"] != Rule.AMBIGUOUS:
            return f"{label}: verdict_latest does not follow from its support"
    elif "tag_latest" in p:
        return f"{label}: tag_latest {p['tag_latest']} but the latest schema's tag is the same"
    supports = _tag(p["supports"])
    w = p["witnesses"]
    if not rule_holds(Rule(p["rule"]), AutogradOutcome(w["autograd"]["outcome"]),
                      NumericOutcome(w["numeric"]["outcome"]), supports):
        return f"{label}: rule {p['rule']!r} and support do not follow from its witnesses"
    applies = case.conventions.get(label)
    if Rule(p["rule"]) == Rule.CONVENTION and (applies is None
                                               or supports != applies.rule.implies
                                               or not applies.rule.founded_for(case.op)):
        return f"{label}: its convention is not the case's declaration"
    if Rule(p["rule"]) == Rule.UNFOUNDED and (applies is None
                                              or applies.rule.founded_for(case.op)):
        return f"{label}: a convention without precedent the case does not declare"
    if Verdict(p["verdict"]) != judge(supports, Tag(p["tag"])):
        return f"{label}: verdict {p['verdict']} does not follow from its support and tag"
    declared = case.expect.get(label)
    recorded = (p.get("expected") or {}).get("verdict")
    if (declared.verdict if declared else None) != recorded:
        return f"{label}: declared verdict {recorded}, the case declares " \
               f"{declared.verdict if declared else 'none'}"
    return None


def _fidelity_problem(rec: dict[str, Any]) -> str | None:
    """A run that is not one of its schema version (``fidelity``) decides nothing but by
    type, and only such a run has parameters under the rule that says so."""
    unfaithful = bool((rec.get("fidelity") or {}).get("problems"))
    for p in rec["parameters"]:
        rule = Rule(p["rule"])
        if unfaithful and rule not in (Rule.UNFAITHFUL, Rule.BY_TYPE, Rule.AMBIGUOUS):
            return f"{p['io']} {p['index']}: rule {p['rule']!r} in a run that is not one " \
                   f"of its schema version"
        if not unfaithful and rule == Rule.UNFAITHFUL:
            return f"{p['io']} {p['index']}: rule {p['rule']!r} without the fidelity " \
                   f"problems that make it"
    return None


def _copy_problem(rec: dict[str, Any], case: Case) -> str | None:
    """A float32 copy (``numeric.copy``, ``engine/float32_copy.py``) re-derived from its own
    fields: onnxruntime ran it, at the version in force of the op it names, its precision
    is float32 (or coarser) with that precision's step and tolerances, its words are its
    kernel's, and the test data re-runs the same copy; no copy, no ``test_data.copy``."""
    num = rec.get("numeric") or {}
    data = rec.get("test_data") or {}
    copy = num.get("copy")
    if copy is None:
        return "test_data runs a float32 copy no numeric check ran" if data.get("copy") \
            else None
    gap = KernelGap.from_record(copy)
    if copy != gap.record() or (gap.op is not None and gap.version != version_at(
            gap.op, rec["opset"])):
        return "numeric.copy is not what its kernel gives"
    if (num.get("runtime"), data.get("runtime"), data.get("copy")) != (
            "onnxruntime", "onnxruntime", "float32"):
        return "a float32 copy that is not onnxruntime's, or not the test data's"
    p = num.get("precision") or {}
    computed = p.get("computed")
    given = Precision(str(p.get("declared")), str(computed), "onnxruntime",
                      Given("float32", gap.short()))
    if computed not in STEP or computed == "float64" or p.get("why") != given.words():
        return "a float32 copy whose precision is not float32's"
    if (num.get("step"), num.get("fwd_tol"), num.get("vjp_tol")) != (
            STEP[computed], FWD_TOL[computed] if case.fwd_tol is None else case.fwd_tol,
            VJP_TOL[computed] if case.vjp_tol is None else case.vjp_tol):
        return f"a float32 copy without {computed}'s step and tolerances"
    return None


def _tag(value: Any) -> Tag | None:
    return None if value is None else Tag(value)


def record_problem(rec: dict[str, Any], case: Case, tags: TagsOf) -> str | None:
    """Why ``rec`` is not what a proof of ``case`` under ``tags`` would say (None: it is).
    Any malformed field is a problem too, never a crash."""
    try:
        if rec.get("status") == "no-tags":
            try:
                tags(case.op, rec.get("opset"), case.domain)
            except LookupError:
                return None
            return "a no-tags record, but the tag source has the op"
        schema = tags(case.op, rec["opset"], case.domain)
        latest = tags(case.op, None, case.domain)
        if rec.get("schema_version") != schema.since_version:
            return f"schema version {rec.get('schema_version')}, the tag source " \
                   f"{schema.since_version}"
        for p in rec["parameters"]:
            why = _parameter_problem(p, case, schema, latest)
            if why:
                return why
        why = _fidelity_problem(rec) or _copy_problem(rec, case)
        if why:
            return why
        want = status_of(bool(rec.get("invalid")), [
            (Verdict(p["verdict"]), Rule(p["rule"]),
             Verdict(p["expected"]["verdict"]) if p.get("expected") else None)
            for p in rec["parameters"]])
        if rec.get("status") != want:
            return f"status {rec.get('status')}, its verdicts give {want}"
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return f"malformed record ({type(exc).__name__}: {exc})"
    return None
