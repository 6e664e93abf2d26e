"""The per-version verdicts of a ``verify-all --versions`` run: op x schema version x parameter.

Each schema version is judged against its own tags. A version's cell for a parameter is
decided by what its proofs *support* (the cases' own verdicts are against the same tag,
so one rule serves the case records and the variants alike):

- proofs: every record whose schema version is this one (a case at its own opset, or a
  variant ``<case>@<opset>``) that exercised the parameter -- a case declaring it
  ``unexercised`` (Resize's coordinate modes that ignore ``roi``) is no evidence about
  it; cases supporting different tags leave the cell inconclusive (``cases conflict``),
  never picked;
- a failed variant (``batch/failures.py``) proves nothing, and a parameter it would have
  exercised that no other proof decides is inconclusive and names the failure (rule
  ``variant failed``); an undeclared failure makes its version ``failed``, not proved;
- equivalence (versions in force only below opset 7, which no runtime runs): a parameter
  with the same io, position, name and types (a subset of them) as in the version in
  force at opset 7 takes that version's support, and the cell says so (``rule: same
  parameter as Add-7``, ``basis: Add-7``) -- only from a proved version, and a version
  with no such cell is not decided by it;
- by type: a parameter the schema's types decide (``engine/rules/by_type.py``), case or not;
- then the cross-version self-check (``batch/version_checks.py``): the same parameter
  decided two ways in two versions leaves both cells inconclusive.

Otherwise the cell is absent and the version says why (``reason``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..engine.rules.by_type import type_reason
from ..engine.rules.verdict import judge as verdict_judge
from ..tags.schema import Formal, SchemaTags, UnknownOpError, schema_tags
from ..vocab import Tag
from . import version_checks
from .failures import FailedVariant, failed_variants as find_failed, failure_of
from .versions import (MIN_RUNTIME_OPSET, Band, Planned, SchemaVersion, Selection,
                       schema_versions, version_at)

VERDICTS = ("agree", "disagree", "proposed", "inconclusive")
DECIDED = ("agree", "disagree", "proposed")

# how a version is decided (the column header of the closing counts)
PROVED, FAILED, EQUIVALENCE, BY_TYPE, EXPLAINED, NO_TAGS = (
    "proved", "failed", "equivalence", "by type", "explained", "no tags")
DECIDED_BY = (PROVED, FAILED, EQUIVALENCE, BY_TYPE, EXPLAINED, NO_TAGS)
VARIANT_FAILED = "variant failed"
"""The rule of a cell left inconclusive because the variant that exercised it failed."""


@dataclass(frozen=True)
class Declarations:
    """What the catalogue declares about its cases, by case name (the base case of a
    variant): ``fails_at`` (version -> why its variant fails there), ``unexercised`` (the
    (io, name) parameters it does not exercise) and ``exercised`` (those its own proof
    exercised: what a failed variant of it would have)."""

    fails_at: Mapping[str, Mapping[int, str]] = field(default_factory=dict)
    unexercised: Mapping[str, frozenset[tuple]] = field(default_factory=dict)
    exercised: Mapping[str, frozenset[tuple[str, str]]] = field(default_factory=dict)

    def skips(self, case: str, io: str, name: str, index: int | None = None) -> bool:
        """``case`` declares the parameter unexercised: the whole formal (io, name), or --
        given its node position -- one extra element of a variadic formal (io, name, index):
        Loop's int64 counter carried beside x leaves x's evidence for ``v_initial``."""
        declared = self.unexercised.get(case, frozenset())
        return (io, name) in declared or (index is not None and (io, name, index) in declared)


def judge(tag: str, supports: str) -> str:
    """The verdict of evidence supporting ``supports`` against the schema's ``tag``: the
    engine's own rule (``engine.rules.verdict.judge``), so a cell says what its records say (a
    body-dependent ``unknown`` against an unknown tag agrees; it proposes nothing)."""
    return verdict_judge(Tag(supports), Tag(tag)).value


def _tags_at(tags: Callable[..., SchemaTags], v: SchemaVersion) -> SchemaTags | None:
    try:
        return tags(v.op, v.first, "")
    except UnknownOpError:
        return None


def _base(r: Mapping[str, Any]) -> str:
    return str(r.get("variant_of") or r.get("case"))


def _cited(deciding: Sequence[tuple[dict, dict]], hits: Sequence[tuple[dict, dict]]
           ) -> dict[str, list[str]]:
    """A cell's ``cases``: the proofs that decided it; ``not_deciding``: the others that
    reached it (a failed variant, one whose verdict here is inconclusive), listed apart so a
    reader sees what the decision rests on (Max-6 is decided by max_ties, not by the failed
    max_broadcast@7)."""
    cases = sorted({r["case"] for r, _ in deciding})
    rest = sorted({r["case"] for r, _ in hits} - set(cases))
    return {"cases": cases, **({"not_deciding": rest} if rest else {})}


def _labelled(params: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """The ``convention`` a cell carries: the one its deciding verdicts name (a verdict a
    convention decided, or one the math decided under a convention without precedent).
    Every rule that copies a cell (equivalence, fix-tags) carries it on, so a verdict that
    rests on a convention is never written as the math's (docs/verdicts.md, "Conventions")."""
    named = sorted({str(p["convention"]) for p in params if p.get("convention")})
    return {"convention": ", ".join(named)} if named else {}


