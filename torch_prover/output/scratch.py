"""Scratch directories under ``$TMPDIR`` that a killed run cannot leave behind for good.

``fix-tags`` checks its patch on a copy of the sources (``fix/patch.py``); a ``kill -9``
during the check skips every ``finally``, and the copy (megabytes) stays. So a scratch
directory is named after the process that made it -- ``torch-prover-<purpose>.<boot>.
<pid>.<start>.<random>``: the boot, the process id and its start time (``/proc/<pid>/stat``),
which together name one process for good -- and every later ``scratch`` of the same
purpose removes those whose process is gone. Only a directory with that exact name, owned
by this user and not a symlink, is ever removed (docs/safety.md: we delete only what is
provably ours).
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Iterator


def boot_id() -> str:
    """This boot's id (its first 8 hex digits), as scratch directory names carry it."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip().replace("-", "")[:8]
    except OSError:
        return "00000000"


def start_time(pid: int) -> int | None:
    """The process's start time (clock ticks since boot), None when it is gone."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat_line.rsplit(")", 1)[1].split()
    return int(fields[19]) if fields[0] != "Z" else None   # field 22: starttime


def process_prefix(purpose: str, hidden: bool = False) -> str:
    """The name prefix of a scratch directory of ``purpose`` made by this process (a
    ``tempfile.mkdtemp`` prefix: a random tail follows); ``hidden``: led by a dot, for one
    made beside a user's outputs (``output/commit.py``)."""
    pid = os.getpid()
    return f"{'.' if hidden else ''}torch-prover-{purpose}.{boot_id()}.{pid}.{start_time(pid)}."


def _pattern(purpose: str, hidden: bool) -> re.Pattern[str]:
    dot = r"\." if hidden else ""
    return re.compile(rf"^{dot}torch-prover-{re.escape(purpose)}\.([0-9a-f]{{8}})\.(\d+)\.(\d+)"
                      r"\.\w+$")


def scratch_boot(path: Path) -> str | None:
    """The boot a scratch directory's name says it was made on (None: not such a name)."""
    m = re.match(r"^\.?torch-prover-[\w-]+\.([0-9a-f]{8})\.", Path(path).name)
    return m.group(1) if m else None


def leftovers(purpose: str, root: Path | None = None, hidden: bool = False) -> list[Path]:
    """Scratch directories of ``purpose`` whose process is gone: ours to remove."""
    root = Path(root or tempfile.gettempdir())
    pattern, boot, uid = _pattern(purpose, hidden), boot_id(), os.getuid()
    out = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    for e in entries:
        m = pattern.match(e.name)
        if m is None:
            continue
        try:
            st = os.lstat(e.path)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid:
            continue
        alive = m.group(1) == boot and start_time(int(m.group(2))) == int(m.group(3))
        if not alive:
            out.append(Path(e.path))
    return sorted(out)


@contextlib.contextmanager
def scratch(purpose: str) -> Iterator[Path]:
    """A new scratch directory, removed when the block ends; the leftovers of killed runs
    of the same purpose are removed first."""
    for old in leftovers(purpose):
        shutil.rmtree(old, ignore_errors=True)
    d = Path(tempfile.mkdtemp(prefix=process_prefix(purpose)))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)
