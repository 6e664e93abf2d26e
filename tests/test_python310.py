"""Python 3.10 (README, Setup): the code parses on 3.10 and takes 3.11's names from compat.

What a 3.11 test run can check about 3.10, and what it checks with a python3.10 when the
machine has one:

- every module takes ``StrEnum`` and ``tomllib`` from ``torch_prover/compat.py``, never from
  the standard library (3.10 has neither) -- read from the source, so it holds on any
  interpreter;
- ``python3.10 -m compileall`` accepts the package, scripts and tests (ruff's
  ``target-version = "py310"`` also reports 3.10-unparsable syntax in the lint step);
- compat's 3.10 ``StrEnum`` behaves as 3.11's where the code relies on it: ``str()``,
  ``format()`` and equality are the value's.

A machine without python3.10 (looked up on PATH and in pyenv's usual place) skips the last
two with that reason, shown by ``-ra`` in the test summary; the first still runs.
"""
from __future__ import annotations

import ast
import glob
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ELEVEN = {("enum", "StrEnum"), ("tomllib", None)}


def _python310() -> str | None:
    """A python3.10 that runs (a pyenv shim on PATH may name a version it cannot run)."""
    candidates = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.10.*/bin/python3.10")))
    candidates += [c for c in [shutil.which("python3.10")] if c]
    for c in candidates:
        try:
            ok = subprocess.run([c, "-c", "import sys; print(sys.version_info[:2])"],
                                capture_output=True, text=True, timeout=60)
        except OSError:
            continue
        if ok.stdout.strip() == "(3, 10)":
            return c
    return None


def test_no_module_takes_311_names_from_the_standard_library():
    bad = []
    for path in sorted((ROOT / "torch_prover").rglob("*.py")):
        if path.name == "compat.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                bad += [f"{path.relative_to(ROOT)}:{node.lineno} from {node.module} import "
                        f"{a.name}" for a in node.names if (node.module, a.name) in ELEVEN]
            elif isinstance(node, ast.Import):
                bad += [f"{path.relative_to(ROOT)}:{node.lineno} import {a.name}"
                        for a in node.names if (a.name, None) in ELEVEN]
            elif isinstance(node, ast.Attribute) and node.attr == "StrEnum" and isinstance(
                    node.value, ast.Name) and node.value.id == "enum":
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno} enum.StrEnum")
    assert not bad, bad


@pytest.fixture
def python310() -> str:
    found = _python310()
    if found is None:
        pytest.skip("no python3.10 on this machine (PATH, ~/.pyenv): the 3.10 syntax check "
                    "is ruff's (target-version py310) alone")
    return found


def test_python310_compiles_everything(python310, tmp_path):
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(tmp_path))   # no .pyc in the checkout
    done = subprocess.run([python310, "-m", "compileall", "-q", "-x", r"tests/data/",
                           "torch_prover", "scripts", "tests"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_compat_strenum_on_python310(python310):
    # compat.py on 3.10, tomli stood in for (a bare python3.10 has no dependencies)
    code = f"""
import sys, types
sys.modules["tomli"] = types.ModuleType("tomli")
ns = {{}}
exec(compile(open({str(ROOT / "torch_prover" / "compat.py")!r}).read(), "compat.py", "exec"), ns)
assert sys.version_info[:2] == (3, 10)
class Word(ns["StrEnum"]):
    AGREE = "agree"
w = Word.AGREE
assert str(w) == "agree" and f"{{w}}" == "agree" and w == "agree" and Word("agree") is w
assert "{{}}".format(w) == "agree" and isinstance(w, str)
print("ok")
"""
    done = subprocess.run([python310, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "ok", done.stdout + done.stderr