def _cell_from_proofs(f: Formal, hits: Sequence[tuple[dict, dict]],
                      fails: Callable[[dict, dict], bool]) -> dict[str, Any] | None:
    """One formal parameter's cell from the record parameters mapped to it."""
    if not hits:
        return None
    decided = [(r, p) for r, p in hits if p["verdict"] in DECIDED and p.get("supports")]
    supports = sorted({p["supports"] for _, p in decided})
    rules = sorted({p["rule"] for _, p in (decided or hits)})
    cell = {"io": f.io, "index": f.position, "name": f.name, "tag": f.tag,
            **_cited(decided or hits, hits), "rule": "; ".join(rules),
            **_labelled(p for _, p in decided)}
    if len(supports) == 1:
        verdict = judge(f.tag, supports[0])
        return {**cell, "verdict": verdict, "supports": supports[0],
                "failing": verdict == "disagree" and any(
                    p["verdict"] == "disagree" and fails(r, p) for r, p in hits)}
    if len(supports) > 1:
        sides = "; ".join(f"{r['case']}: {p['supports']}" for r, p in decided)
        return {**cell, "verdict": "inconclusive", "supports": None, "rule": "cases conflict",
                "reason": f"the cases support different tags ({sides})", "failing": True}
    r, p = hits[0]
    return {**cell, "verdict": "inconclusive", "supports": None, "reason": p["reason"],
            "failing": any(fails(r, p) for r, p in hits)}


def _by_type_cell(t: SchemaTags, f: Formal, case_less: bool) -> dict[str, Any] | None:
    """The cell the schema's types decide (``engine.rules.by_type``: the op-level rules too, so the
    table holds every by-type decision the ``ops`` section makes)."""
    why = type_reason(t, f, outputs_from_inputs=case_less)
    if why is None:
        return None
    supports = Tag.NONDIFF.value
    return {"io": f.io, "index": f.position, "name": f.name, "tag": f.tag,
            "verdict": judge(f.tag, supports), "supports": supports, "rule": "by type",
            "cases": [], "failing": f.tag == Tag.DIFF,
            **({"convention": str(why.convention)} if why.convention else {})}


def _fill_by_type(t: SchemaTags, cells: dict[tuple[str, int], dict], case_less: bool) -> None:
    """Every parameter of ``t`` no other cell decides, decided by the schema's types where
    they decide it (``_by_type_cell``): after the proofs, and after an equivalence."""
    for f in _formals(t):
        if (f.io, f.position) not in cells and (c := _by_type_cell(t, f, case_less)) is not None:
            cells[(f.io, f.position)] = c


def _same_parameter(f: Formal, g: Formal) -> bool:
    """``f`` (an old version's) is ``g`` (the version's at opset 7) for differentiability:
    same io, position, name and option, and every type ``f`` allows is allowed by ``g``
    (the same function on a subset of ``g``'s domain). Two differences that change no math
    are looked past: Single against Optional (whether the slot may be left empty, not what
    it holds: GRU-1's Y_h is GRU-7's) and the old ``name...`` spelling of a variadic
    (Split-1's ``outputs...`` is Split-2's ``outputs``)."""
    return (f.io, f.position, _spelled(f), _presence(f)) == \
        (g.io, g.position, _spelled(g), _presence(g)) and set(f.types) <= set(g.types)


def _spelled(f: Formal) -> str:
    return f.name.removesuffix("...") if f.option == "variadic" else f.name


