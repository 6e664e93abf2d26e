"""The per-version verdicts of a ``verify-all --versions`` run: op x schema version x parameter.

Each schema version is judged against its own tags. A version's cell for a parameter is
decided by what its proofs *support* (the cases' own verdicts are against the same tag,
so one rule serves the case records and the variants alike):

- proofs: every record whose schema version is this one (a case at its own opset, or a
  variant ``<case>@<opset>``); cases supporting different tags leave the cell
  inconclusive (``cases conflict``), never picked;
- equivalence (versions in force only below opset 7, which no runtime executes): a
  parameter with the same io, position, name and types (a subset of them) as in the
  version in force at opset 7 takes that version's support, and the cell says so
  (``rule: same parameter as Add-7``, ``basis: Add-7``) -- data, not a silent copy;
- by type: a parameter whose allowed types carry no gradient, case or not;
- otherwise the cell is absent and the version says why (``reason``), typed.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from ..tags.schema import Formal, SchemaTags, UnknownOpError, schema_tags
from ..vocab import Tag, Verdict
from .versions import (MIN_RUNTIME_OPSET, Band, Planned, SchemaVersion, Selection,
                       schema_versions, version_at)

VERDICTS = ("agree", "disagree", "proposed", "inconclusive")
DECIDED = ("agree", "disagree", "proposed")

# how a version is decided (the column header of the closing counts)
PROVED, EQUIVALENCE, BY_TYPE, EXPLAINED, NO_TAGS = (
    "proved", "equivalence", "by type", "explained", "no tags")


def judge(tag: str, supports: str) -> str:
    """The verdict of evidence supporting ``supports`` against the schema's ``tag``."""
    if tag == Tag.UNKNOWN:
        return Verdict.PROPOSED.value
    return Verdict.AGREE.value if tag == supports else Verdict.DISAGREE.value


def _tags_at(tags: Callable[..., SchemaTags], v: SchemaVersion) -> SchemaTags | None:
    try:
        return tags(v.op, v.first, "")
    except UnknownOpError:
        return None


def _cell_from_proofs(f: Formal, hits: Sequence[tuple[dict, dict]],
                      fails: Callable[[dict, dict], bool]) -> dict[str, Any] | None:
    """One formal parameter's cell from the record parameters mapped to it."""
    if not hits:
        return None
    decided = [(r, p) for r, p in hits if p["verdict"] in DECIDED and p.get("supports")]
    supports = sorted({p["supports"] for _, p in decided})
    cases = sorted({r["case"] for r, _ in hits})
    rules = sorted({p["rule"] for _, p in (decided or hits)})
    cell = {"io": f.io, "index": f.position, "name": f.name, "tag": f.tag, "cases": cases,
            "rule": "; ".join(rules)}
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


def _by_type_cell(f: Formal) -> dict[str, Any] | None:
    if not f.non_differentiable_by_type:
        return None
    supports = Tag.NONDIFF.value
    return {"io": f.io, "index": f.position, "name": f.name, "tag": f.tag,
            "verdict": judge(f.tag, supports), "supports": supports, "rule": "by type",
            "cases": [], "failing": f.tag == Tag.DIFF}


def _same_parameter(f: Formal, g: Formal) -> bool:
    """``f`` (an old version's) is ``g`` (the version's at opset 7) for differentiability:
    same io, position, name and option, and every type ``f`` allows is allowed by ``g``
    (the same function on a subset of ``g``'s domain)."""
    return (f.io, f.position, f.name, f.option) == (g.io, g.position, g.name, g.option) and \
        set(f.types) <= set(g.types)


def _equivalent_cell(f: Formal, basis: SchemaTags, cells: dict[tuple[str, int], dict],
                     label: str) -> dict[str, Any] | None:
    g = basis.formal(f.io, f.position)
    theirs = cells.get((f.io, f.position))
    if g is None or theirs is None or not _same_parameter(f, g) or not theirs.get("supports"):
        return None
    return {"io": f.io, "index": f.position, "name": f.name, "tag": f.tag,
            "verdict": judge(f.tag, theirs["supports"]), "supports": theirs["supports"],
            "rule": f"same parameter as {label}", "basis": label, "cases": [],
            "failing": theirs["supports"] != f.tag and f.tag != Tag.UNKNOWN}


