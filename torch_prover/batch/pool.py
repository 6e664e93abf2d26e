"""verify-all: prove many cases in isolated, forked workers, with a per-case timeout and a cache.

Each case runs in a child forked from a warmed-up parent (imports done, exporter tables
memoised by fast_export), so a worker pays neither the ~6 s of imports a spawned process
would nor the exporter's per-call table rebuilds. A case that raises, hangs past its
timeout or kills its process becomes that case's error record; the batch goes on. Each
child writes its own evidence atomically (evidence.py), so nothing is left half-written.

Results are cached by a key over the sources, the versions, the tags the case reads and
the options. A hit counts only if it still holds (``cache_check``): a record whose verdicts
its witnesses and today's tags do not give, or evidence on disk that is not what was
written, is a miss and the case is proved again.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from ..compat import StrEnum
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Callable, Sequence

from ..case import Case
from ..inputs import Bound, InputError, read_text
from ..errors import CaseError, OutputError, first_line
from ..cases import module_of
from ..engine.prove import RECORD_FORMAT, TagSource, versions
from ..tags.schema import UnknownOpError
from ..vocab import DocKind

PACKAGE_DIR = Path(__file__).resolve().parent.parent
"""The torch_prover package: every source file in it is part of the cache key."""


@dataclass(frozen=True)
class BatchOptions:
    jobs: int = 2
    timeout: float = 120.0
    numeric: bool = True
    out: Path | None = None
    cache_dir: Path | None = None
    tags: TagSource | None = None
    tag_source: str = "onnx.defs"
    tag_fingerprint: str = ""
    progress: Callable[[int, int, str], None] | None = None


@dataclass
class BatchResult:
    records: list[dict[str, Any]]
    wall_time_s: float
    cache_hits: int = 0
    fast_export: str = ""
    seconds: dict[str, float] = field(default_factory=dict)   # case -> wall time in its worker
    peak_rss_mib: dict[str, float] = field(default_factory=dict)  # case -> worker's peak RSS
    warnings: list[str] = field(default_factory=list)   # e.g. a cache that could not be written


FAILED_CASE_FORMAT = 1


class Failure(StrEnum):
    """Why a case produced no proof: a failed-case record's ``failure`` (never its text)."""

    CASE = "case error"          # the case itself: its export, the checker, its inputs
    CRASH = "worker died"        # the worker process died (killed, out of memory)
    TIMEOUT = "timed out"        # past the per-case timeout, twice
    EVIDENCE = "evidence not written"
    BUG = "internal error"       # an exception of ours
    NO_TAGS = "no tags"          # the tag source lacks the op


def error_record(case: Case, message: str, failure: Failure = Failure.BUG) -> dict[str, Any]:
    """A case that produced no proof (``status`` ``error``, or ``no-tags`` when the tag
    source lacks its op): its own shape (``schemas/failed-case.json``), not a proof record's;
    ``failure`` says which kind of failure, as data."""
    return {"kind": DocKind.FAILED_CASE, "format": FAILED_CASE_FORMAT,
            "op": case.op, "domain": case.domain, "case": case.name,
            "case_kind": case.kind, "exporter": case.exporter, "opset": case.export_opset,
            "status": "error", "error": message, "failure": failure.value, "parameters": [],
            **({"variant_of": case.variant_of} if case.variant_of else {})}


