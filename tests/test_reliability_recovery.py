"""Reliability round 6 (issue 42), problems 3, 6 and 7: what a killed commit leaves between
the kill and the next write, what recovery may replay over, and the kill tests' hook
(docs/safety.md, "All outputs of a command commit together"; ``output/commit.py``).

The kills are deterministic as in round 5 (tests/test_reliability_commit.py): the child is
run with ``TORCH_PROVER_TEST_STOP_AT=<step>``, stops itself there, and is killed with -9.
Expectations come from outside the code under test: the texts the tests write themselves
(old, new, the user's edit), and what an unkilled run leaves.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from torch_prover import cli
from torch_prover.errors import OutputError
from torch_prover.output.commit import STOP_AT, TEST_HOOKS, recover

ROOT = Path(__file__).resolve().parent.parent
PAIR = """
import sys
from pathlib import Path
from torch_prover.output.commit import write_texts
d = Path(sys.argv[1])
write_texts({d / "r.md": "new summary", d / "r-details.md": "new details"})
"""
STEPS = ["staged", "journal", "placed:r.md", "moved:r.md", "placed:r-details.md",
         "moved:r-details.md", "committed"]


def _killed_at(step: str, d: Path) -> None:
    """The pair's commit into ``d`` (old pair in place), stopped at ``step`` and killed."""
    (d / "r.md").write_text("old summary")
    (d / "r-details.md").write_text("old details")
    proc = subprocess.Popen([sys.executable, "-c", PAIR, str(d)],
                            env={**os.environ, STOP_AT: step})
    _, status = os.waitpid(proc.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), step
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def _scratch(d: Path) -> list[Path]:
    return [p for p in d.iterdir() if p.name.startswith(".torch-prover-commit.")]


@pytest.mark.parametrize("step", STEPS)
def test_problem_06_between_a_kill_and_the_next_write_each_output_is_there(tmp_path, step):
    """Killed at any step, before any command ran there again: each output name holds its
    old text or its new one -- never absent (the old file used to be moved away first)."""
    _killed_at(step, tmp_path)
    for name, what in (("r.md", "summary"), ("r-details.md", "details")):
        assert (tmp_path / name).exists(), (step, name)
        assert (tmp_path / name).read_text() in (f"old {what}", f"new {what}")
    recover(tmp_path)
    want = "old" if step == "staged" else "new"
    assert (tmp_path / "r.md").read_text() == f"{want} summary"
    assert (tmp_path / "r-details.md").read_text() == f"{want} details"
    assert not _scratch(tmp_path)


@pytest.mark.parametrize("step", ["journal", "placed:r.md", "moved:r.md"])
def test_problem_03_recovery_never_replays_over_a_users_edit(tmp_path, step):
    """Killed mid-commit, then the user edits the report they see: the next write stops
    before anything moves, naming the edited file, and the edit stays (the journal's state
    used to be played over it)."""
    _killed_at(step, tmp_path)
    (tmp_path / "r.md").write_text("my edit")
    details = (tmp_path / "r-details.md").read_text()
    with pytest.raises(OutputError, match=r"r\.md: changed since a killed torch-prover run"):
        recover(tmp_path)
    assert (tmp_path / "r.md").read_text() == "my edit"
    assert (tmp_path / "r-details.md").read_text() == details
    assert _scratch(tmp_path)   # left for the user to read


def test_problem_03_the_next_command_stops_on_an_edit_in_one_line(tmp_path, capsys):
    """The same through the CLI: ``script -o`` into that directory is refused, one line,
    exit 2, before any work; the edited file is untouched."""
    _killed_at("journal", tmp_path)
    (tmp_path / "r.md").write_text("my edit")
    code = cli.main(["script", "Relu", "-o", str(tmp_path / "proof.py")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"{tmp_path / 'r.md'}: changed since" in err
    assert (tmp_path / "r.md").read_text() == "my edit"
    assert not (tmp_path / "proof.py").exists()


def _foreign_scratch(d: Path, boot: str) -> Path:
    """A dead commit's scratch directory whose journal replaces ``notes.md``, as round 5's
    journal format wrote it (names only)."""
    s = d / f".torch-prover-commit.{boot}.1.1.abcdef"
    (s / "new").mkdir(parents=True)
    (s / "old").mkdir()
    (s / "staged").mkdir()
    (s / "new" / "0").write_text("not yours")
    (s / "staged" / "0").touch()
    (s / "journal.json").write_text('{"names": ["notes.md"]}')
    return s


@pytest.mark.parametrize("boot", ["deadbeef", "this boot"])
def test_problem_03_a_foreign_scratch_directory_is_never_replayed(tmp_path, capsys, boot):
    """A scratch directory of another boot (a CI cache) or with a journal it cannot check,
    naming ``notes.md`` that no manifest lists: the next command stops, one line, exit 2;
    notes.md and the scratch directory are left as they are."""
    from torch_prover.output.scratch import boot_id
    (tmp_path / "notes.md").write_text("my notes")
    s = _foreign_scratch(tmp_path, boot_id() if boot == "this boot" else boot)
    code = cli.main(["script", "Relu", "-o", str(tmp_path / "proof.py")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"{s}: an unfinished torch-prover commit that is not replayed here" in err
    assert (tmp_path / "notes.md").read_text() == "my notes"
    assert (s / "new" / "0").read_text() == "not yours"


def test_problem_03_a_copied_tree_is_not_replayed(tmp_path):
    """A killed commit's directory copied elsewhere (its journal recorded the directory it
    was made in): the copy's scratch is not replayed there; the original's still is."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    _killed_at("journal", a)
    shutil.copytree(a, b, symlinks=True)
    with pytest.raises(OutputError, match="made in another directory"):
        recover(b)
    assert (b / "r.md").read_text() == "old summary"
    recover(a)
    assert (a / "r.md").read_text() == "new summary"


def test_problem_07_the_stop_hook_needs_the_suites_switch(tmp_path):
    """``TORCH_PROVER_TEST_STOP_AT`` left set in a shell or a CI job, without the suite's
    ``TORCH_PROVER_TEST_HOOKS``: the command runs to its end (it used to stop itself)."""
    env = {k: v for k, v in os.environ.items() if k != TEST_HOOKS}
    env[STOP_AT] = "staged"
    r = subprocess.run([sys.executable, "-m", "torch_prover", "script", "Relu", "-o",
                        str(tmp_path / "proof.py")], cwd=ROOT, env=env, timeout=120,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "Relu" in (tmp_path / "proof.py").read_text()
