"""verify-all's third numeric witness: every decided cell measured again at ONNX's own node
test points (``engine/onnx_points``; docs/verdicts.md, "ONNX's points").

A run measures, per schema version ONNX's tests exercise, at most ``PER_VERSION`` of its
tests (``engine/onnx_points/witness.choose``: coverage of the parameters first). Why four:
measuring is cheap (all 1,342 usable tests of onnx 1.23.2 take ~9 s, four per version
~2.5 s) but a default run's cold time is held to 1.5x (docs/performance.md). One test per
version already gives every parameter some test gives a float its point; more show a
derivative where the first test's inputs sit where it vanishes: on the committed evidence's
cells, 4 tests reach 403 of the 406 agreements all tests reach (1 test: 378, and 7 cells not
exercised against 1), docs/verdicts.md "How many". The measured witnesses are cached (one JSON file
keyed on the package's source, the evidence packages' versions, the generators' digest and
``PER_VERSION``), so a warm run reads one file; the collected tests themselves are cached
apart (``engine/onnx_points/store.py``) because collecting is most of a cold run's cost.

The section says, per decided cell (the cases' records in a default run; the per-version
table's cells with ``--versions``, where each cell also carries ``onnx_points``), whether
ONNX's points agree, contradict, did not exercise it, or were not available, and lists the
tests whose expected outputs the runtime does not reproduce (their points unused).
"""
from __future__ import annotations

import functools
import hashlib
import json
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Collection, Iterable, Mapping, Sequence

import numpy as np
import onnx

from ..engine.onnx_points import source as points_source
from ..engine.onnx_points.judge import cell_state
from ..engine.onnx_points.store import generators_digest, installed_tests
from ..engine.onnx_points.witness import TestWitness, choose, measure_test
from ..engine.record import versions as installed_versions
from ..engine.rules.verdict import Rule
from ..compat import StrEnum
from ..vocab import NumericOutcome, PointsSkip, PointsState, Tag
from . import points_ahead, points_early, timeline

PER_VERSION = 4
FORMAT = 1
DECIDES = (Tag.DIFF, Tag.NONDIFF)
"""What a cell's evidence can support that ONNX's points can check (a convention's cell may
support ``unknown``: nothing to measure against)."""


def by_convention(rule: str | None) -> bool:
    """Whether a verdict's rule (a record parameter's, or a version cell's ``; ``-joined
    rules) is a named convention's alone. ONNX's points measure the math, and a convention
    decides against the math by declaration (LayerNormalization-17's Mean is smooth in X, a
    state output by convention): such a cell is not checked, as fix-tags' guard does not
    check a convention's edit -- its record already shows the math it sets aside."""
    return bool(rule) and set(str(rule).split("; ")) == {Rule.CONVENTION.value}


class PointsOrigin(StrEnum):
    """Where a run's ONNX points came from: said with every verdict they decide."""
    COMMITTED = "the PR's committed tests"     # --onnx-src: onnx/backend/test/data/node
    GENERATORS = "the PR's generators"         # --onnx-src: onnx/backend/test/case/node/*.py
    INSTALLED = "the installed onnx's tests"   # onnx.backend.test.case.node, collected


@dataclass(frozen=True)
class PointsRun:
    """The node tests measured for one run: by (op, schema version) the witnesses of the
    tests chosen (a fidelity mismatch included, its points unused), and where they came from.
    ``tested``: every (op, schema version) the collected ops' usable tests are of, measured
    or not (a run measures only the versions its cells need: what a cell's "its tests are
    of" names); empty when every one was measured."""

    source: str
    per_version: int
    by_version: Mapping[tuple[str, int], tuple[TestWitness, ...]]
    skipped: Mapping[str, int]          # PointsSkip value -> tests giving no points
    warnings: tuple[str, ...] = ()
    origin: PointsOrigin = PointsOrigin.INSTALLED
    tested: frozenset[tuple[str, int]] = frozenset()

    def outcomes(self, op: str, version: int, io: str, name: str) -> list[NumericOutcome]:
        return [p.outcome for w in self.by_version.get((op, version), ()) if w.skip is None
                for p in w.params if p.io == io and p.name == name]

    def used(self, op: str, version: int) -> list[str]:
        return [w.test for w in self.by_version.get((op, version), ()) if w.skip is None]

    def versions_of(self, op: str) -> set[int]:
        """The schema versions of ``op`` ONNX's usable tests are of."""
        return {v for o, v in (self.tested or self.by_version) if o == op}