def _presence(f: Formal) -> str:
    """The option, with Single and Optional as one: a value that is there or not."""
    return "variadic" if f.option == "variadic" else "single or optional"


def _equivalent_cell(f: Formal, basis: SchemaTags, cells: dict[tuple[str, int], dict],
                     label: str) -> dict[str, Any] | None:
    g = basis.formal(f.io, f.position)
    theirs = cells.get((f.io, f.position))
    if g is None or theirs is None or not _same_parameter(f, g) or not theirs.get("supports") \
            or theirs["rule"] == "by type":
        return None
    return {"io": f.io, "index": f.position, "name": f.name, "tag": f.tag,
            "verdict": judge(f.tag, theirs["supports"]), "supports": theirs["supports"],
            "rule": f"same parameter as {label}", "basis": label, "cases": [],
            **_labelled([theirs]),
            "failing": theirs["supports"] != f.tag and f.tag != Tag.UNKNOWN}


def _formals(t: SchemaTags) -> tuple[Formal, ...]:
    return t.inputs + t.outputs


def _proof_cells(t: SchemaTags, recs: Sequence[dict[str, Any]],
                 fails: Callable[[dict, dict], bool], unexercised: Callable[[dict, dict], bool]
                 ) -> dict[tuple[str, int], dict]:
    hits: dict[tuple[str, int], list] = {}
    for r in recs:
        for p in r.get("parameters", []):
            f = t.formal(p["io"], p["index"])
            if f is not None and (p.get("rule") == "by type" or not unexercised(r, p)):
                hits.setdefault((f.io, f.position), []).append((r, p))
    cells = {}
    for f in _formals(t):
        cell = _cell_from_proofs(f, hits.get((f.io, f.position), ()), fails)
        if cell is not None:
            cells[(f.io, f.position)] = cell
    return cells


def _failed_cells(t: SchemaTags, cells: dict[tuple[str, int], dict],
                  failed: Sequence[FailedVariant], decl: Declarations,
                  bases: Mapping[str, str]) -> None:
    """In place: a parameter no proof decides, that a failed variant would have exercised,
    is inconclusive naming the failure, never decided by the variants that ignore it."""
    for f in _formals(t):
        key = (f.io, f.position)
        if cells.get(key, {}).get("supports"):
            continue
        would = []
        for fv in failed:
            base = bases.get(fv.case, fv.case)
            if decl.skips(base, f.io, f.name):
                continue
            exercised = decl.exercised.get(base)
            if exercised is None or (f.io, f.name) in exercised:
                would.append(fv)
        if would:
            cells[key] = {"io": f.io, "index": f.position, "name": f.name, "tag": f.tag,
                          "verdict": "inconclusive", "supports": None, "rule": VARIANT_FAILED,
                          "cases": sorted(fv.case for fv in would), "failing": False,
                          "reason": "the variant that exercises it failed: "
                                    + "; ".join(fv.line() for fv in would)}


def _records_by_version(records: Iterable[dict[str, Any]]) -> dict[tuple[str, int], list[dict]]:
    out: dict[tuple[str, int], list[dict]] = {}
    for r in records:
        if isinstance(r.get("schema_version"), int) and r.get("domain", "") == "":
            out.setdefault((r["op"], r["schema_version"]), []).append(r)
    return out


def _why_unproved(v: SchemaVersion, failed: Sequence[FailedVariant],
                  gaps: Sequence[Planned]) -> str:
    if failed:
        return "; ".join(fv.line() for fv in failed[:3]) + (
            f"; and {len(failed) - 3} more" if len(failed) > 3 else "")
    mine = [g for g in gaps if g.version == v]
    if mine:
        return "; ".join(f"{g.base.name}: {g.gap.value}" for g in mine[:2])
    return "no case of this op"


def _version_of(r: Mapping[str, Any], targets: Mapping[str, int]) -> int | None:
    """The schema version a record stands for: its own, else the one its variant was made
    for, else the one in force at its opset."""
    if isinstance(r.get("schema_version"), int):
        return r["schema_version"]
    if r.get("case") in targets:
        return targets[r["case"]]
    opset = r.get("opset")
    v = version_at(str(r.get("op")), opset) if isinstance(opset, int) else None
    return v.version if v else None


