"""Every process a script started, found and killed -- daemons included.

Why not the process group alone: a daemon leaves it (``fork``, ``setsid``, ``fork``), so
``killpg`` misses it; it then outlives the run, holding whatever pipes it inherited, and a
caller reading the prover's output waits for it forever. So the script's process is made a
*child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``): an orphan among its descendants is
re-parented to it rather than to init, which keeps the whole tree below it, visible in
``/proc`` by parent pid, until it ends. :func:`kill_tree` stops the tree (so nothing
forks while it is walked), then kills it: the script's process does it to its own tree
before it exits, the prover does it at ``--timeout`` and when interrupted, and the child's
parent-watch thread when the prover dies.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux); False if refused."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state letter: ``Z`` for a zombie) of every process in /proc."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        found[int(entry.name)] = (int(ppid), state)
    return found


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (children, their children, ...)."""
    children: dict[int, list[int]] = {}
    for p, (parent, _) in processes().items():
        children.setdefault(parent, []).append(p)
    out: set[int] = set()
    todo = list(children.get(pid, ()))
    while todo:
        p = todo.pop()
        if p not in out:
            out.add(p)
            todo.extend(children.get(p, ()))
    return out


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def kill_tree(pid: int, include_root: bool = True) -> set[int]:
    """SIGKILL every descendant of ``pid`` (and ``pid`` itself unless ``include_root`` is
    False); returns the descendants found. Each is stopped first and the tree walked again
    until nothing new appears, so a process forking meanwhile cannot slip out."""
    if include_root:
        _signal(pid, signal.SIGSTOP)
    stopped: set[int] = set()
    for _ in range(1000):                     # a bound, not a budget: trees are small
        new = descendants(pid) - stopped
        if not new:
            break
        for p in new:
            _signal(p, signal.SIGSTOP)
        stopped |= new
    for p in stopped:
        _signal(p, signal.SIGKILL)
    if include_root:
        _signal(pid, signal.SIGKILL)
    return stopped