def _usable(tests: Sequence[points_source.NodeTest | points_source.Skipped],
            keys: Collection[tuple[str, int]] | None, ops: Collection[str] | None = None
            ) -> tuple[list[points_source.NodeTest | points_source.Skipped],
                       frozenset[tuple[str, int]]]:
    """The tests to measure -- ``keys``: only those (op, version)s' (and those ops' skipped
    tests), else ``ops``: only those ops', else all -- and, when ``keys`` leaves some out,
    every (op, version) a usable test of those ops is of."""
    if keys is None and ops is None:
        return list(tests), frozenset()
    wanted = set(keys) if keys is not None else None
    names = {op for op, _ in wanted} if wanted is not None else set(ops or ())
    tested = frozenset((t.op, t.version) for t in tests
                       if isinstance(t, points_source.NodeTest) and t.op in names)
    return [t for t in tests if t.op in names and (
        wanted is None or isinstance(t, points_source.Skipped) or (t.op, t.version) in wanted)
            ], tested if wanted is not None else frozenset()


def _measure(tests: Sequence[points_source.NodeTest | points_source.Skipped], per_version: int,
             body: bool) -> tuple[dict[tuple[str, int], tuple[TestWitness, ...]], dict[str, int]]:
    by: dict[tuple[str, int], list[points_source.NodeTest]] = defaultdict(list)
    skips: Counter[str] = Counter()
    for t in tests:
        if isinstance(t, points_source.Skipped):
            skips[t.reason.value] += 1
        else:
            by[(t.op, t.version)].append(t)
    # the reference evaluator warns about the values of ONNX's edge-case tests (Mod by 0)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return ({k: tuple(measure_test(t, body) for t in choose(v, per_version))
                 for k, v in sorted(by.items())}, dict(sorted(skips.items())))


def _cache_path(cache_dir: Path, per_version: int, body: bool,
                keys: Collection[tuple[str, int]] | None, ops: Collection[str] | None) -> Path:
    from .cache import engine_digest
    key = json.dumps({"format": FORMAT, "engine": engine_digest(), "tests": generators_digest(),
                      "versions": installed_versions(), "per_version": per_version,
                      "body": body, "keys": sorted(keys) if keys is not None else None,
                      "ops": sorted(ops) if ops is not None else None},
                     sort_keys=True)
    return cache_dir / f"onnx-points-{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"


