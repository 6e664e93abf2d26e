"""``torch-prover merge``: the JSON reports of ``verify-all --shard K/N`` joined into the one
report, with the one exit code, that a single run would give.

A shard's report carries what the whole needs beyond its records (``verify.build_report``
writes it under ``shard``: its case-less ops, the waivers, the version selection); the
merge puts the records back in catalogue order and calls the same ``build_report`` a run
calls, so the two cannot drift apart. Shards must come from one split (same N, same
selection, waivers and tag source), each index exactly once: anything else is a one-line
usage error before any work.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from ..errors import UsageError
from .verify import Parts, build_report


def _load(path: str) -> dict[str, Any]:
    from .. import preflight
    preflight.readable_file(path, "merge")
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, RecursionError) as exc:
        raise UsageError(f"merge {path}: cannot read it ({type(exc).__name__})") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"merge {path}:{exc.lineno}: not JSON ({exc.msg})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("shard"), dict) or \
            not isinstance(doc.get("cases"), list):
        raise UsageError(f"merge {path}: not the JSON report of `torch-prover verify-all "
                         f"--shard K/N --format json`")
    return doc


def _same(docs: Sequence[tuple[str, dict]], what: str, get) -> Any:
    values = {json.dumps(get(d), sort_keys=True) for _, d in docs}
    if len(values) > 1:
        raise UsageError(f"merge: the reports differ in {what}; merge the shards of one run")
    return get(docs[0][1])


def _order() -> dict[str, int]:
    """Case name -> its place in the catalogue."""
    from ..cases import all_cases
    return {c.name: i for i, c in enumerate(all_cases())}


def _place(rec: dict[str, Any], order: dict[str, int]) -> tuple[int, int]:
    """A record's place in a run: its case's catalogue place, a variant after its case's
    earlier variants (``versions.plan`` order: opsets ascending)."""
    base = rec.get("variant_of") or rec["case"]
    if base not in order:
        raise UsageError(f"merge: case {rec['case']!r} is not in this catalogue; merge with "
                         "the torch-prover that made the reports")
    return order[base], int(rec.get("opset") or 0) if rec.get("variant_of") else 0


def merge(paths: Sequence[str]) -> dict[str, Any]:
    """The merged report of the shard reports at ``paths``."""
    from .. import preflight
    from .waivers import Waiver
    if not paths:
        raise UsageError("merge: name the JSON reports of every shard")
    docs = [(p, _load(p)) for p in paths]
    count = _same(docs, "their shard count (--shard K/N)", lambda d: d["shard"]["count"])
    seen = sorted(d["shard"]["index"] for _, d in docs)
    if seen != list(range(1, count + 1)):
        raise UsageError(f"merge: shards {', '.join(map(str, seen))} of {count}; give each of "
                         f"1..{count} exactly once")
    selection = _same(docs, "--versions", lambda d: d["shard"]["selection"])
    waivers = _same(docs, "--waivers", lambda d: d["shard"]["waivers"])
    label = _same(docs, "their tag source", lambda d: d["summary"]["tags_from"])
    tags_path = _same(docs, "--tags-from", lambda d: d["summary"]["tags_path"])
    torchscript = _same(docs, "--no-torchscript", lambda d: d.get("exporters", {}).get("torchscript", True))
    versions = {json.dumps(r["versions"], sort_keys=True) for _, d in docs for r in d["cases"]
                if r.get("versions")}
    if len(versions) > 1:
        raise UsageError("merge: the reports were made with different torch, onnx or "
                         "onnxruntime versions; merge the shards of one run")
    order = _order()
    records = sorted((r for _, d in docs for r in d["cases"]), key=lambda r: _place(r, order))
    variants = sorted((r for _, d in docs for r in d.get("versions", {}).get("cases", [])),
                      key=lambda r: _place(r, order))
    missing: dict[str, list[str]] = {}
    for _, d in docs:
        missing.update(d["summary"]["missing_from_docs"])
    tags = preflight.tags_of(preflight.load_docs(tags_path), tags_path)[0] if tags_path else None
    parts = Parts(
        records=records, variants=variants,
        case_less=sorted((c for _, d in docs for c in d["shard"]["case_less"]),
                         key=lambda c: c["op"]),
        waivers=[Waiver.from_dict(w) for w in waivers], label=label, tags_path=tags_path,
        missing=dict(sorted(missing.items())),
        wall_time_s=max(d["summary"]["wall_time_s"] for _, d in docs),
        cache_hits=sum(d["summary"]["cache_hits"] for _, d in docs), selection=selection,
        torchscript=torchscript,
        left_out=sorted({n for _, d in docs for n in d.get("exporters", {}).get("left_out", [])}))
    return build_report(parts, tags)
