"""verify-all: prove many cases in isolated, forked workers, with a per-case timeout and a cache.

Each case runs in a child forked from a warmed-up parent (imports done, exporter tables
memoised by fast_export), so a worker pays neither the ~6 s of imports a spawned process
would nor the exporter's per-call table rebuilds. A case that raises, hangs past its
timeout or kills its process becomes that case's error record; the batch goes on. Each
child writes its own evidence atomically (evidence.py), so nothing is left half-written.

Results are cached (``cache``); one case's proof, and its failure as a record, is
``one_case``'s.
"""
from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import Any, Callable, Sequence

from ..case import Case
from . import timeline
from .forked import detach
from .cache import cache_get, cache_put
from .one_case import SETTLED, BatchOptions, Failure, error_record, prove_one


@dataclass
class BatchResult:
    records: list[dict[str, Any]]
    wall_time_s: float
    cache_hits: int = 0
    fast_export: str = ""
    seconds: dict[str, float] = field(default_factory=dict)   # case -> wall time in its worker
    peak_rss_mib: dict[str, float] = field(default_factory=dict)  # case -> worker's peak RSS
    warnings: list[str] = field(default_factory=list)   # e.g. a cache that could not be written
    beside: Any = None   # what the work beside the batch returned (None: not done)


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
    detach(parent_pid, inherited)
    import logging

    from ..engine.export import QUIET_LOGGERS
    for name in QUIET_LOGGERS:   # what export.quiet sets per export, set once: output unused
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        while True:
            index = conn.recv()
            if index is None:
                break
            t0, at = time.perf_counter(), time.time()
            rec, files = prove_one(todo[index], opts)
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            conn.send_bytes(json.dumps({"record": rec, "files": files,
                                        "seconds": time.perf_counter() - t0,
                                        "rss_mib": rss, "began": at,
                                        "ended": timeline.stamp()}).encode())
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


CASES_PER_WORKER = 80
"""A worker is replaced after this many cases: its heap grows with each export (the
exporter's and onnxruntime's caches), and an all-versions run gives it ~330 cases. Each
replacement costs CPU (the new worker re-faults the parent's pages and rebuilds what the
old one had memoised): at 40, a cold default run's workers took 28.5 s of CPU, at 80
26.5-26.8 s; the peak RSS per worker, default 519 and 511-518 MiB, all versions 549 and
555 MiB (docs/performance.md: <= 600 MiB), the evidence identical (issue 43)."""


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


FAST_EXPORT_FROM = 3
"""The fewest dynamo exports a batch switches the exporter's table reuse on for: proving it
safe exports a probe model three times (``fast_export.enable``), and the reuse saves about
one stock export's registry build per export (issue 43: PR mode's one changed op paid three
probe exports for one case). Either path gives byte-identical models (the guard's premise)."""


def _warm_up(cases: Sequence[Case]) -> str:
    import gc

    import torch
    torch.set_num_threads(1)  # one thread per worker: 2 cores, 2 workers; also fork-safe
    from ..engine import fast_export
    dynamo = [c.export_opset for c in cases if c.exporter == "dynamo"]
    if len(dynamo) >= FAST_EXPORT_FROM:
        fast_export.enable()
        timeline.mark("warm-up: fast path probed")
        fast_export.prewarm(dynamo)
    elif not fast_export.STATE.enabled:
        fast_export.STATE.why = (f"not switched on: {len(dynamo)} dynamo export(s), fewer "
                                 f"than {FAST_EXPORT_FROM}")
    gc.freeze()  # keep the warmed heap out of the workers' collections: fewer COW copies
    return fast_export.STATE.why


def _beside(target: Callable[[], Any], parent_pid: int, conn, inherited) -> None:
    """A forked process running ``target`` beside the batch, dying with the parent; what
    it returns (JSON) goes back on ``conn`` with its end for the timeline."""
    detach(parent_pid, [inherited])
    try:
        value = target()
        conn.send_bytes(json.dumps({"value": value, "ended": timeline.stamp()}).encode())
    finally:   # an exception: nothing sent, the parent reads EOF and does the work itself
        os._exit(0)


def _start_beside(target: Callable[[], Any] | None):
    if target is None:
        return None
    ctx = multiprocessing.get_context("fork")
    ours, theirs = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_beside, args=(target, os.getpid(), theirs, ours), daemon=True)
    proc.start()
    theirs.close()   # so its death reads as EOF here, and no worker inherits it
    proc.answer = ours   # type: ignore[attr-defined]
    timeline.mark(f"beside the batch: process {proc.pid} forked")
    return proc