def _formals(t: SchemaTags) -> tuple[Formal, ...]:
    return t.inputs + t.outputs


def _records_by_version(records: Iterable[dict[str, Any]]) -> dict[tuple[str, int], list[dict]]:
    out: dict[tuple[str, int], list[dict]] = {}
    for r in records:
        if isinstance(r.get("schema_version"), int) and r.get("domain", "") == "":
            out.setdefault((r["op"], r["schema_version"]), []).append(r)
    return out


def _proof_cells(t: SchemaTags, recs: Sequence[dict[str, Any]],
                 fails: Callable[[dict, dict], bool]) -> dict[tuple[str, int], dict]:
    hits: dict[tuple[str, int], list] = {}
    for r in recs:
        for p in r.get("parameters", []):
            f = t.formal(p["io"], p["index"])
            if f is not None:
                hits.setdefault((f.io, f.position), []).append((r, p))
    cells = {}
    for f in _formals(t):
        cell = _cell_from_proofs(f, hits.get((f.io, f.position), ()), fails) or _by_type_cell(f)
        if cell is not None:
            cells[(f.io, f.position)] = cell
    return cells


def unrunnable(r: dict[str, Any]) -> bool:
    """A proof whose exported model no runtime runs (onnxruntime has no kernel for that
    version, and onnx.reference none either): its node cannot be measured, so its version
    is explained, not failed."""
    return isinstance(r.get("numeric"), dict) and r["numeric"].get("runtime") is None


def _why_unproved(v: SchemaVersion, recs: Sequence[dict], gaps: Sequence[Planned]) -> str:
    idle = [r for r in recs if unrunnable(r)]
    if idle:
        return "; ".join(f"{r['case']}: no runtime runs {v.label()} "
                         f"({(r['numeric'].get('why') or '')[:160]})" for r in idle[:2])
    errors = [r for r in recs if r.get("status") in ("error", "no-tags", "invalid")]
    if errors:
        return "; ".join(f"{r['case']}: {r.get('error') or r.get('invalid')}"
                         for r in errors[:2])
    mine = [g for g in gaps if g.version == v]
    if mine:
        return "; ".join(f"{g.base.name}: {g.gap.value}" for g in mine[:2])
    return "no case of this op"


