"""An opt-in timeline of one run: ``TORCH_PROVER_TIMINGS=1 torch-prover verify-all ...``
prints, on stderr before the exit, when each stage of the run started and ended (seconds of
wall time since the process started, read from /proc) and the CPU time of the process that
did it -- the parent's stages, each worker's first and last case and CPU, the process
beside the batch, the children's CPU once they are reaped.

It exists to find the serial parts of a cold run (issue 43: a stage measured, not guessed;
docs/performance.md). Off, ``mark`` is one attribute test: nothing is recorded or printed.
"""
from __future__ import annotations

import os
import resource
import sys
import time
from typing import Any, TextIO

ENV = "TORCH_PROVER_TIMINGS"
ON = os.environ.get(ENV) == "1"

_events: list[tuple[float, float, int, str]] = []   # (epoch, CPU s of pid, pid, what)


def started() -> float:
    """When this process started (epoch seconds, to the kernel's clock tick), or now."""
    try:
        from pathlib import Path
        fields = Path("/proc/self/stat").read_text().rpartition(")")[2].split()
        ticks = int(fields[19])   # field 22, starttime: clock ticks since boot
        up = float(Path("/proc/uptime").read_text().split()[0])   # /proc/stat's btime: whole s
        return time.time() - (up - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, StopIteration):
        return time.time()


def cpu() -> float:
    """This process's CPU time (user + system), seconds."""
    t = os.times()
    return t.user + t.system


def children_cpu() -> float:
    """The CPU time of the reaped children (user + system), seconds."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def mark(what: str, at: float | None = None, cpu_s: float | None = None,
         pid: int | None = None) -> None:
    """Record an event: now, in this process, unless given (a worker's, from its message)."""
    if ON:
        _events.append((time.time() if at is None else at, cpu() if cpu_s is None else cpu_s,
                        os.getpid() if pid is None else pid, what))


def stamp() -> dict[str, Any]:
    """What a forked process sends back for its events: its pid, the time, its CPU."""
    return {"pid": os.getpid(), "at": time.time(), "cpu": cpu()}


_last: dict[int, tuple[float, float, str, int]] = {}   # pid -> its last case's end, count


def worker_case(msg: dict[str, Any], name: str) -> None:
    """A worker's answer (``pool._worker``'s: ``began``, ``ended``): its first case's start
    is marked now, its last case's end by ``workers_done``."""
    end = msg["ended"]
    pid = end["pid"]
    if pid not in _last:
        mark(f"worker: first case {name} began", msg["began"], 0.0, pid)
    _last[pid] = (end["at"], end["cpu"], name, _last.get(pid, (0, 0, "", 0))[3] + 1)


def workers_done() -> None:
    for pid, (at, cpu_s, name, n) in _last.items():
        mark(f"worker: last case {name} ended ({n} cases)", at, cpu_s, pid)
    _last.clear()


def emit(stream: TextIO = sys.stderr) -> None:
    """Print the events in time order (nothing when off)."""
    if not ON or not _events:
        return
    zero, me = started(), os.getpid()
    mark("exit (children's CPU %.2f s)" % children_cpu())
    for at, cpu_s, pid, what in sorted(_events):
        who = "main" if pid == me else str(pid)
        stream.write(f"timeline: {at - zero:7.2f} s  cpu {cpu_s:6.2f} s  {who:>7}  {what}\n")
    _events.clear()
