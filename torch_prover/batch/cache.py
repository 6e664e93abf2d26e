"""verify-all's result cache: a key over the sources, the versions, the tags a case reads
and the options, and the check that a hit still holds (``cache_check``): a record whose
verdicts its witnesses and today's tags do not give, or evidence on disk that is not what
was written, is a miss and the case is proved again. The cache never changes a verdict."""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from ..case import Case
from ..cases import module_of
from ..engine.prove import RECORD_FORMAT, versions
from ..inputs import Bound, InputError, read_text
from .one_case import BatchOptions

PACKAGE_DIR = Path(__file__).resolve().parent.parent
"""The torch_prover package: every source file in it is part of the cache key."""



def _digest_files(paths: Sequence[Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.relative_to(PACKAGE_DIR).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()


_ENGINE_DIGEST: str | None = None


def source_files() -> list[Path]:
    """Every source file a verdict can depend on: the engine and the whole catalogue (a case
    module imports shared helpers such as cases/reference_ops.py)."""
    return sorted(PACKAGE_DIR.rglob("*.py"))


def engine_digest() -> str:
    """The package's source: any change to it invalidates every cached result."""
    global _ENGINE_DIGEST
    if _ENGINE_DIGEST is None:
        _ENGINE_DIGEST = _digest_files(source_files())
    return _ENGINE_DIGEST


def tags_read(case: Case, opts: BatchOptions) -> str:
    """A digest of the schema tags the case's proof reads (its op at its export opset and
    at the latest version, types included), as the run's tag source gives them. The onnx
    version string is not enough: an ONNX branch build can change a tag and keep it."""
    from ..engine import prove as prove_mod
    tags = opts.tags or prove_mod.default_tags
    read = []
    for opset in (case.export_opset, None):
        try:
            read.append(repr(tags(case.op, opset, case.domain)))
        except Exception as exc:   # --tags-from lacking the op: its own entry, never a crash
            read.append(f"{type(exc).__name__}: {exc}")
    return hashlib.sha256("\n".join(read).encode()).hexdigest()


def _installed_versions() -> dict[str, str]:
    """``versions()``, read once per process: reading five packages' metadata per case was
    most of a warm rerun's time."""
    return versions()


def cache_key(case: Case, opts: BatchOptions) -> str:
    module = sys.modules[module_of(case)]
    source = Path(module.__file__).read_bytes()
    payload = json.dumps({
        "case": case.name, "source": hashlib.sha256(source).hexdigest(),
        "engine": engine_digest(), "versions": _installed_versions(), "numeric": opts.numeric,
        "tags": opts.tag_source, "tags_digest": opts.tag_fingerprint,
        "tags_read": tags_read(case, opts),
        "seeds": list(case.seeds), "opset": case.opset, "exporter": case.exporter,
        "origin": case.origin},
        sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def _valid_cached(rec: Any, case: Case) -> bool:
    """A cache entry counts only if it is a record of ours for this very case."""
    from ..output.evidence import is_record
    return (is_record(rec, case.op, case.name) and rec["format"] == RECORD_FORMAT
            and isinstance(rec.get("status"), str))


def cache_check(entry: Any, case: Case, opts: BatchOptions) -> dict[str, Any] | None:
    """The record of a cache entry if it still holds, else None (a miss: proved again).

    It holds when it is a record of this very case whose verdicts its own witnesses and
    today's tags give (``engine/recheck.py``: the cache cannot change a verdict), and,
    when evidence is written, the case directory on disk is what was written: the same
    proof.json, and model.onnx and every data file with the digest stored beside the
    record (a flipped byte, a truncated or deleted file is rewritten)."""
    from ..engine import prove as prove_mod
    from ..engine.recheck import RunFacts, record_problem
    from ..output.evidence import evidence_digests, read_record
    if not isinstance(entry, dict):
        return None
    rec, files = entry.get("record"), entry.get("files")
    tags = opts.tags or prove_mod.default_tags
    run = RunFacts(opts.numeric, opts.tag_source, _installed_versions())
    if entry.get("settled") is True and isinstance(rec, dict) and rec.get("status") == "error":
        # a broken case (its export fails), as deterministic as a proof: it must be this
        # case's failed-case record, and evidence of this case on disk contradicts it
        if record_problem(rec, case, tags, run) is not None or (
                opts.out is not None
                and read_record(opts.out / case.op / case.name / "proof.json") is not None):
            return None
        return rec
    if not _valid_cached(rec, case) or record_problem(rec, case, tags, run) is not None:
        return None   # a damaged, foreign, stale or edited entry is a miss, never a crash
    if opts.out is not None and rec.get("status") != "error":
        d = opts.out / case.op / case.name
        try:
            if json.loads(read_text(d / "proof.json", Bound.RECORD)) != rec:
                return None
        except (InputError, ValueError):
            return None
        if not isinstance(files, dict) or evidence_digests(d) != files:
            return None
    return rec


def cache_get(case: Case, opts: BatchOptions) -> dict[str, Any] | None:
    if opts.cache_dir is None:
        return None
    path = opts.cache_dir / f"{cache_key(case, opts)}.json"
    try:   # a FIFO or a huge file planted in a shared cache is a miss, never a hang
        entry = json.loads(read_text(path, Bound.RECORD))
    except (InputError, ValueError):
        return None
    return cache_check(entry, case, opts)


def cache_put(case: Case, opts: BatchOptions, rec: dict[str, Any],
               files: dict[str, str] | None, settled: bool = False) -> str | None:
    """Store a record and its evidence files' digests (a cache that cannot be written costs a
    warning). An error only when ``settled`` (a broken case: as deterministic as a proof,
    and a warm all-versions run must not warm the exporter for dozens of them); a
    timeout, a dead worker, a crash is tried again."""
    if opts.cache_dir is None or (rec.get("status") == "error" and not settled):
        return None
    from ..output.evidence import write_text
    try:
        write_text(opts.cache_dir / f"{cache_key(case, opts)}.json",
                   json.dumps({"record": rec, "files": files, "settled": settled}, indent=2) + "\n")  # internal
    except OSError as exc:
        return f"cache {opts.cache_dir} not written ({exc.strerror or exc}); results are kept"
    return None