def table(records: Sequence[dict[str, Any]], gaps: Sequence[Planned], selection: Selection,
          ops: Iterable[str], tags: Callable[..., SchemaTags] | None = None,
          is_waived: Callable[[dict, dict], bool] | None = None,
          targets: dict[str, int] | None = None, declarations: Declarations | None = None,
          case_less: Iterable[str] = ()) -> dict[str, Any]:
    """The ``versions`` section of a report: per op, per selected schema version, its cells
    and how it was decided; the failed variants; the counts by band. ``records``: every
    record of the run (cases at their own opsets and variants); ``ops``: the ops run (with
    cases or decided by type; ``case_less``: those without a case); ``targets``: variant
    case -> the schema version it was made to prove; ``is_waived``: a disagreement a waiver
    covers; ``declarations``: the catalogue's (``Declarations``)."""
    from .summary import fails as param_fails
    tags = tags or schema_tags
    waived = is_waived or (lambda r, p: False)
    decl = declarations or Declarations()
    targets = targets or {}
    case_less = set(case_less)
    bases = {str(r.get("case")): _base(r) for r in records}

    def declared_at(r: Mapping[str, Any], version: int | None) -> str | None:
        return decl.fails_at.get(_base(r), {}).get(version) if version else None

    failed = find_failed(records, lambda r: _version_of(r, targets), declared_at)
    failed_by_version: dict[tuple[str, int | None], list[FailedVariant]] = {}
    for fv in failed:
        failed_by_version.setdefault((fv.op, fv.version), []).append(fv)

    def fails(r: dict, p: dict) -> bool:
        return (param_fails(p) and failure_of(r) is None
                and not (p["verdict"] == "disagree" and waived(r, p)))

    def unexercised(r: dict, p: dict) -> bool:
        return decl.skips(_base(r), p["io"], p["name"], p["index"])

    by_version = _records_by_version(records)
    out_ops = []
    flagged = 0
    for op in sorted(set(ops)):
        versions = [v for v in schema_versions(op)
                    if selection.wants(v) or by_version.get((op, v.version))]
        if not versions:
            continue
        rows: dict[int, dict[str, Any]] = {}
        cells_of: dict[int, dict[tuple[str, int], dict]] = {}
        tags_of: dict[int, SchemaTags] = {}
        for v in versions:
            t = _tags_at(tags, v)
            entry: dict[str, Any] = {"version": v.version, "in_force": [v.first, v.last],
                                     "band": v.band.value}
            rows[v.version] = entry
            if t is None:
                entry.update({"decided_by": NO_TAGS, "cells": [],
                              "reason": "the tag source has no schema for this version"})
                continue
            tags_of[v.version] = t
            if v.band is Band.BELOW_RUNTIME:
                continue   # after every version it may lean on
            here = failed_by_version.get((op, v.version), [])
            recs = [r for r in by_version.get((op, v.version), ()) if r.get("parameters")]
            proofs = [r for r in recs if failure_of(r) is None]
            cells = _proof_cells(t, recs, fails, unexercised)
            # the types decide a parameter case or no case, so a failed variant that would
            # have exercised it leaves it decided (Scatter-11's int64 indices)
            _fill_by_type(t, cells, op in case_less)
            _failed_cells(t, cells, here, decl, bases)
            cells_of[v.version] = cells
            undeclared = [fv for fv in here if not fv.declared]
            if undeclared:
                decided_by = FAILED
            elif proofs:
                decided_by = PROVED
            elif cells and not here and all(c["rule"] == "by type" for c in cells.values()):
                decided_by = BY_TYPE
            else:
                decided_by = EXPLAINED
            entry["decided_by"] = decided_by
            if decided_by != PROVED:
                entry["reason"] = ("not proved: " if decided_by == FAILED else "") + \
                    _why_unproved(v, here, gaps)
        flagged += version_checks.flag(op, cells_of)
        for v in versions:   # below opset 7: by equivalence with the version at opset 7
            entry, t = rows[v.version], tags_of.get(v.version)
            if t is None or v.band is not Band.BELOW_RUNTIME:
                continue
            cells, basis = _equivalence(op, v, t, tags, rows, cells_of, case_less)
            cells_of[v.version] = cells
            entry["decided_by"] = EQUIVALENCE if basis else (
                BY_TYPE if cells else EXPLAINED)
            if basis:
                entry["basis"] = basis
                entry["reason"] = (f"decided by equivalence with {basis} (same parameters; "
                                   f"below opset {MIN_RUNTIME_OPSET} no runtime runs it)")
            else:
                entry["reason"] = _no_equivalence(op, v, rows, gaps)
        for v in versions:
            entry, t = rows[v.version], tags_of.get(v.version)
            if t is None:
                continue
            cells = cells_of[v.version]
            entry["cells"] = [cells[(f.io, f.position)] for f in _formals(t)
                              if (f.io, f.position) in cells]
            undecided = [f"{f.io} {f.position} ({f.name})" for f in _formals(t)
                         if (f.io, f.position) not in cells]
            if undecided:
                entry["undecided"] = undecided
            rows[v.version] = {k: entry[k] for k in (
                "version", "in_force", "band", "decided_by", "cells", "basis", "reason",
                "undecided") if k in entry}
        out_ops.append({"op": op, "versions": [rows[v.version] for v in versions]})
    summary = _summary(out_ops)
    summary["failed_variants"] = [fv.as_json() for fv in failed]
    summary["undeclared_failures"] = sum(not fv.declared for fv in failed)
    summary["versions_disagree"] = flagged
    summary["stale_declarations"] = [
        f"{r['case']}: {r['op']}-{r['schema_version']}" for r in records
        if r.get("variant_of") and failure_of(r) is None
        and declared_at(r, r.get("schema_version"))]
    return {"selection": selection.text(), "summary": summary, "ops": out_ops}


