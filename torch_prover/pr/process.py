"""The prover's side of a script's process: start it, bound it, read what it printed.

Why this shape (the child's side is :mod:`child`, which says why a fork):

- **killable as a tree**: the child leads a process group and is the subreaper of every
  process the script starts (:mod:`reap`), so a timeout or an interrupt kills the script
  and everything it started, daemons that left the group included; after a normal end
  the child kills its own tree before it exits, so nothing the script left running
  outlives it or holds the caller's pipes;
- **dies with the prover**: the child watches a pipe only the prover holds open;
- **output bounded**: stdout and stderr come through one pipe into :class:`OutputTail`,
  which keeps the last :data:`MAX_LINES` lines and :data:`MAX_BYTES` bytes and counts the
  rest, so ten megabytes of prints cost the prover nothing and every report can say what
  it dropped;
- **nothing unpickled**: the parent sends the job (pickled by multiprocessing, parent to
  child only); the child answers in files (:mod:`wire`) and by its exit status;
- **started the cheapest safe way** (:class:`Start`): a process that runs many scripts (a
  sweep, a library caller, the tests) forks each from the warm fork server; ``run``, one
  script in a process that has imported torch and proved nothing yet, forks the script's
  process from itself -- a second interpreter importing torch again, and warming an
  exporter the script may not use, cost more CPU than the whole proof
  (docs/performance.md, issue 43).
"""
from __future__ import annotations

import contextlib
import enum
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing import spawn
from pathlib import Path
from typing import Callable, Iterator

from .reap import kill_tree

MAX_LINES = 200
MAX_BYTES = 64 * 1024
DEFAULT_TIMEOUT = 300.0
_READ_GRACE = 2.0       # seconds to drain the pipe after the child ended
SERVER_MODULE = "torch_prover.pr.server"   # the preload: imports and warms the exporter


@dataclass(frozen=True)
class Output:
    """What the script printed (stdout and stderr, interleaved), capped to its tail."""

    text: str
    dropped_lines: int = 0
    dropped_bytes: int = 0

    @property
    def truncated(self) -> bool:
        return bool(self.dropped_lines or self.dropped_bytes)

    def note(self) -> str:
        """One line saying what was dropped ('' when nothing was): every format shows it."""
        if not self.truncated:
            return ""
        return (f"[torch-prover: {self.dropped_lines} earlier line(s), {self.dropped_bytes} "
                f"byte(s) of the script's output dropped; the last {MAX_LINES} lines / "
                f"{MAX_BYTES // 1024} KiB are kept]")

    def record(self) -> dict:
        return {"text": self.text, "dropped_lines": self.dropped_lines,
                "dropped_bytes": self.dropped_bytes, "note": self.note() or None}


class OutputTail:
    """Keeps the last ``max_lines`` lines and ``max_bytes`` bytes of a byte stream."""

    def __init__(self, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES):
        self.max_lines, self.max_bytes = max_lines, max_bytes
        self.lines: deque[bytes] = deque()
        self.partial = b""
        self.size = 0                     # bytes in self.lines
        self.total_bytes = self.total_lines = 0
        self.lock = threading.Lock()      # a reader may outlive the wait (an escaped grandchild)

    def feed(self, data: bytes) -> None:
        with self.lock:
            self._feed(data)

    def _feed(self, data: bytes) -> None:
        self.total_bytes += len(data)
        *complete, self.partial = (self.partial + data).split(b"\n")
        for line in complete:
            self.lines.append(line + b"\n")
            self.size += len(line) + 1
            self.total_lines += 1
        if len(self.partial) > self.max_bytes:        # one endless line
            self.partial = self.partial[-self.max_bytes:]
        while self.lines and (len(self.lines) + bool(self.partial) > self.max_lines
                              or self.size + len(self.partial) > self.max_bytes):
            self.size -= len(self.lines.popleft())

    def output(self) -> Output:
        with self.lock:
            return self._output()

    def _output(self) -> Output:
        kept = b"".join(self.lines) + self.partial
        lines = self.total_lines + bool(self.partial)
        return Output(kept.decode("utf-8", errors="replace"),
                      lines - len(self.lines) - bool(self.partial),
                      self.total_bytes - len(kept))


class Start(enum.Enum):
    """How the script's process is started; either way it is a fresh fork in which nothing
    of the prover has run a proof, and the script can change no process but its own."""

    FORK_SERVER = "multiprocessing forkserver"
    """A fork of the warm fork server (:mod:`server`): for a process that runs scripts more
    than once or has computed with torch (threads, runtime sessions) before."""
    FORK = "fork of torch-prover's process before it proved anything"
    """A fork of the calling process: only where it has imported torch and the child's code
    and done nothing else with them (``run``: the arguments checked, nothing proved), so
    the script's process starts as the server's children do, without a second
    interpreter's imports and the server's warm-up. Refused (the fork server starts it)
    while another Python thread runs here."""

    def record(self) -> str:
        """The report's ``script.isolation.process``."""
        return f"child ({self.value}, own process group)"


class ChildEnd(enum.Enum):
    FINISHED = "finished"       # exit status 0 and a capture written
    EXITED = "exited"           # ended without a capture: os._exit, or a status != 0
    SIGNALED = "signaled"       # killed by a signal (a segfault, an abort, a kill)
    TIMED_OUT = "timed-out"     # killed by the prover at --timeout