def _end_beside(proc, timeout: float) -> Any:
    """Wait for the process beside the batch (at most ``timeout``), then make sure it is
    gone; what it returned, or None: what it leaves unfinished its caller does itself."""
    if proc is None:
        return None
    value = None
    try:
        if proc.answer.poll(timeout):
            msg = json.loads(proc.answer.recv_bytes())
            value, end = msg["value"], msg["ended"]
            timeline.mark("beside the batch: done", end["at"], end["cpu"], end["pid"])
    except (EOFError, OSError, ValueError):
        value = None
    finally:
        proc.answer.close()
    proc.join(5 if value is not None else 0)
    if proc.exitcode is None:
        proc.kill()
        proc.join()
    timeline.mark("beside the batch: reaped (children's CPU %.2f s)" % timeline.children_cpu())
    return value


def run_batch(cases: Sequence[Case], opts: BatchOptions,
              beside: Callable[[], Any] | None = None) -> BatchResult:
    """Prove ``cases`` (the cached ones read back). ``beside``: work the run needs after the
    batch that does not depend on it (ONNX's points, batch/verify.py), run in a forked
    process from before the exporter's warm-up until the workers are done, so it fills the
    cores the warm-up and the last cases leave idle; only when a case is proved. What it
    returns (JSON) is ``BatchResult.beside``."""
    start = time.perf_counter()
    timeline.mark("batch: start (cache lookups)")
    records: dict[str, dict[str, Any]] = {}
    todo: list[Case] = []
    for case in cases:
        hit = cache_get(case, opts)
        if hit is not None:
            records[case.name] = hit
        else:
            todo.append(case)
    result = BatchResult([], 0.0, cache_hits=len(records))
    if opts.progress:
        opts.progress(len(records), len(cases), "cached" if records else "")
    if todo:
        from ..output.evidence import sweep_temporaries
        helper = _start_beside(beside)
        try:
            timeline.mark("warm-up: start")
            with _sigint_after():
                result.fast_export = _warm_up(todo)
            timeline.mark("warm-up: end")
            ops = {c.op for c in todo}
            if opts.out is not None:
                sweep_temporaries(opts.out, ops)
            try:
                _run_workers(todo, opts, records, result, len(cases))
            finally:
                if opts.out is not None:
                    sweep_temporaries(opts.out, ops)
        except BaseException:
            _end_beside(helper, 0)   # the run is stopping (an error, Ctrl-C): at once
            raise
        result.beside = _end_beside(helper, opts.timeout)
    result.records = [records[c.name] for c in cases]
    result.wall_time_s = time.perf_counter() - start
    timeline.mark("batch: end")
    return result


def _run_workers(todo: Sequence[Case], opts: BatchOptions, records: dict[str, Any],
                 result: BatchResult, total: int) -> None:
    """Prove ``todo`` in forked workers; whatever happens here, no worker outlives it."""
    ctx = multiprocessing.get_context("fork")
    slots: list[_Slot] = []
    ahead: dict[int, _Slot] = {}   # slot -> its successor, forked while it proves its last case
    parent_pid = os.getpid()

    def spawn() -> _Slot:
        parent, child = ctx.Pipe(duplex=True)
        inherited = [sl.conn for sl in slots] + [sl.conn for sl in ahead.values()] + [parent]
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
            for k, sl in enumerate(slots):
                if sl.index is None and queue:
                    sl.index, sl.started = queue.pop(_next_of(queue, todo, sl.family)), \
                        time.perf_counter()
                    sl.family = todo[sl.index].variant_of or todo[sl.index].name
                    sl.conn.send(sl.index)
                    if sl.proved == CASES_PER_WORKER - 1 and queue and k not in ahead:
                        ahead[k] = spawn()   # its last case: no core idles through the fork
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
                        if timeline.ON:
                            timeline.worker_case(msg, case.name)
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
                    slots[k] = ahead.pop(k, None) or spawn()
                    if tried[index] < RETRIES:   # a dead or hung worker: once more, fresh
                        tried[index] += 1
                        queue.insert(0, index)
                        continue
                elif sl.proved >= CASES_PER_WORKER and queue:   # a fresh heap (see above)
                    sl.conn.send(None)
                    retire(sl, kill=False)
                    slots[k] = ahead.pop(k, None) or spawn()
                records[case.name] = rec
                warning = cache_put(case, opts, rec, files, bool(rec.pop(SETTLED, False)))
                if warning and warning not in result.warnings:
                    result.warnings.append(warning)
                done += 1
                if opts.progress:
                    opts.progress(done, total, case.name)
        timeline.mark("workers: last case received")
        for sl in slots + list(ahead.values()):
            try:
                sl.conn.send(None)
            except OSError:
                pass
            retire(sl, kill=False)
        timeline.workers_done()
        timeline.mark("workers: reaped (children's CPU %.2f s)" % timeline.children_cpu())
    finally:
        for sl in slots + list(ahead.values()):   # leaving early (an exception, Ctrl-C): reap all
            if sl.proc.exitcode is None:
                retire(sl, kill=True)
