"""``torch-prover --help`` and every command's ``--help``, compared with the text recorded in
tests/data/help/: the help strings are the users' documentation of every option, so moving
the command line's code (issue 36: ``cli.py`` became the ``cli/`` package) must leave them
as they were. The files were written from ``cli.py`` before the move.

argparse lays help out differently from one Python version to the next (3.13 prints
``-o, --output OUTPUT`` where 3.11 prints ``-o OUTPUT, --output OUTPUT``), so the text is
recorded per Python version, in ``tests/data/help/python3.X/``; a Python with no recording
is skipped with that reason. ``TORCH_PROVER_UPDATE_HELP=1`` writes the recording of the
running Python instead of comparing (for the author; CI never sets it)."""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torch_prover import cli

PYTHON = f"python{sys.version_info.major}.{sys.version_info.minor}"
RECORDED = Path(__file__).parent / "data" / "help" / PYTHON
TOP = "torch-prover"
"""The file of ``torch-prover --help``; every other file is named after its command."""
UPDATE = os.environ.get("TORCH_PROVER_UPDATE_HELP") == "1"


@pytest.fixture(autouse=True)
def _fixed_terminal(monkeypatch):
    """argparse wraps help at the terminal's width, COLUMNS first: 100, as the docs' examples
    are printed; no colour (Python 3.14's argparse colours help unless told not to)."""
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.delenv("LINES", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("PYTHON_COLORS", "0")
    if not UPDATE and not RECORDED.is_dir():
        pytest.skip(f"no --help recorded for {PYTHON} (tests/data/help/ holds "
                    f"{', '.join(sorted(p.name for p in RECORDED.parent.iterdir()))}): "
                    "argparse's layout differs between Python versions")


def _argv(name: str) -> list[str]:
    return ["--help"] if name == TOP else [name, "--help"]


def _help(name: str) -> str:
    """What ``cli.main`` prints for ``--help``: argparse prints it and exits 0."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(_argv(name))
    assert code == 0, f"{' '.join(_argv(name))}: exit {code}"
    return out.getvalue()


def _recorded(name: str) -> str:
    return (RECORDED / f"{name}.txt").read_text(encoding="utf-8")


def test_every_command_has_its_help_recorded():
    """The recording covers the top level and each command the CLI dispatches: a command
    added later must record its help too (TORCH_PROVER_UPDATE_HELP=1)."""
    names = [TOP, *sorted(cli.COMMANDS)]
    if UPDATE:
        RECORDED.mkdir(parents=True, exist_ok=True)
        for old in RECORDED.glob("*.txt"):
            old.unlink()
        for name in names:
            (RECORDED / f"{name}.txt").write_text(_help(name), encoding="utf-8")
    assert sorted(p.stem for p in RECORDED.glob("*.txt")) == sorted(names)


@pytest.mark.parametrize("name", [TOP, "prove", "verify-all", "merge", "node-tests", "report",
                                  "coverage", "run", "script", "fix-tags", "new-case",
                                  "check-evidence", "tags"])
def test_help_is_unchanged(name):
    assert _help(name) == _recorded(name)


def test_the_console_script_prints_the_same_help():
    """The entry point as a user runs it (``python -m torch_prover``, which calls what the
    ``torch-prover`` script calls): the same text, through the real stdout."""
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1", "PYTHON_COLORS": "0"}
    env.pop("LINES", None)
    for name in (TOP, "verify-all"):
        done = subprocess.run([sys.executable, "-m", "torch_prover", *_argv(name)],
                              capture_output=True, text=True, env=env, timeout=60)
        assert (done.returncode, done.stderr) == (0, "")
        assert done.stdout == _recorded(name)
