"""ONNX's node tests from a PR's own Python, where its checkout commits none.

ONNX stopped committing ``onnx/backend/test/data/node`` (onnx #7959, 2026-08-04): a checkout
of today's main has the tests' generators (``onnx/backend/test/case/node/<op>.py``, which a
PR adding an op must add) and no data. So the PR gate runs the generators of the ops it
needs -- PR-controlled code, run as a contributor's script is: in a child process
(``generator_child.py``, ``python -I``) with a timeout, its working, home and temporary
directories a scratch directory of ours that the child writes the tests into, its output
discarded -- and reads what it wrote as a checkout's committed tests (``source``), as
hostile data. The scratch directory is deleted after.

What that allows: the tests the PR's generators write for an op the installed onnx has (a
new version of an op, or an op the installed release already has), measured in the
installed onnx's runtimes as committed tests are. What it does not: an op the installed
onnx lacks has no schema there, so its tests are not built (``expect`` needs the schema):
each is named, and the op is decided on the PR's build. The child is a separate process,
not a sandbox: code that means to write elsewhere can, as any CI step can; the CI job's
runner is the boundary, as it is for the build the gate otherwise needs.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ...inputs import Bound, InputError, read_text
from .source import NodeTest, Skipped, from_checkout

GENERATORS = Path("onnx") / "backend" / "test" / "case" / "node"
"""Where an ONNX checkout keeps its node tests' generators."""
TIMEOUT = 300.0
"""Seconds for one run of the generators (ONNX's largest, Cast's, takes ~5 s)."""
CHILD = Path(__file__).with_name("generator_child.py")
_PLAIN = re.compile(r"[a-z0-9_]{1,64}\.py")
"""A generator's file name as ONNX names them (a PR's name is shown: nothing else is run)."""


def _inert(text: str) -> str:
    """A line the child wrote (the PR's test names, its exceptions' text), made plain for
    the comment: printable characters only, no backquote (it is shown in a code span)."""
    return "".join(c for c in text if c.isprintable()).replace("`", "'")[:300]


@dataclass(frozen=True)
class Generated:
    """The tests the PR's generators wrote, the files run, and what could not be made."""

    tests: tuple[NodeTest | Skipped, ...]
    files: tuple[str, ...]
    problems: tuple[str, ...]


def has_generators(checkout: str | os.PathLike) -> bool:
    return (Path(checkout) / GENERATORS).is_dir()


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def generator_files(checkout: str | os.PathLike, ops: Iterable[str]) -> list[Path]:
    """Each op's generator: ``<op lowercased>.py`` (ONNX's naming), else the generators that
    name the op in a string (``make_node("Op", ...)``); regular files only, each read within
    the script bound."""
    root = Path(checkout) / GENERATORS
    files = sorted(p for p in root.glob("*.py") if _regular(p) and p.name != "__init__.py"
                   and _PLAIN.fullmatch(p.name))
    found: dict[str, Path] = {}
    for op in sorted(set(ops)):
        own = root / f"{op.lower()}.py"
        if own in files:
            found[own.name] = own
            continue
        for p in files:
            try:
                if f'"{op}"' in read_text(p, Bound.SCRIPT):
                    found[p.name] = p
            except InputError:
                continue
    return [found[k] for k in sorted(found)]


def _run_child(scratch: Path, files: list[Path], timeout: float) -> str | None:
    """Run the generators in the child; why it failed as a whole, or None."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(scratch),
           "TMPDIR": str(scratch), "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg"}
    proc = subprocess.Popen([sys.executable, "-I", str(CHILD), str(scratch / "out"),
                             *map(str, files)], cwd=scratch, env=env, start_new_session=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return f"the PR's generators ran past {timeout:g} s: stopped, nothing of them used"
    return None if code == 0 else f"the PR's generators' process exited {code}"


def _manifest(out: Path) -> list[str]:
    """What the child says it could not make, one line each (bounded, and only strings)."""
    try:
        data = json.loads(read_text(out / "manifest.json", Bound.RECORD))
        return [_inert(f"{p.get('test') or p.get('file')}: {p['why']}")
                for p in data.get("problems", ()) if isinstance(p, dict)
                and isinstance(p.get("why"), str)][:50]
    except (InputError, ValueError, KeyError, AttributeError, TypeError):
        return ["the generators' manifest is missing or unreadable"]


def generate(checkout: str | os.PathLike, ops: Iterable[str],
             timeout: float = TIMEOUT) -> Generated:
    """The node tests the checkout's generators write for ``ops``, built in a child."""
    files = generator_files(checkout, ops)
    if not files:
        return Generated((), (), (f"no generator in {GENERATORS} names "
                                  f"{', '.join(sorted(set(ops)))}",))
    scratch = Path(tempfile.mkdtemp(prefix="torch-prover-generators-"))
    try:
        failed = _run_child(scratch, files, timeout)
        out = scratch / "out"
        problems = [failed] if failed else _manifest(out)
        tests = tuple(from_checkout(out)) if failed is None and \
            (out / "onnx" / "backend" / "test" / "data" / "node").is_dir() else ()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return Generated(tests, tuple(p.name for p in files), tuple(problems))
