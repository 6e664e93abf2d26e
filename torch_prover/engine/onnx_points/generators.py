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
new version of an op, or an op the pinned release already has), measured in the installed
onnx's runtimes, as committed tests are; and for an op the installed onnx lacks (no schema
there, so ONNX's ``expect`` cannot build its tests), its tests built in the child from the
arrays and measured there, the runtime of the numeric witness the PR's Python reference
implementation (``onnx/reference/ops/op_<op>.py``), its tags the PR's docs'. What it does
not: such an op has no function body here (no body witness), no onnxruntime kernel (no
second runtime), and the reference implementation is the PR's word for its semantics, not
the build's; an op without one is named and decided on the PR's build. The child is a
separate process, not a sandbox: code that means to write elsewhere can, as any CI step
can; the CI job's runner is the boundary, as it is for the build the gate otherwise needs.
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
from ...tags.schema import SchemaTags
from .source import NodeTest, Skipped, from_checkout
from .witness import TestWitness

GENERATORS = Path("onnx") / "backend" / "test" / "case" / "node"
"""Where an ONNX checkout keeps its node tests' generators."""
REFERENCE = Path("onnx") / "reference" / "ops"
"""Where it keeps its Python reference implementations (``op_<op>.py``)."""
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
    measured: tuple[TestWitness, ...] = ()   # an op the installed onnx lacks, measured there


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


def _run_child(scratch: Path, spec: dict, timeout: float) -> str | None:
    """Run the generators in the child; why it failed as a whole, or None."""
    (scratch / "spec.json").write_text(json.dumps(spec))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(scratch),
           "TMPDIR": str(scratch), "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg"}
    proc = subprocess.Popen([sys.executable, "-I", str(CHILD), str(scratch / "out"),
                             str(scratch / "spec.json")], cwd=scratch, env=env, start_new_session=True,
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


def _spec_of(checkout: Path, op: str, tags: SchemaTags) -> dict:
    """What the child needs of an op the installed onnx lacks: its version and tags (the
    PR's docs) and the PR's reference implementation, if the PR has one."""
    ref = Path(checkout) / REFERENCE / f"op_{op.lower()}.py"
    return {"version": tags.since_version,
            "reference": str(ref) if _regular(ref) and _PLAIN.fullmatch(ref.name) else None,
            "tags": {io: [{"name": f.name, "tag": f.tag, "option": f.option,
                           "types": list(f.types)} for f in formals]
                     for io, formals in (("input", tags.inputs), ("output", tags.outputs))}}


def _measured(out: Path, new: dict[str, SchemaTags]) -> list[TestWitness]:
    """The child's witnesses of the new ops, each checked: its op asked, its version the
    PR's, its parameters the PR's formals (anything else is dropped)."""
    try:
        data = json.loads(read_text(out / "measured.json", Bound.RECORD))
        found = [TestWitness.from_dict(d) for d in data[:200]]
    except (InputError, ValueError, KeyError, TypeError, AttributeError):
        return []
    keep = []
    for w in found:
        t = new.get(w.op)
        names = {(f.io, f.name) for f in (t.inputs + t.outputs)} if t else set()
        if t and w.version == t.since_version and all((p.io, p.name) in names
                                                      for p in w.params):
            keep.append(TestWitness(_inert(w.test), w.op, w.version, _inert(w.runtime or ""),
                                    w.params, w.skip, _inert(w.detail)))
    return keep


def generate(checkout: str | os.PathLike, ops: Iterable[str], timeout: float = TIMEOUT,
             new: dict[str, SchemaTags] | None = None, per_version: int = 4) -> Generated:
    """The node tests the checkout's generators write for ``ops``, built in a child; for
    the ops in ``new`` (the installed onnx lacks them: their tags from the PR's docs), the
    tests measured there with the PR's reference implementation."""
    new = new or {}
    files = generator_files(checkout, set(ops) | set(new))
    if not files:
        return Generated((), (), (f"no generator in {GENERATORS} names "
                                  f"{', '.join(sorted(set(ops) | set(new)))}",))
    scratch = Path(tempfile.mkdtemp(prefix="torch-prover-generators-"))
    spec = {"files": [str(p) for p in files], "per_version": per_version,
            "new": {op: _spec_of(Path(checkout), op, t) for op, t in new.items()}}
    try:
        failed = _run_child(scratch, spec, timeout)
        out = scratch / "out"
        problems = [failed] if failed else _manifest(out)
        tests = tuple(from_checkout(out)) if failed is None and \
            (out / "onnx" / "backend" / "test" / "data" / "node").is_dir() else ()
        measured = tuple(_measured(out, new)) if failed is None else ()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return Generated(tests, tuple(p.name for p in files), tuple(problems), measured)