def _equivalence(op: str, v: SchemaVersion, t: SchemaTags, tags: Callable[..., SchemaTags],
                 rows: dict[int, dict], cells_of: dict[int, dict], case_less: set[str]
                 ) -> tuple[dict[tuple[str, int], dict], str | None]:
    """The cells of a version in force below opset 7 (by equivalence with the proved version
    at opset 7, then by type), and the basis' label (None: no cell came from it)."""
    w = version_at(op, MIN_RUNTIME_OPSET)
    base = cells_of.get(w.version) if w and rows.get(w.version, {}).get(
        "decided_by") == PROVED else None
    tw = _tags_at(tags, w) if w else None
    cells: dict[tuple[str, int], dict] = {}
    label = w.label() if w else None
    if base is not None and tw is not None:
        for f in _formals(t):
            cell = _equivalent_cell(f, tw, base, label)
            if cell is not None:
                cells[(f.io, f.position)] = cell
    basis = label if cells else None
    _fill_by_type(t, cells, op in case_less)
    return cells, basis


def _no_equivalence(op: str, v: SchemaVersion, rows: dict[int, dict],
                    gaps: Sequence[Planned]) -> str:
    """Why a version below opset 7 is not decided by equivalence (an equivalence with no
    cell is no decision)."""
    w = version_at(op, MIN_RUNTIME_OPSET)
    if w is None:
        return f"in force only below opset {MIN_RUNTIME_OPSET}, and no version at opset " \
               f"{MIN_RUNTIME_OPSET} to be equivalent to"
    at7 = rows.get(w.version)
    if at7 is None or at7.get("decided_by") != PROVED:
        why = (at7 or {}).get("reason") or "not in this run"
        return (f"no equivalence: {w.label()}, the version in force at opset "
                f"{MIN_RUNTIME_OPSET}, is {(at7 or {}).get('decided_by', 'not run')} "
                f"({why})")
    return (f"no equivalence: no parameter is the same as a decided one of {w.label()} "
            f"(the version in force at opset {MIN_RUNTIME_OPSET})")


def _summary(ops: Sequence[dict[str, Any]]) -> dict[str, Any]:
    bands: dict[str, dict[str, Any]] = {}
    for o in ops:
        for e in o["versions"]:
            b = bands.setdefault(e["band"], {
                "versions": 0, **{k: 0 for k in DECIDED_BY},
                "parameters": {v: 0 for v in VERDICTS}, "undecided_parameters": 0})
            b["versions"] += 1
            b[e["decided_by"]] += 1
            for c in e["cells"]:
                b["parameters"][c["verdict"]] += 1
            b["undecided_parameters"] += len(e.get("undecided", ()))
    order = [b.value for b in Band]
    return {"by_band": {k: bands[k] for k in order if k in bands},
            "failing": sum(c["failing"] for o in ops for e in o["versions"] for c in e["cells"])}


def failing_cells(section: dict[str, Any]) -> list[tuple[str, int, dict]]:
    """(op, version, cell) of every cell that fails the run (an undeclared disagreement,
    cases in conflict, versions that disagree, a failed check): what the exit code counts."""
    return [(o["op"], e["version"], c) for o in section["ops"] for e in o["versions"]
            for c in e["cells"] if c["failing"]]