@dataclass(frozen=True)
class ChildResult:
    end: ChildEnd
    status: int | None          # exit status, or signal number for SIGNALED
    output: Output
    seconds: float
    start: Start = Start.FORK_SERVER

    def reason(self, timeout: float) -> str:
        """One line for a child that produced no capture."""
        if self.end is ChildEnd.TIMED_OUT:
            return (f"the script did not finish within {timeout:g} s (--timeout); it was "
                    "killed, with any process it started")
        if self.end is ChildEnd.SIGNALED:
            try:
                name = signal.Signals(self.status).name
            except ValueError:
                name = f"signal {self.status}"
            return f"the script's process was killed by {name} (a crash?) before it finished"
        return (f"the script's process ended with exit status {self.status} before it finished "
                "(os._exit, or a crash), so there is nothing to prove")


def _context(start: Start = Start.FORK_SERVER):
    if start is Start.FORK:
        return multiprocessing.get_context("fork")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([SERVER_MODULE])   # only effective before the server starts
    return ctx


@contextlib.contextmanager
def _without_main() -> Iterator[None]:
    """Start a child without re-running the prover's ``__main__`` in it.

    multiprocessing's spawn and forkserver children import the parent's main module first
    (so that pickled functions defined there resolve). The child's code lives in
    :mod:`child`, so that import is only a cost -- and a hazard: an unguarded main
    module would run again in the script's process. The preparation data is filtered for
    the duration of ``Process.start()``; nothing else of multiprocessing changes."""
    real = spawn.get_preparation_data

    def preparation(name: str) -> dict:
        data = real(name)
        data.pop("init_main_from_name", None)
        data.pop("init_main_from_path", None)
        return data
    spawn.get_preparation_data = preparation
    try:
        yield
    finally:
        spawn.get_preparation_data = real


def _kill_group(pid: int) -> None:
    """SIGKILL the child's process group (it leads one once it has started)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _reader(fd: int, tail: OutputTail) -> threading.Thread:
    """Feed ``tail`` from ``fd`` until EOF; the thread owns ``fd`` and closes it (closing it
    from outside while a read is pending could hand the number to another file)."""
    def read() -> None:
        try:
            while data := os.read(fd, 1 << 16):
                tail.feed(data)
        except OSError:
            pass
        finally:
            os.close(fd)
    thread = threading.Thread(target=read, name="torch-prover-script-output", daemon=True)
    thread.start()
    return thread


def run_child(script: str, outdir: Path, timeout: float = DEFAULT_TIMEOUT,
              meanwhile: Callable[[], None] | None = None,
              start: Start = Start.FORK_SERVER) -> ChildResult:
    """Run ``script`` in a child (cwd, environment and argv as ``python SCRIPT``), the
    capture going into ``outdir``; never longer than ``timeout`` seconds. ``meanwhile``
    runs in this process while the child does (the prover's own preparations). ``start``:
    :class:`Start` (``FORK`` only from a process that has proved nothing yet)."""
    from .child import ChildJob, child_main
    from .wire import MANIFEST
    if start is Start.FORK and threading.active_count() > 1:
        start = Start.FORK_SERVER     # a thread here may hold a lock the fork would copy held
    ctx = _context(start)
    out_r, out_w = ctx.Pipe(duplex=False)
    alive_r, alive_w = ctx.Pipe(duplex=False)
    # a fork inherits the prover's ends too: the child closes them first, or the script's
    # process would hold the pipe that tells it the prover has gone (and its own output)
    ours = (out_r.fileno(), alive_w.fileno()) if start is Start.FORK else ()
    job = ChildJob(script, os.getcwd(), dict(os.environ), str(outdir.resolve()), ours)
    if start is Start.FORK:       # nothing buffered here is written twice by the fork
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
    proc = ctx.Process(target=child_main, args=(job, out_w, alive_r),
                       name="torch-prover-script")
    tail = OutputTail()
    t0 = time.monotonic()
    with _without_main():
        proc.start()
    try:
        out_w.close()
        alive_r.close()
        reader = _reader(os.dup(out_r.fileno()), tail)
        out_r.close()
        if meanwhile is not None:
            meanwhile()
        proc.join(max(0.0, timeout - (time.monotonic() - t0)))
        timed_out = proc.exitcode is None
        if timed_out:                 # the script and every process below it (reap.py)
            kill_tree(proc.pid)
        _kill_group(proc.pid)         # else what it left running in its group
        if timed_out:
            proc.kill()
            proc.join()
        reader.join(_READ_GRACE)
    finally:
        if proc.exitcode is None:     # interrupted (KeyboardInterrupt) while waiting
            kill_tree(proc.pid)
            _kill_group(proc.pid)
            proc.kill()
            proc.join()
        alive_w.close()
        out_r.close()     # idempotent; the reader has its own descriptor
    seconds = time.monotonic() - t0
    code = proc.exitcode
    if timed_out:
        end, status = ChildEnd.TIMED_OUT, None
    elif code is not None and code < 0:
        end, status = ChildEnd.SIGNALED, -code
    elif code == 0 and (outdir / MANIFEST).is_file():
        end, status = ChildEnd.FINISHED, 0
    else:
        end, status = ChildEnd.EXITED, code
    return ChildResult(end, status, tail.output(), seconds, start)
