"""A proof record read back checked against the rules that make one: the one re-check of
every record torch-prover reads (a cache entry, a report's record given to ``merge`` or
``fix-tags``, an evidence directory's ``proof.json`` given to ``check-evidence``).

Nothing read can change a verdict (docs/safety.md). A record is used only if, re-derived
here, it says what a proof would: it is a record of this very case (op, case, kind,
opset, exporter, seeds, variant), made with the run's options (numeric checks on or off,
the tag source, the package versions), each parameter's tag is the tag
the run's tag source gives today (at the record's opset, and the latest one), its rule
and support are what the verdict table gives for its own recorded witnesses
(``verdict.rule_holds``), its verdict is that support judged against that tag
(``verdict.judge``), its declared verdict is the case's ``expect=``, and the record's
status follows from all of them (``record.status_of``). What it defends against: a stale,
damaged or hand-edited record, one made under other tags, rules or options. Not against a
deliberate forger who writes self-consistent false witness outcomes: whoever can write the
cache can as well edit the package; ``--no-cache`` proves everything afresh, and a report
is only as good as the run that made it (docs/safety.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..case import Case
from ..vocab import AutogradOutcome, NumericOutcome, Tag, Verdict
from .versions.float32_copy import KernelGap
from .numeric.numeric import FWD_TOL, STEP, VJP_TOL
from .numeric.precision import Given, Precision
from .record import status_of
from .versions.runtimes import version_at
from .rules.verdict import Rule, judge, rule_holds

TagsOf = Callable[[str, "int | None", str], Any]


@dataclass(frozen=True)
class RunFacts:
    """What the run that made a record was asked, as far as the reader knows it (``None``:
    not compared): a record of a ``--no-numeric`` run has no numeric check, and every record
    names the tag source and the package versions it was proved with."""

    numeric: bool | None = None
    tag_source: str | None = None
    versions: dict[str, str] | None = None


def _identity_problem(rec: dict[str, Any], case: Case) -> str | None:
    """Why ``rec`` is not a record of ``case`` itself (None: it is). A relabelled variant
    was exported by its case's own exporter (``engine/export.py``)."""
    exporter = case.exporter
    if rec.get("route") == "relabelled" and case.origin is not None:
        exporter = case.origin[0]
    want = {"op": case.op, "domain": case.domain, "case": case.name,
            "case_kind": case.kind, "exporter": exporter, "opset": case.export_opset,
            "variant_of": case.variant_of}
    for key, value in want.items():
        if rec.get(key) != value:
            return f"{key} {rec.get(key)!r}, the case's is {value!r}"
    return None


def _failed_case_problem(rec: dict[str, Any], tags: TagsOf) -> str | None:
    """A failed case holds no verdict to re-derive; it must be one (no parameters, an
    error), and a ``no-tags`` one only where the tag source lacks the op."""
    if rec.get("kind") != "failed-case" or rec.get("parameters") != [] or \
            not isinstance(rec.get("error"), str):
        return "a failed case without the shape of one"
    if rec["status"] == "no-tags":
        try:
            tags(rec["op"], rec.get("opset"), rec["domain"])
        except LookupError:
            return None
        return "a no-tags record, but the tag source has the op"
    return None


def _run_problem(rec: dict[str, Any], run: RunFacts) -> str | None:
    if run.tag_source is not None and rec.get("tags_from") != run.tag_source:
        return f"tags from {rec.get('tags_from')!r}, the run's are {run.tag_source!r}"
    if run.versions is not None and rec.get("versions") != run.versions:
        return f"made with {rec.get('versions')}, the run with {run.versions}"
    if run.numeric is False and rec.get("numeric") is not None:
        return "it holds a numeric check, the run had none (--no-numeric)"
    if run.numeric and rec.get("numeric") is None and not rec.get("invalid"):
        return "it holds no numeric check (made with --no-numeric), the run had them"
    return None