def table(records: Sequence[dict[str, Any]], gaps: Sequence[Planned], selection: Selection,
          ops: Iterable[str], tags: Callable[..., SchemaTags] | None = None,
          is_waived: Callable[[dict, dict], bool] | None = None,
          targets: dict[str, int] | None = None) -> dict[str, Any]:
    """The ``versions`` section of a report: per op, per selected schema version, its cells
    and how it was decided; and the counts by band. ``records``: every proof record of the
    run (cases at their own opsets and variants); ``ops``: the ops run (with cases or decided
    by type); ``targets``: variant case -> the schema version it was made to prove (an error
    record has none of its own); ``is_waived``: a disagreement a waiver covers."""
    from .summary import fails as param_fails
    tags = tags or schema_tags
    waived = is_waived or (lambda r, p: False)

    def fails(r: dict, p: dict) -> bool:
        return (param_fails(p) and not unrunnable(r)
                and not (p["verdict"] == "disagree" and waived(r, p)))
    by_version = _records_by_version(records)
    errors: dict[tuple[str, int], list] = {}
    for r in records:
        if not isinstance(r.get("schema_version"), int) and r.get("case") in (targets or {}):
            errors.setdefault((r["op"], targets[r["case"]]), []).append(r)
    out_ops = []
    for op in sorted(set(ops)):
        versions = [v for v in schema_versions(op)
                    if selection.wants(v) or by_version.get((op, v.version))]
        if not versions:
            continue
        decided_cells: dict[int, dict[tuple[str, int], dict]] = {}
        rows = []
        # versions at or above opset 7 first: the old ones lean on the one in force at 7
        for v in sorted(versions, key=lambda v: v.band is Band.BELOW_RUNTIME):
            t = _tags_at(tags, v)
            entry: dict[str, Any] = {"version": v.version, "in_force": [v.first, v.last],
                                     "band": v.band.value}
            if t is None:
                rows.append({**entry, "decided_by": NO_TAGS, "cells": [],
                             "reason": "the tag source has no schema for this version"})
                continue
            recs = [r for r in by_version.get((op, v.version), ()) if r.get("parameters")]
            cells: dict[tuple[str, int], dict] = {}
            decided_by, basis = EXPLAINED, None
            if recs:
                cells = _proof_cells(t, recs, fails)
                decided_by = PROVED if any(
                    r.get("status") != "invalid" and not unrunnable(r) for r in recs) or any(
                    c.get("supports") and c["rule"] != "by type" and c.get("cases")
                    for c in cells.values()) else EXPLAINED
            elif v.band is Band.BELOW_RUNTIME:
                w = version_at(op, MIN_RUNTIME_OPSET)
                base = decided_cells.get(w.version) if w else None
                tw = _tags_at(tags, w) if w else None
                if base is not None and tw is not None:
                    basis = w.label()
                    for f in _formals(t):
                        cell = _equivalent_cell(f, tw, base, basis) or _by_type_cell(f)
                        if cell is not None:
                            cells[(f.io, f.position)] = cell
                    decided_by = EQUIVALENCE
            if not cells:
                cells = {(f.io, f.position): c for f in _formals(t)
                         if (c := _by_type_cell(f)) is not None}
                if cells and decided_by == EXPLAINED:
                    decided_by = BY_TYPE
            decided_cells[v.version] = cells
            entry.update({"decided_by": decided_by, "cells": [
                cells[(f.io, f.position)] for f in _formals(t) if (f.io, f.position) in cells]})
            undecided = [f"{f.io} {f.position} ({f.name})" for f in _formals(t)
                         if (f.io, f.position) not in cells]
            if basis:
                entry["basis"] = basis
            if decided_by != PROVED:
                entry["reason"] = (
                    f"decided by equivalence with {basis} (same parameters; below opset "
                    f"{MIN_RUNTIME_OPSET} no runtime runs it)" if decided_by == EQUIVALENCE
                    else _why_unproved(v, errors.get((op, v.version), [])
                                       + by_version.get((op, v.version), []), gaps))
            if undecided:
                entry["undecided"] = undecided
            rows.append(entry)
        rows.sort(key=lambda e: e["version"])
        out_ops.append({"op": op, "versions": rows})
    return {"selection": selection.text(), "summary": _summary(out_ops), "ops": out_ops}


def _summary(ops: Sequence[dict[str, Any]]) -> dict[str, Any]:
    bands: dict[str, dict[str, Any]] = {}
    for o in ops:
        for e in o["versions"]:
            b = bands.setdefault(e["band"], {
                "versions": 0, **{k: 0 for k in (PROVED, EQUIVALENCE, BY_TYPE, EXPLAINED,
                                                 NO_TAGS)},
                "parameters": {v: 0 for v in VERDICTS}, "undecided_parameters": 0})
            b["versions"] += 1
            b[e["decided_by"]] += 1
            for c in e["cells"]:
                b["parameters"][c["verdict"]] += 1
            b["undecided_parameters"] += len(e.get("undecided", ()))
    order = [b.value for b in Band]
    return {"by_band": {k: bands[k] for k in order if k in bands},
            "failing": sum(c["failing"] for o in ops for e in o["versions"] for c in e["cells"])}


def failed_variants(variants: Sequence[dict[str, Any]]) -> list[str]:
    """Variants whose proof failed a check or whose attribution is ambiguous, as a default
    run counts a failed or invalid case: the catalogue owes them a declaration (the case's
    ``opsets``) or a fix; an export no route reaches is an explained version, not this."""
    return [f"{r['case']}: {r['status']}" for r in variants
            if r.get("status") in ("failed", "invalid") and not unrunnable(r)]


def failing_cells(section: dict[str, Any]) -> list[tuple[str, int, dict]]:
    """(op, version, cell) of every cell that fails the run (an undeclared disagreement,
    cases in conflict, a failed check): what the exit code counts."""
    return [(o["op"], e["version"], c) for o in section["ops"] for e in o["versions"]
            for c in e["cells"] if c["failing"]]