def _from_cache(path: Path) -> tuple[dict, dict, frozenset] | None:
    try:
        d = json.loads(path.read_text())
        by = {(e["op"], e["version"]): tuple(TestWitness.from_dict(w) for w in e["tests"])
              for e in d["by_version"]}
        return (by, {PointsSkip(k).value: int(n) for k, n in d["skipped"].items()},
                frozenset((str(op), int(v)) for op, v in d["tested"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None   # a damaged or foreign entry is a miss


def measure_installed(cache_dir: Path | None, per_version: int = PER_VERSION,
                      body: bool = False, keys: Collection[tuple[str, int]] | None = None,
                      ops: Collection[str] | None = None,
                      ahead: Mapping[str, Any] | None = None) -> PointsRun:
    """The installed onnx's node tests, measured (from the cache when it holds them);
    ``body``: the function-body witness too (case-free verdicts). ``keys``: only those
    (op, schema version)s' tests are measured, and only their ops' tests collected; else
    ``ops``: only those ops' (None: every test). ``ahead``: what ``collecting`` measured
    beside the batch, used when it holds every one of ``keys`` (``points_ahead.take``)."""
    label = f"onnx {onnx.__version__} (installed): onnx.backend.test.case.node"
    keys = sorted(set(keys)) if keys is not None else None
    ops = sorted({op for op, _ in keys} if keys is not None else set(ops)) \
        if keys is not None or ops is not None else None
    path = _cache_path(cache_dir, per_version, body, keys, ops) if cache_dir is not None else None
    cached = _from_cache(path) if path is not None and path.is_file() else None
    if cached is not None:
        by, skips, tested = cached
        return PointsRun(label, per_version, by, skips, (), tested=tested)
    got = points_ahead.take(ahead, keys, per_version, body)   # measured beside the batch
    if got is not None:
        by, skips, tested, notes = got
    else:
        tests, warning = installed_tests(cache_dir, ops)
        chosen, tested = _usable(tests, keys, ops)
        by, skips = _measure(chosen, per_version, body)
        notes = [warning] if warning else []
    if path is not None:
        from ..output.evidence import write_text
        saved = {"by_version": [{"op": op, "version": v, "tests": [w.as_dict() for w in ws]}
                                for (op, v), ws in by.items()], "skipped": skips,
                 "tested": sorted(tested)}
        try:
            write_text(path, json.dumps(saved) + "\n")
        except OSError as exc:
            notes.append(f"cache {cache_dir} not written ({exc.strerror or exc}); "
                         "ONNX's points are kept")
    timeline.mark("ONNX's points: measured")
    return PointsRun(label, per_version, by, skips, tuple(notes), tested=tested)


def collecting(cache_dir: Path, cases: Iterable[Any], per_version: int = PER_VERSION
               ) -> Callable[[], dict[str, Any]]:
    """ONNX's points of ``cases``, collected and measured beside verify-all's batch
    (``pool.run_batch``'s ``beside``): the installed onnx's tests of their ops, written to
    the cache (``store``) -- ~8 s of CPU in a cold default run, while a core idled through
    the exporter's warm-up -- and the tests of the schema versions the cases are of,
    measured (``points_ahead``: ~1.5 s the parent would spend after the batch). Not with
    ``--jobs 1``: one process at work was asked for."""
    cases = list(cases)
    ops = sorted({c.op for c in cases if c.domain == ""})
    points_early.go(ops)   # the tests built since the start: write them (batch/points_early)
    return functools.partial(_ahead, cache_dir, ops, points_ahead.predicted(cases), per_version)


def _ahead(cache_dir: Path, ops: list[str], keys: list[tuple[str, int]], per_version: int
           ) -> dict[str, Any]:
    early = points_early.wait()   # the tests built ahead, in the cache (or None: not all)
    with points_source.without_snippets():   # this process collects and exits
        tests, warning = installed_tests(cache_dir, ops)
    by, _ = _measure(_usable(tests, keys)[0], per_version, False)
    return {**points_ahead.payload(ops, tests, by, per_version, warning), "early": early}


def measure_versions(tests: Sequence[points_source.NodeTest | points_source.Skipped],
                     keys: Iterable[tuple[str, int]], per_version: int = PER_VERSION,
                     body: bool = True) -> PointsRun:
    """Only these (op, schema version)s' tests, measured now and not cached: what ``coverage``
    asks for the few versions no case reaches (``batch/coverage_case_free.py``); the skipped
    counts are those of these ops' tests."""
    some, tested = _usable(tests, set(keys))
    by, skips = _measure(some, per_version, body)
    return PointsRun(f"onnx {onnx.__version__} (installed): onnx.backend.test.case.node",
                     per_version, by, skips, (), tested=tested)


@dataclass(frozen=True)
class Points:
    """The node tests consulted for a few schema versions: every installed test (to say why
    a version has none) and the wanted versions' measured witnesses."""

    tests: Sequence[points_source.NodeTest | points_source.Skipped]
    run: PointsRun
    warnings: tuple[str, ...]


def points_for(keys: Iterable[tuple[str, int]], cache_dir: Path | None,
               body: bool = True) -> Points | None:
    """ONNX's node tests of these (op, schema version)s, read from the result cache's
    collection and measured (``measure_versions``); None when none is asked (nothing
    collected, nothing read): what ``coverage`` and fix-tags' guard ask."""
    wanted = sorted(set(keys))
    if not wanted:
        return None
    tests, warning = installed_tests(cache_dir, {op for op, _ in wanted})
    return Points(tests, measure_versions(tests, wanted, body=body), (warning,) if warning else ())


def measure_checkout(checkout: Path, per_version: int = PER_VERSION, body: bool = False,
                     keys: Collection[tuple[str, int]] | None = None,
                     ops: Collection[str] | None = None) -> PointsRun:
    """An ONNX checkout's committed node tests (``--onnx-src``), measured (not cached: a PR's
    checkout changes under the same path); ``keys``/``ops`` as ``measure_installed``'s."""
    chosen, tested = _usable(points_source.from_checkout(checkout), keys, ops)
    by, skips = _measure(chosen, per_version, body)
    return PointsRun(f"ONNX checkout {checkout}: {points_source.NODE_DATA}", per_version, by,
                     skips, (), tested=tested)


def measure_generated(checkout: Path, ops: Iterable[str], per_version: int = PER_VERSION,
                      body: bool = False, new: Mapping[str, Any] | None = None) -> PointsRun:
    """The tests an ONNX checkout's own generators write for ``ops`` (a checkout that
    commits no node tests: ``engine/onnx_points/generators.py``), measured (not cached);
    ``new``: ops the installed onnx lacks (op -> the PR's SchemaTags), measured in the child
    with the PR's reference implementation."""
    from ..engine.onnx_points.generators import GENERATORS, generate
    made = generate(checkout, ops, new=dict(new or {}), per_version=per_version)
    by, skips = _measure(made.tests, per_version, body)
    for w in made.measured:
        by[(w.op, w.version)] = by.get((w.op, w.version), ()) + (w,)
    files = ", ".join(made.files) or "none"
    return PointsRun(f"ONNX checkout {checkout}: {GENERATORS}/ ({files}), run isolated",
                     per_version, by, skips, made.problems, PointsOrigin.GENERATORS)


def measured(onnx_src: str | None, cache_dir: str | None, per_version: int, body: bool,
             keys: Collection[tuple[str, int]] | None = None,
             ops: Collection[str] | None = None,
             new: Mapping[str, Any] | None = None,
             ahead: Mapping[str, Any] | None = None) -> PointsRun:
    """A run's points: with ``--onnx-src`` the checkout's committed tests, else (a checkout
    after onnx #7959) the tests its generators write for the ops asked; without it the
    installed onnx's. Never one in place of another: a checkout with neither is refused
    before any work (``origin_of``). ``keys``/``ops``: only what the run needs
    (``measure_installed``); ``new``: ops the installed onnx lacks (``measure_generated``);
    ``ahead``: what was measured beside the batch (``collecting``)."""
    if onnx_src is None:
        return measure_installed(Path(cache_dir) if cache_dir is not None else None,
                                 per_version, body, keys, ops, ahead)
    if (Path(onnx_src) / points_source.NODE_DATA).is_dir():
        run = measure_checkout(Path(onnx_src), per_version, body, keys, ops)
        return replace(run, origin=PointsOrigin.COMMITTED)
    wanted = set(ops) if ops is not None else {op for op, _ in keys or ()}
    return measure_generated(Path(onnx_src), sorted(wanted), per_version, body, new)


def origin_of(onnx_src: str, flag: str = "--onnx-src") -> PointsOrigin:
    """Which of the checkout's sources gives its ONNX points, or a one-line refusal saying
    what is missing and why (UsageError)."""
    from ..engine.onnx_points.generators import GENERATORS, has_generators
    from ..errors import UsageError
    if (Path(onnx_src) / points_source.NODE_DATA).is_dir():
        return PointsOrigin.COMMITTED
    if has_generators(onnx_src):
        return PointsOrigin.GENERATORS
    raise UsageError(f"{flag} {onnx_src}: ONNX's points need the PR's node tests, and it has "
                     f"neither {points_source.NODE_DATA} (the committed tests, which ONNX stopped "
                     f"committing in onnx #7959) nor {GENERATORS} (their generators, which "
                     "the gate runs where no test is committed)")


# ----------------------------------------------------------------------------- cells
@dataclass(frozen=True)
class Cell:
    """A decided cell: the tag its verdict supports for (op, schema version, parameter)."""

    op: str
    version: int
    io: str
    name: str
    supports: str


def record_cells(records: Iterable[Mapping[str, Any]]) -> list[Cell]:
    """The decided cells of a default run's records, by schema version; a parameter two
    records decide differently is left out (the versions table calls it a conflict)."""
    found: dict[tuple[str, int, str, str], set[str]] = defaultdict(set)
    for r in records:
        v = r.get("schema_version")
        if r.get("domain", "") != "" or not isinstance(v, int):
            continue
        for p in r.get("parameters") or ():
            if (p.get("supports") in DECIDES and not by_convention(p.get("rule"))
                    and p.get("verdict") in ("agree", "disagree", "proposed")):
                found[(r["op"], v, p["io"], p["name"])].add(p["supports"])
    return [Cell(*k, next(iter(s))) for k, s in sorted(found.items()) if len(s) == 1]


def _version_cells(section: Mapping[str, Any]) -> list[tuple[Cell, dict]]:
    out = []
    for o in section.get("ops", ()):
        for v in o.get("versions", ()):
            for c in v.get("cells", ()):
                if c.get("supports") in DECIDES and not by_convention(c.get("rule")):
                    out.append((Cell(o["op"], v["version"], c["io"], c["name"], c["supports"]), c))
    return out


def no_test_of(op: str, version: int, versions: Iterable[int], kind: str = "") -> str:
    """``no ONNX node test of Op-V (its tests are of Op-W)``: the other versions named."""
    others = sorted(set(versions) - {version})
    return f"no {kind}ONNX node test of {op}-{version}" + (
        f" (its tests are of {', '.join(f'{op}-{v}' for v in others)})" if others else "")


def _unavailable(run: PointsRun, cell: Cell) -> str:
    """Why no ONNX point measured the cell's parameter."""
    ws = run.by_version.get((cell.op, cell.version), ())
    if not ws:
        return no_test_of(cell.op, cell.version, run.versions_of(cell.op))
    if all(w.skip is not None for w in ws):
        return f"the runtime reproduces none of the {len(ws)} tests measured (see mismatches)"
    return f"no test measured gives {cell.name} a floating value with a floating output"


def _entry(run: PointsRun, cell: Cell) -> dict[str, Any]:
    state = cell_state(cell.supports, run.outcomes(cell.op, cell.version, cell.io, cell.name))
    entry = {"op": cell.op, "version": cell.version, "io": cell.io, "name": cell.name,
             "supports": cell.supports, "state": state.value,
             "tests": run.used(cell.op, cell.version)}
    if state == PointsState.NOT_AVAILABLE:
        entry["why"] = _unavailable(run, cell)
    return entry


def section(run: PointsRun, cells: Sequence[Cell]) -> dict[str, Any]:
    """The report's ``onnx_points`` section for these cells."""
    entries = [_entry(run, c) for c in sorted(cells, key=lambda c: (c.op, c.version, c.io, c.name))]
    counts = Counter(e["state"] for e in entries)
    mismatches = [{"test": w.test, "op": w.op, "version": w.version, "reason": w.detail}
                  for ws in run.by_version.values() for w in ws if w.skip is not None]
    return {"source": run.source, "per_version": run.per_version,
            "summary": {**{s.value: counts.get(s.value, 0) for s in PointsState},
                        "versions_with_tests": len(run.by_version),
                        "tests_measured": sum(len(ws) for ws in run.by_version.values()),
                        "skipped_tests": dict(run.skipped)},
            "cells": entries, "mismatches": mismatches}


def carry(rep: dict[str, Any], sections: Sequence[dict[str, Any] | None]) -> None:
    """A rebuilt report (``report``, ``merge``: ``batch/report_io.rebuild``) given the
    ``onnx_points`` its slices carried: measurements, not records, so carried rather than
    re-derived. A slice measured only the schema versions its own cells are of (issue 43),
    and slices are dealt by op, so what each measured is its own: the source and the count
    per version must be the same in every slice; the cells, the tests measured, the skipped
    counts and the mismatches are joined (in the whole run's order, by op and version),
    counted again, and set on the per-version cells."""
    given = [s for s in sections if s]
    if not given:
        return
    head = {k: given[0][k] for k in ("source", "per_version")}
    if any({k: s[k] for k in head} != head for s in given):
        from ..errors import UsageError
        raise UsageError("the reports' onnx_points differ in what the run measured (source, "
                         "tests per version): they are not slices of one run")
    cells = sorted((c for s in given for c in s["cells"]),
                   key=lambda c: (c["op"], c["version"], c["io"], c["name"]))
    counts = Counter(c["state"] for c in cells)
    skipped: Counter[str] = Counter()
    for s in given:
        skipped.update(s["summary"]["skipped_tests"])
    rep["onnx_points"] = {
        **head,
        "summary": {**{p.value: counts.get(p.value, 0) for p in PointsState},
                    **{f: sum(s["summary"][f] for s in given)
                       for f in ("versions_with_tests", "tests_measured")},
                    "skipped_tests": dict(sorted(skipped.items()))},
        "cells": cells,
        "mismatches": sorted((m for s in given for m in s["mismatches"]),
                             key=lambda m: (m["op"], m["version"]))}
    _mark_versions(rep)


def _mark_versions(rep: dict[str, Any]) -> None:
    """Each cell of the per-version table gets its ONNX-points state (the section's)."""
    by_key = {(c["op"], c["version"], c["io"], c["name"]): c["state"]
              for c in rep["onnx_points"]["cells"]}
    for cell, target in _version_cells(rep.get("versions") or {}):
        state = by_key.get((cell.op, cell.version, cell.io, cell.name))
        if state is not None:
            target["onnx_points"] = state


def cells_of(rep: dict[str, Any]) -> list[Cell]:
    """The decided cells a verify-all report's ``onnx_points`` section judges: the versions
    table's when the run has one, else the records'."""
    versions = rep.get("versions")
    if versions:
        return [c for c, _ in _version_cells(versions)]
    return record_cells(rep.get("cases", ()))


def annotate(rep: dict[str, Any], run: PointsRun) -> None:
    """Add the ``onnx_points`` section to a verify-all report: per cell of the versions
    table (each cell also gets its state) when the run has one, else per record's cells."""
    rep["onnx_points"] = section(run, cells_of(rep))
    if rep.get("versions"):
        _mark_versions(rep)
