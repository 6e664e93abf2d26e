"""Issue 35's findings on what torch-prover writes (part B: problems 6, 7, 8, 11, 14): no
output lands on a file it does not own -- the step summary, appended to, lies in no
output directory and on no file the command reads; the cache and the evidence keep apart;
new-case's ``-o`` is held to the output rule -- and an output that fails is named, in one
line, exit 2, leaving the file as it was.

Each test plants what a careless tool would damage and checks it byte for byte after a
one-line exit 2; refusals come before any work (the ``no_work`` fixture).
"""
from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_lines import one_line_exit_2

from torch_prover import cli

ROOT = Path(__file__).resolve().parent.parent
TOOL = Path(sys.executable).parent / "torch-prover"


def _evidence_index(out: Path) -> bytes:
    """An ``--out`` whose index.json a full run wrote (its bytes are what must survive)."""
    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"kind": "index", "format": 1, "ops": []}, indent=2) + "\n"
    (out / "index.json").write_text(text)
    return text.encode()


# ----------------------------------------------------------------------------- problem 6
@pytest.mark.usefixtures("no_work")
def test_problem_6_step_summary_inside_out_is_refused(tmp_path, capsys, monkeypatch):
    """$GITHUB_STEP_SUMMARY at OUT/index.json: appended to, the evidence index became
    invalid JSON. Ownership cannot protect a file that is added to, so an appended output
    lies in no output directory."""
    out = tmp_path / "models"
    before = _evidence_index(out)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(out / "index.json"))
    code = cli.main(["verify-all", "--ops", "Relu", "--out", str(out), "--no-cache",
                     "--github"])
    one_line_exit_2(capsys, code, "$GITHUB_STEP_SUMMARY", "--out")
    assert (out / "index.json").read_bytes() == before


@pytest.mark.usefixtures("no_work")
def test_problem_6_step_summary_inside_out_is_refused_in_pr_mode(tmp_path, capsys,
                                                                  monkeypatch):
    out = tmp_path / "models"
    before = _evidence_index(out)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(out / "index.json"))
    code = cli.main(["verify-all", "--changed-from", str(ROOT / "tests/data/Changelog.md"),
                     "--out", str(out), "--no-cache", "--github"])
    one_line_exit_2(capsys, code, "$GITHUB_STEP_SUMMARY", "--out")
    assert (out / "index.json").read_bytes() == before


@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("where", [".", "sub"])
def test_problem_6_step_summary_at_a_pyproject_is_refused(tmp_path, capsys, monkeypatch,
                                                          where):
    """$GITHUB_STEP_SUMMARY at a pyproject.toml at or above the current directory (one
    without a [tool.torch-prover] table too: a checkout's own is read to know it is one):
    appended to, the TOML breaks and every later command there stops."""
    text = '[project]\nname = "someone-elses"\n'
    (tmp_path / "pyproject.toml").write_text(text)
    cwd = tmp_path / where
    cwd.mkdir(exist_ok=True)
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "pyproject.toml"))
    code = cli.main(["verify-all", "--ops", "Relu", "--no-write", "--no-cache", "--github"])
    one_line_exit_2(capsys, code, "$GITHUB_STEP_SUMMARY", "pyproject.toml")
    assert (tmp_path / "pyproject.toml").read_text() == text


# ----------------------------------------------------------------------------- problem 7
@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("pr_mode", [False, True])
def test_problem_7_cache_dir_inside_out_is_refused(tmp_path, capsys, pr_mode):
    """Cache files among the evidence: the next identical run refused them as foreign."""
    out = tmp_path / "models"
    out.mkdir()
    mode = ["--changed-from", str(ROOT / "tests/data/Changelog.md")] if pr_mode else \
        ["--ops", "Relu"]
    code = cli.main(["verify-all", *mode, "--out", str(out),
                     "--cache-dir", str(out / "cache")])
    one_line_exit_2(capsys, code, "--cache-dir", "--out")
    assert os.listdir(out) == []


@pytest.mark.usefixtures("no_work")
def test_problem_7_out_inside_the_cache_is_refused(tmp_path, capsys):
    code = cli.main(["verify-all", "--ops", "Relu", "--out", str(tmp_path / "cache" / "m"),
                     "--cache-dir", str(tmp_path / "cache")])
    one_line_exit_2(capsys, code, "--out", "--cache-dir")


# ----------------------------------------------------------------------------- problem 8
def test_problem_8_new_case_output_inside_the_package_is_refused(tmp_path, capsys,
                                                                 monkeypatch):
    """A scaffold written into torch-prover's own package changes the source the cache and
    the reports key on: every saved report became "made by another torch-prover"."""
    import torch_prover
    package = Path(torch_prover.__file__).resolve().parent
    target = package / "cases" / "zz_problem_8_scaffold.py"
    monkeypatch.chdir(tmp_path)
    code = cli.main(["new-case", "Shrink", "-o", str(target)])
    one_line_exit_2(capsys, code, "-o", "own package")
    assert not target.exists()


def test_problem_8_new_case_output_inside_the_checkouts_evidence_is_refused(capsys,
                                                                            monkeypatch):
    monkeypatch.chdir(ROOT)    # a torch_prover checkout: its evidence is ./models
    target = ROOT / "models" / "Shrink" / "zz_problem_8.py"
    code = cli.main(["new-case", "Shrink", "-o", "models/Shrink/zz_problem_8.py"])
    one_line_exit_2(capsys, code, "-o", "evidence")
    assert not target.exists()


def test_problem_8_new_case_empty_output_is_an_empty_path(tmp_path, capsys, monkeypatch):
    """``-o ''`` said "-o : exists" (the empty path read as the current directory)."""
    monkeypatch.chdir(tmp_path)
    line = one_line_exit_2(capsys, cli.main(["new-case", "Shrink", "-o", ""]), "-o", "empty")
    assert "exists" not in line
    assert os.listdir(tmp_path) == []


# ----------------------------------------------------------------------------- problem 11
@pytest.mark.parametrize("existed", [True, False])
def test_problem_11_a_failed_summary_append_leaves_the_file_as_it_was(tmp_path, monkeypatch,
                                                                      existed):
    """A full disk half-way through the append: the file is cut back to what it held (or
    removed, when the append made it), and the error names it."""
    from torch_prover.ci import github
    from torch_prover.errors import OutputError
    summary = tmp_path / "step_summary"
    before = b"## an earlier step's summary\n"
    if existed:
        summary.write_bytes(before)
    real_write = os.write

    def disk_fills(fd, data):
        if len(data) > 8:
            return real_write(fd, bytes(data[:len(data) // 2]))   # half of it fits
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(github.os, "write", disk_fills)
    with pytest.raises(OutputError) as got:
        github.append_summary(summary, "## torch-prover: ok\n" + "row\n" * 100)
    assert str(summary) in str(got.value) and "No space left" in str(got.value)
    assert summary.read_bytes() == before if existed else not summary.exists()


# ----------------------------------------------------------------------------- problem 14
@pytest.mark.parametrize("fmt", ["json", "text"])
def test_problem_14_an_unwritable_stdout_is_named_in_one_line(tmp_path, fmt):
    """``> /dev/full``: with --format json the error document went to the stdout that had
    just failed (a traceback, exit 1); the one line on stderr names stdout."""
    with open("/dev/full", "w") as full:
        done = subprocess.run([str(TOOL), "tags", "Relu", "--format", fmt], stdout=full,
                              stderr=subprocess.PIPE, text=True, cwd=tmp_path, timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "stdout" in lines[0] and "No space left on device" in lines[0], lines[0]
