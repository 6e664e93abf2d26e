"""ONNX's node tests built from verify-all's first second (issue 43): a cold default run's
first ~2 s are the parent alone on one core (torch's imports, ``prepare``), and building the
tests of the run's ops (~4 s of CPU: onnx's generators, numpy, no torch) only began after
them, beside the exporter's warm-up, and ran on into the workers' time. So, when the run
will measure ONNX's points beside its batch (the conditions ``verify-all`` checks before
calling ``start``), a process is forked as soon as the command line is parsed, before
torch is imported, and imports the generator modules naming the ops the run will most
likely prove (``--ops``' names, else every op a catalogue module names), in memory only.

It writes nothing until the parent, its selection prepared and checked (a bad one still
fails in one line, exit 2, before any work: the parent then kills it), sends the run's ops
(``go``); it then writes their tests to the cache (``store.prefetch``, the files the
process beside the batch and the parent read) and says so. The process beside the batch
waits for that (``wait``) before it reads them and measures. The tests are the same as
collecting them afresh: each generator runs after ``np.random.seed(0)``, a module's tests
are filtered by op, and when the modules the ops need were not imported in the order
collecting imports them (``_in_order``) it writes nothing and the process beside the batch
collects them itself -- as it does when this process is killed or raises.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import re
from pathlib import Path
from typing import Any, Sequence

from . import timeline
from .forked import detach

WAIT_S = 120.0
"""How long the process beside the batch waits for this one before it collects itself."""

_EARLY: list[Any] = []   # [process, our end of its pipe, go sent], in the parent (and its forks)


def beside_batch(*, numeric: bool, onnx_points: int, default_domain: bool, jobs: Any,
                 case_free: bool, onnx_src: str | None, cache_dir: str | None) -> bool:
    """Whether a run measures ONNX's points beside its batch: numeric checks on, points
    asked for, ai.onnx, more than one job (``--jobs 1``: one process at work was asked
    for), not case-free, the installed onnx's tests (no ``--onnx-src``), a cache to hand
    the tests through. The one predicate ``verify.run`` (the process beside the batch) and
    ``verify-all``'s command line (this module's process, forked before ``verify.Request``
    exists) both ask."""
    return (numeric and onnx_points > 0 and default_domain and isinstance(jobs, int)
            and jobs > 1 and not case_free and onnx_src is None and cache_dir is not None)


def start(cache_dir: str, ops: str | None) -> None:
    """Fork the process that builds the tests ahead (``ops``: ``--ops`` as given)."""
    stop()
    ctx = multiprocessing.get_context("fork")
    ours, theirs = ctx.Pipe(duplex=True)
    proc = ctx.Process(target=_early, args=(Path(cache_dir), ops, os.getpid(), theirs, ours),
                       daemon=True)
    proc.start()
    theirs.close()   # so its death reads as EOF here
    _EARLY[:] = [proc, ours, False]
    timeline.mark(f"ONNX's tests: process {proc.pid} forked to build them ahead")


def go(ops: Sequence[str]) -> None:
    """The run's ops, its selection checked: write their tests to the cache."""
    if not _EARLY:
        return
    try:
        _EARLY[1].send_bytes(json.dumps(sorted(ops)).encode())
        _EARLY[2] = True
    except OSError:
        stop()


def wait() -> dict[str, Any] | None:
    """In the process beside the batch: until the early process has written the tests (its
    end for the timeline), or is gone (None)."""
    if not _EARLY or not _EARLY[2]:
        return None
    try:
        if _EARLY[1].poll(WAIT_S):
            return json.loads(_EARLY[1].recv_bytes())
    except (EOFError, OSError, ValueError):
        pass
    return None


def stop(beside: Any = None) -> None:
    """The parent: let a process that was told ``go`` finish its writes, then make sure it
    is gone (one never told is killed at once: it has written nothing). ``beside``: what
    the process beside the batch returned (its ``early``: this one's end, for the timeline)."""
    early = beside.get("early") if isinstance(beside, dict) else None
    if early:
        timeline.mark("ONNX's tests: written ahead", early["at"], early["cpu"], early["pid"])
    if not _EARLY:
        return
    proc, conn, sent = _EARLY
    _EARLY.clear()
    try:
        if sent:
            conn.poll(WAIT_S)
    except (EOFError, OSError):
        pass
    conn.close()
    proc.join(5 if sent else 0)
    if proc.exitcode is None:
        proc.kill()
        proc.join()


def guess(ops: str | None) -> list[str]:
    """The ops a run will likely prove: ``--ops``' names, else the ai.onnx ops a catalogue
    module names (the catalogue itself imports torch). Only a guess: what is written is
    decided by ``go``'s ops."""
    if ops is not None:
        return sorted({o.strip() for o in ops.split(",") if o.strip()})
    import onnx.defs
    names = {s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain == ""}
    words: set[str] = set()
    for path in (Path(__file__).parent.parent / "cases").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        if "Case(" in text:   # a module that defines cases, not a list of ops without one
            words |= set(re.findall(r"\b[A-Z]\w*", text))
    return sorted(words & names)


def _in_order(imported: Sequence[str], needed: Sequence[str]) -> bool:
    """Whether the modules ``needed`` were (or will be, after ``imported``) imported in the
    order collecting imports them: an op's tests then come in the same order."""
    have = set(imported)
    wanted = set(needed)
    return [m for m in imported if m in wanted] + [m for m in needed if m not in have] \
        == list(needed)


def _early(cache_dir: Path, ops: str | None, parent_pid: int, conn, inherited) -> None:
    detach(parent_pid, [inherited])
    try:
        from ..engine.onnx_points import source, store
        with source.without_snippets():   # this process collects and exits
            imported = source.modules_naming(store.uncached(cache_dir, guess(ops)))
            source.import_generators(imported)
            run_ops = json.loads(conn.recv_bytes())   # EOF: the parent stopped; exit
            if _in_order(imported, source.modules_naming(store.uncached(cache_dir, run_ops))):
                store.prefetch(cache_dir, run_ops)
        conn.send_bytes(json.dumps(timeline.stamp()).encode())
    finally:
        os._exit(0)