def _parameter_problem(p: dict[str, Any], case: Case | None, schema, latest) -> str | None:
    label = f"{p['io']} {p['index']}"
    formal = schema.formal(p["io"], p["index"])
    if formal is None or formal.tag != p["tag"]:
        return (f"{label}: the record says {p['tag']}, the tag source "
                f"{formal.tag if formal else 'has no such parameter'}")
    if p["name"] != formal.name:
        return f"{label}: named {p['name']!r}, the tag source's is {formal.name!r}"
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
    if not _reason_holds(Rule(p["rule"]), p["reason"], w):
        return f"{label}: its reason does not say what its witnesses found"
    if not rule_holds(Rule(p["rule"]), AutogradOutcome(w["autograd"]["outcome"]),
                      NumericOutcome(w["numeric"]["outcome"]), supports):
        return f"{label}: rule {p['rule']!r} and support do not follow from its witnesses"
    applies = case.conventions.get(label) if case is not None else None
    if Rule(p["rule"]) == Rule.CONVENTION and (applies is None
                                               or supports != applies.rule.implies
                                               or not applies.rule.founded_for(case.op)):
        return f"{label}: its convention is not the case's declaration"
    if Rule(p["rule"]) == Rule.UNFOUNDED and (applies is None
                                              or applies.rule.founded_for(case.op)):
        return f"{label}: a convention without precedent the case does not declare"
    if Verdict(p["verdict"]) != judge(supports, Tag(p["tag"])):
        return f"{label}: verdict {p['verdict']} does not follow from its support and tag"
    declared = case.expect.get(label) if case is not None else None
    recorded = (p.get("expected") or {}).get("verdict")
    if (declared.verdict if declared else None) != recorded:
        return f"{label}: declared verdict {recorded}, the case declares " \
               f"{declared.verdict if declared else 'none'}"
    return None


_DETAILS_IN_REASON = {rule: ("autograd", "numeric") for rule in (
    Rule.BOTH, Rule.NOT_EXERCISED, Rule.CONFLICT, Rule.NUMERIC_OVER_AUTOGRAD,
    Rule.NUMERIC_ONLY, Rule.AUTOGRAD_ONLY, Rule.NEEDS_NUMERIC, Rule.NOTHING_TO_MEASURE,
    Rule.VJP_FAILED)}
"""The witnesses whose details ``verdict.decide`` writes into a reason, per rule."""


def _reason_holds(rule: Rule, reason: Any, witnesses: dict[str, Any]) -> bool:
    """A reason a report shows says what its witnesses found: for a rule decided from the
    witnesses, each one's detail as ``verdict.decide`` writes it into the reason (a reason
    edited on its own, or a detail edited without it, no longer passes). A reason no rule
    builds from details (by type, a convention, a forward mismatch) is not checked here."""
    if not isinstance(reason, str):
        return False
    return all(str(witnesses[w]["detail"]) in reason for w in _DETAILS_IN_REASON.get(rule, ()))


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
    """A float32 copy (``numeric.copy``, ``engine/versions/float32_copy.py``) re-derived from its own
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


def record_problem(rec: Any, case: Case | None, tags: TagsOf,
                   run: RunFacts = RunFacts()) -> str | None:
    """Why ``rec`` is not what a proof of ``case`` under ``tags`` in ``run`` would say (None:
    it is). Any malformed field is a problem too, never a crash. ``case`` None: a record of
    no catalogue case (a ``run`` script's evidence), whose declarations (``expect=``,
    conventions) are then none."""
    if not isinstance(rec, dict):
        return "not a record"
    try:
        why = _identity_problem(rec, case) if case is not None else None
        if why is None and rec.get("status") in ("error", "no-tags"):
            return _failed_case_problem(rec, tags)
        why = why or _run_problem(rec, run)
        if why:
            return why
        if rec.get("kind") != "proof":
            return f"a {rec.get('kind')!r} document, not a proof record"
        if case is not None and rec.get("seeds") != list(case.seeds):
            return f"seeds {rec.get('seeds')}, the case's are {list(case.seeds)}"
        # ai.onnx: the schema in force at the export opset; another domain's node is at the
        # model's own import of that domain (engine.prove.domain_opset), which the record
        # names as its schema version: that version must be one the tag source has
        at = rec["opset"] if rec["domain"] in ("", "ai.onnx") else rec["schema_version"]
        schema = tags(rec["op"], at, rec["domain"])
        latest = tags(rec["op"], None, rec["domain"])
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