# ----------------------------------------------------------------------------- cache
def _digest_files(paths: Sequence[Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.relative_to(PACKAGE_DIR).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()


_ENGINE_DIGEST: str | None = None
_VERSIONS: dict[str, str] | None = None


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
    """``versions()`` once per process: reading five packages' metadata per case was most
    of a warm rerun's time."""
    global _VERSIONS
    if _VERSIONS is None:
        _VERSIONS = versions()
    return _VERSIONS


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


def _cache_get(case: Case, opts: BatchOptions) -> dict[str, Any] | None:
    if opts.cache_dir is None:
        return None
    path = opts.cache_dir / f"{cache_key(case, opts)}.json"
    try:   # a FIFO or a huge file planted in a shared cache is a miss, never a hang
        entry = json.loads(read_text(path, Bound.RECORD))
    except (InputError, ValueError):
        return None
    return cache_check(entry, case, opts)


def _cache_put(case: Case, opts: BatchOptions, rec: dict[str, Any],
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


# ----------------------------------------------------------------------------- one case
SETTLED = "__settled__"   # on a broken case's error record, worker to parent only (_cache_put)


def prove_one(case: Case, opts: BatchOptions) -> tuple[dict[str, Any], dict[str, str] | None]:
    """Prove ``case`` and write its evidence; any failure becomes an error record (a broken
    case's marked ``SETTLED``). Returns it and the evidence files' digests (None: none)."""
    from ..output.evidence import evidence_digests, write_proof
    from ..engine.prove import prove_case
    try:
        proof = prove_case(case, numeric=opts.numeric, tags=opts.tags,
                           tag_source=opts.tag_source)
        files = None
        if opts.out is not None:
            files = evidence_digests(write_proof(opts.out, proof))
        return proof.record(), files
    except OutputError as exc:
        return error_record(case, f"{case.op}/{case.name}: evidence not written: {exc}",
                            Failure.EVIDENCE), None
    except OSError as exc:   # a full or failing disk: this case fails, the batch goes on
        return error_record(case, f"{case.op}/{case.name}: evidence not written: "
                                  f"{exc.strerror or type(exc).__name__}"
                                  + (f" ({exc.filename})" if exc.filename else ""),
                            Failure.EVIDENCE), None
    except CaseError as exc:
        return {**error_record(case, str(exc), Failure.CASE), SETTLED: True}, None
    except UnknownOpError as exc:  # --tags-from a docs file that lacks the op: report, not guess
        return {**error_record(case, str(exc), Failure.NO_TAGS), "status": "no-tags"}, None
    except Exception as exc:  # a crash in one case never stops the batch
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        return error_record(case, f"{case.op}/{case.name}: {type(exc).__name__}: "
                                  f"{first_line(exc)}"
                                  f" (at {Path(tb.filename).name}:{tb.lineno})"), None


def _die_with_parent(parent_pid: int) -> None:
    """Ask the kernel to SIGKILL this worker when its parent dies (Linux prctl
    PR_SET_PDEATHSIG), and leave at once if the parent is already gone."""
    import ctypes
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass   # not Linux: the closed pipe ends below still end the worker on EOF
    if os.getppid() != parent_pid:
        os._exit(0)


def _next_of(queue: list[int], todo: Sequence[Case], family: str | None) -> int:
    """Where in ``queue`` a worker's next case is: the next variant of the case it proved
    last, when one is waiting (its worker keeps that case's export: engine/export.py's
    memo), else the head."""
    if family is not None:
        for k, i in enumerate(queue[:64]):
            if (todo[i].variant_of or todo[i].name) == family:
                return k
    return 0


def _worker(todo: Sequence[Case], opts: BatchOptions, conn, inherited: Sequence[Any],
            parent_pid: int) -> None:
    """A forked worker: prove the case index it is sent, answer, repeat until None.

    The fork copied the parent's end of every pipe, this worker's own included; they are
    closed first, so the parent's death reaches ``recv()`` as EOF and the worker exits
    (and the parent-death signal covers a worker busy in a case)."""
    import resource
    for c in inherited:
        c.close()
    # Ctrl-C reaches the whole process group: the parent alone answers it (it kills the
    # workers), so a worker never reports an interrupted export as the case's error
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent(parent_pid)
    # C++ warnings (TorchScript shape inference, onnxruntime kernels) would garble the
    # progress line; whatever matters reaches the parent in the record
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.dup2(devnull, 1)   # the TorchScript exporter prints its IR graph on a failed export
    try:
        while True:
            index = conn.recv()
            if index is None:
                break
            t0 = time.perf_counter()
            rec, files = prove_one(todo[index], opts)
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            conn.send_bytes(json.dumps({"record": rec, "files": files,
                                        "seconds": time.perf_counter() - t0,
                                        "rss_mib": rss}).encode())
    except (EOFError, OSError):
        pass
    finally:
        conn.close()
        os._exit(0)  # skip interpreter teardown: the parent owns cleanup


@dataclass
class _Slot:
    """One worker process and the case it is proving (None: idle)."""

    proc: Any
    conn: Any
    index: int | None = None
    started: float = 0.0
    proved: int = 0
    family: str | None = None   # the case whose variants it proves: they share one export


RETRIES = 1
"""A case whose worker dies (the out-of-memory killer) or passes the timeout is tried once
more in a fresh worker; failing again, it is that case's error (``Failure.CRASH`` or
``TIMEOUT``), which fails the run: never a version "no route reaches"."""


def _tries(retried: int) -> str:
    return f" (tried {retried + 1} times)" if retried else ""


CASES_PER_WORKER = 40
"""A worker is replaced after this many cases: its heap grows with each export (the
exporter's and onnxruntime's caches), and an all-versions run gives it ~330 cases."""


@contextlib.contextmanager
def _sigint_after():
    """Hold a Ctrl-C that arrives inside the block and raise it when the block ends (a
    second one raises at once). The warm-up runs torch's exporter, which can turn a
    KeyboardInterrupt raised inside it into an export error and go on; held, it stops
    the batch before any worker starts (cli: exit 130, one line)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum, frame):
        if held:
            raise KeyboardInterrupt
        held.append(signum)
    previous = signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        raise KeyboardInterrupt


def _warm_up(cases: Sequence[Case]) -> str:
    import gc

    import torch
    torch.set_num_threads(1)  # one thread per worker: 2 cores, 2 workers; also fork-safe
    from ..engine import fast_export
    fast_export.enable()
    fast_export.prewarm(c.export_opset for c in cases if c.exporter == "dynamo")
    gc.freeze()  # keep the warmed heap out of the workers' collections: fewer COW copies
    return fast_export.STATE.why


def run_batch(cases: Sequence[Case], opts: BatchOptions) -> BatchResult:
    start = time.perf_counter()
    records: dict[str, dict[str, Any]] = {}
    todo: list[Case] = []
    for case in cases:
        hit = _cache_get(case, opts)
        if hit is not None:
            records[case.name] = hit
        else:
            todo.append(case)
    result = BatchResult([], 0.0, cache_hits=len(records))
    if opts.progress:
        opts.progress(len(records), len(cases), "cached" if records else "")
    if todo:
        from ..output.evidence import sweep_temporaries
        with _sigint_after():
            result.fast_export = _warm_up(todo)
        ops = {c.op for c in todo}
        if opts.out is not None:
            sweep_temporaries(opts.out, ops)
        try:
            _run_workers(todo, opts, records, result, len(cases))
        finally:
            if opts.out is not None:
                sweep_temporaries(opts.out, ops)
    result.records = [records[c.name] for c in cases]
    result.wall_time_s = time.perf_counter() - start
    return result


def _run_workers(todo: Sequence[Case], opts: BatchOptions, records: dict[str, Any],
                 result: BatchResult, total: int) -> None:
    """Prove ``todo`` in forked workers; whatever happens here, no worker outlives it."""
    ctx = multiprocessing.get_context("fork")
    slots: list[_Slot] = []
    parent_pid = os.getpid()

    def spawn() -> _Slot:
        parent, child = ctx.Pipe(duplex=True)
        inherited = [sl.conn for sl in slots] + [parent]
        proc = ctx.Process(target=_worker, args=(todo, opts, child, inherited, parent_pid),
                           daemon=True)
        proc.start()
        child.close()
        return _Slot(proc, parent)

    def retire(slot: _Slot, kill: bool) -> None:
        if kill:
            slot.proc.kill()
        slot.proc.join(5)
        if slot.proc.exitcode is None:
            slot.proc.kill()
            slot.proc.join()
        slot.conn.close()

    done = total - len(todo)
    try:
        # workers live across cases (a fork per case cost ~25 ms each); one that dies or
        # hangs is that case's error and is replaced, so isolation is kept
        for _ in range(max(1, min(opts.jobs, len(todo)))):
            slots.append(spawn())
        queue = list(range(len(todo)))
        tried = [0] * len(todo)   # retries spent per case (a crash or a timeout)
        while queue or any(sl.index is not None for sl in slots):
            for sl in slots:
                if sl.index is None and queue:
                    sl.index, sl.started = queue.pop(_next_of(queue, todo, sl.family)), \
                        time.perf_counter()
                    sl.family = todo[sl.index].variant_of or todo[sl.index].name
                    sl.conn.send(sl.index)
            busy = [sl for sl in slots if sl.index is not None]
            ready = wait([sl.conn for sl in busy], timeout=0.5)
            now = time.perf_counter()
            for k, sl in enumerate(slots):
                if sl.index is None:
                    continue
                case = todo[sl.index]
                rec, replace, files = None, False, None
                if sl.conn in ready:
                    try:
                        msg = json.loads(sl.conn.recv_bytes())
                        rec, files = msg["record"], msg["files"]
                        result.seconds[case.name] = msg["seconds"]
                        result.peak_rss_mib[case.name] = msg["rss_mib"]
                    except (EOFError, OSError, ValueError):
                        sl.proc.join(5)
                        rec = error_record(case, f"{case.op}/{case.name}: worker died "
                                                 f"(exit code {sl.proc.exitcode}) before "
                                                 f"reporting{_tries(tried[sl.index])}",
                                           Failure.CRASH)
                        replace = True
                elif now - sl.started > opts.timeout:
                    rec = error_record(case, f"{case.op}/{case.name}: timed out after "
                                             f"{opts.timeout:g} s{_tries(tried[sl.index])}",
                                       Failure.TIMEOUT)
                    replace = True
                if rec is None:
                    continue
                index = sl.index
                sl.index, sl.proved = None, sl.proved + 1
                if replace:
                    retire(sl, kill=True)
                    slots[k] = spawn()
                    if tried[index] < RETRIES:   # a dead or hung worker: once more, fresh
                        tried[index] += 1
                        queue.insert(0, index)
                        continue
                elif sl.proved >= CASES_PER_WORKER and queue:   # a fresh heap (see above)
                    sl.conn.send(None)
                    retire(sl, kill=False)
                    slots[k] = spawn()
                records[case.name] = rec
                warning = _cache_put(case, opts, rec, files, bool(rec.pop(SETTLED, False)))
                if warning and warning not in result.warnings:
                    result.warnings.append(warning)
                done += 1
                if opts.progress:
                    opts.progress(done, total, case.name)
        for sl in slots:
            try:
                sl.conn.send(None)
            except OSError:
                pass
            retire(sl, kill=False)
    finally:
        for sl in slots:   # the parent is leaving early (an exception, Ctrl-C): reap all
            if sl.proc.exitcode is None:
                retire(sl, kill=True)
