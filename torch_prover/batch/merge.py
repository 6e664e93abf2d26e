"""``torch-prover merge``: the JSON reports of ``verify-all --shard K/N`` joined into the one
report, with the one exit code, that a single run would give.

A shard is taken for nothing but its records (``batch/report_io.py``, docs/safety.md):
each report is read and validated against its schema, the shards must carry one
provenance (the same torch-prover, onnx, request, waivers and tag source, whose text a
``--tags-from`` run carries: merge reads no file but the reports), be shards 1..N of one
split, each hold exactly the cases and variants the split deals it, and every record
must pass the cache's own re-check (``engine/recheck``). The merged report is then built
by the ``build_report`` a run calls, so the two cannot drift apart. Anything else is a
one-line usage error before any work.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..errors import UsageError
from ..vocab import DocKind
from .report_io import Slice, check_slices, read_document, rebuild


def merge(paths: Sequence[str]) -> dict[str, Any]:
    """The merged report of the shard reports at ``paths``."""
    if not paths:
        raise UsageError("merge: name the JSON reports of every shard")
    slices = [Slice(p, read_document(p, "merge", DocKind.BATCH_REPORT)) for p in paths]
    for s in slices:
        if s.shard is None:
            raise UsageError(f"merge {s.path}: not a shard's report (made without --shard "
                             "K/N): it is a whole run's already")
        if any(type(n) is not int for n in s.shard):   # JSON Schema's integer takes 2.0
            raise UsageError(f"merge {s.path}: shard {s.shard[0]} of {s.shard[1]}: not whole "
                             "numbers as verify-all writes them")
    counts = {s.shard[1] for s in slices}
    if len(counts) > 1:
        raise UsageError("merge: the reports differ in their shard count (--shard K/N); "
                         "merge the shards of one run")
    (count,) = counts
    seen = sorted(s.shard[0] for s in slices)
    if count != len(slices) or seen != list(range(1, count + 1)):
        raise UsageError(f"merge: shards {', '.join(map(str, seen))} of {count}; give each of "
                         f"1..{count} exactly once")
    return rebuild(slices, check_slices(slices, "merge"), None)
