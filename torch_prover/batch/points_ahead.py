"""ONNX's points measured ahead, beside verify-all's batch (issue 43): the schema versions a
run's cells will be of are known before any case is proved -- each case's op at its export
opset -- so the process beside the workers (``pool.run_batch``'s ``beside``) measures their
tests while the batch runs, instead of the parent after it (~1.5 s of a cold default run's
serial tail). What it measured comes back as data (``payload``); ``take`` gives the parent
exactly what measuring the run's own versions then would have (``batch/onnx_points.py``,
``measure_installed``) or None -- a version no case predicted, another count per version --
and the parent measures as before. The same tests, chosen by the same rule, measured by the
same witness: a report's ``onnx_points`` is the same either way.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Collection, Iterable, Mapping, Sequence

from ..engine.onnx_points.source import NodeTest, Skipped
from ..engine.onnx_points.witness import TestWitness


def predicted(cases: Iterable[Any]) -> list[tuple[str, int]]:
    """The (op, schema version) each ai.onnx case is of: its op's schema in force at its
    export opset (a case whose op onnx does not know predicts nothing)."""
    import onnx.defs
    keys = set()
    for c in cases:
        if c.domain != "":
            continue
        try:
            keys.add((c.op, onnx.defs.get_schema(c.op, c.export_opset, "").since_version))
        except onnx.defs.SchemaError:
            continue
    return sorted(keys)


def payload(ops: Sequence[str], tests: Sequence[NodeTest | Skipped],
            by_version: Mapping[tuple[str, int], Sequence[TestWitness]], per_version: int,
            warning: str | None) -> dict[str, Any]:
    """What the process beside the batch sends back (JSON): the witnesses it measured, and
    of every op whose tests it collected, the versions they are of and the skipped counts."""
    tested: dict[str, set[int]] = defaultdict(set)
    skipped: dict[str, Counter[str]] = defaultdict(Counter)
    for t in tests:
        if isinstance(t, Skipped):
            skipped[t.op][t.reason.value] += 1
        else:
            tested[t.op].add(t.version)
    return {"per_version": per_version, "ops": sorted(ops), "warning": warning,
            "by_version": [{"op": op, "version": v, "tests": [w.as_dict() for w in ws]}
                           for (op, v), ws in by_version.items()],
            "tested": {op: sorted(vs) for op, vs in tested.items()},
            "skipped": {op: dict(c) for op, c in skipped.items()}}


def take(ahead: Mapping[str, Any] | None, keys: Collection[tuple[str, int]] | None,
         per_version: int, body: bool
         ) -> tuple[dict, dict[str, int], frozenset[tuple[str, int]], list[str]] | None:
    """(by version, skipped counts, tested versions, notes) for ``keys``, as measuring those
    versions' tests now gives them; None when ``ahead`` did not measure them all."""
    if ahead is None or keys is None or body or ahead.get("per_version") != per_version:
        return None
    measured = {(e["op"], e["version"]): e["tests"] for e in ahead["by_version"]}
    tested = {(op, v) for op, vs in ahead["tested"].items() for v in vs}
    ops = set(ahead["ops"])
    if any(op not in ops or ((op, v) in tested and (op, v) not in measured) for op, v in keys):
        return None
    names = {op for op, _ in keys}
    by = {k: tuple(TestWitness.from_dict(w) for w in measured[k])
          for k in sorted(set(keys)) if k in measured}
    skips: Counter[str] = Counter()
    for op in sorted(names):
        skips.update(ahead["skipped"].get(op, {}))
    return (by, dict(sorted(skips.items())), frozenset(k for k in tested if k[0] in names),
            [ahead["warning"]] if ahead.get("warning") else [])
