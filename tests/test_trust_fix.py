"""fix-tags accepts only what a real run produced, and writes only its own files (issue 28,
findings 2, 3, 4, 9, 17).

Reports are real verify-all reports (conftest ``real_report``); the fixture sources are
tests/data/onnx-src, where If-25's ``cond`` has no tag and its schema allows only
tensor(bool), so a report holding If yields one hunk. Each attack plants or edits
something and checks, byte for byte, that what is not fix-tags' own is untouched.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_lines import one_line_exit_2
from fix_report import SRC

from torch_prover import __version__, cli


def _fix(report, out, src=SRC, *extra):
    return cli.main(["fix-tags", "--onnx-src", str(src), "--report", str(report),
                     "-o", str(out), *extra])


# ----------------------------------------------------------------------------- finding 2
@pytest.mark.parametrize("planted", ["notes.md", "notes-evidence.md", "notes.patch"])
def test_fix_tags_leaves_a_file_it_did_not_write(tmp_path, capsys, real_report, planted):
    """`-o notes.patch` replaced the user's notes.md (and notes-evidence.md)."""
    mine = tmp_path / planted
    mine.write_text("my notes, not torch-prover's\n")
    code = _fix(real_report("If,Relu"), tmp_path / "notes.patch")
    one_line_exit_2(capsys, code, str(mine), "not")
    assert mine.read_text() == "my notes, not torch-prover's\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [planted]


def test_fix_tags_replaces_its_own_files(tmp_path, capsys, real_report):
    """A rerun into the same -o replaces the patch and PR text it wrote (and an empty file,
    which holds nothing to lose)."""
    out = tmp_path / "fix.patch"
    (tmp_path / "fix-evidence.md").write_text("")
    assert _fix(real_report("If,Relu"), out) == 0
    first = (out.read_bytes(), (tmp_path / "fix.md").read_bytes())
    assert _fix(real_report("If,Relu"), out) == 0
    assert (out.read_bytes(), (tmp_path / "fix.md").read_bytes()) == first
    capsys.readouterr()


# ----------------------------------------------------------------------------- finding 3
@pytest.mark.parametrize("target", [".git/HEAD", "README.patch", "onnx/defs/notes.patch"])
def test_fix_tags_writes_nothing_inside_the_onnx_sources(tmp_path, capsys, real_report, target):
    """`-o src/.git/HEAD` broke the checkout; `-o src/README.patch` replaced its README.md."""
    src = tmp_path / "src"
    shutil.copytree(SRC, src)
    (src / ".git").mkdir()
    (src / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (src / "README.md").write_text("ONNX\n")
    before = {p: p.read_bytes() for p in src.rglob("*") if p.is_file()}
    code = _fix(real_report("If,Relu"), src / target, src)
    one_line_exit_2(capsys, code, "--onnx-src")
    assert {p: p.read_bytes() for p in src.rglob("*") if p.is_file()} == before


# ----------------------------------------------------------------------------- finding 4
def test_a_check_copy_left_by_kill_9_is_removed_by_the_next_run(tmp_path, real_report):
    """kill -9 of fix-tags during its patch check left the copy of the sources in $TMPDIR,
    and a rerun did not remove it. The check runs `git`: a git that waits lets the test kill
    fix-tags exactly there."""
    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    started = tmp_path / "checking"
    real_git = shutil.which("git")
    (bin_dir / "git").write_text(f"#!/bin/sh\ntouch {started}\nsleep 60\nexec {real_git} \"$@\"\n")
    (bin_dir / "git").chmod(0o755)
    env = {**os.environ, "TMPDIR": str(scratch_root),
           "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    argv = [sys.executable, "-m", "torch_prover", "fix-tags", "--onnx-src", str(SRC),
            "--report", str(real_report("If,Relu")), "-o", str(tmp_path / "fix.patch")]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while not started.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert started.exists(), "fix-tags never reached its patch check"
    os.killpg(proc.pid, signal.SIGKILL)   # fix-tags and the waiting git
    proc.wait()
    left = [p for p in scratch_root.iterdir() if p.name.startswith("torch-prover-fix")]
    assert left and any((p / "src").is_dir() for p in left)   # what kill -9 leaves
    foreign = scratch_root / "torch-prover-fix-notes"          # not a name we give
    foreign.mkdir()
    env["PATH"] = os.environ["PATH"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in scratch_root.iterdir()) == [foreign.name]


def test_a_live_runs_scratch_directory_is_not_removed(tmp_path, monkeypatch):
    """Another fix-tags still checking: its directory names a process that is alive."""
    from torch_prover.output import scratch
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(scratch.tempfile, "tempdir", None)
    with scratch.scratch("fix") as mine:
        assert scratch.leftovers("fix") == []
        assert mine.is_dir()
    assert not mine.exists()


# ----------------------------------------------------------------------------- finding 9
def _edited(tmp_path: Path, source: Path, change) -> Path:
    doc = json.loads(source.read_text())
    change(doc)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    return path


def test_rows_contradicting_their_witnesses_are_refused_by_name(tmp_path, capsys, real_report):
    """Relu-14's X and Y set to non-differentiable: the witnesses say grad and smooth."""
    def change(doc):
        rec = next(r for r in doc["cases"] if r["op"] == "Relu")
        for p in rec["parameters"]:
            p["supports"], p["verdict"] = "non-differentiable", "disagree"
        rec["status"] = "disagree"
    report = _edited(tmp_path, real_report("If,Relu"), change)
    code = _fix(report, tmp_path / "fix.patch")
    one_line_exit_2(capsys, code, "--report", "relu_basic", "input 0")
    assert not (tmp_path / "fix.patch").exists()


def test_a_report_made_with_another_onnx_is_refused(tmp_path, capsys, real_report):
    def change(doc):
        doc["provenance"]["versions"]["onnx"] = "1.22.0"
    report = _edited(tmp_path, real_report("If,Relu"), change)
    one_line_exit_2(capsys, _fix(report, tmp_path / "fix.patch"), "onnx 1.22.0")


def test_the_pr_text_names_the_reports_provenance(tmp_path, capsys, real_report):
    report = real_report("If,Relu")
    assert _fix(report, tmp_path / "fix.patch") == 0
    md = (tmp_path / "fix.md").read_text()
    assert "## Where the verdicts come from" in md and f"`{report}`" in md
    assert f"torch-prover {__version__}" in md
    assert f"onnx {importlib.metadata.version('onnx')}" in md
    assert "tags: onnx.defs" in md and "ops: If, Relu" in md
    assert "one shard only" not in md
    capsys.readouterr()


# ----------------------------------------------------------------------------- finding 17
def test_one_shards_report_says_so(tmp_path, capsys, real_report):
    """Shard 1 of 2 of `--ops If,Relu` holds If alone (ops in name order, dealt
    round-robin): its PR text must not read as the whole catalogue's."""
    report = real_report("If,Relu", "--shard", "1/2")
    assert _fix(report, tmp_path / "fix.patch") == 0
    err = capsys.readouterr().err
    assert "shard 1 of 2" in err and "(ops If)" in err
    md = (tmp_path / "fix.md").read_text()
    assert "one shard only: 1 of 2" in md and "holds the ops If;" in md


def test_safety_example(tmp_path, monkeypatch, capsys, real_report):
    from docs_examples import assert_example
    shutil.copytree(SRC, tmp_path / "onnx")
    shutil.copy(real_report("If,Relu"), tmp_path / "verify-all.json")
    (tmp_path / "notes.md").write_text("my notes\n")
    monkeypatch.chdir(tmp_path)
    argv = ["fix-tags", "--onnx-src", "onnx", "--report", "verify-all.json", "-o", "notes.patch"]
    assert cli.main(argv) == 2
    assert_example("safety-foreign-file", "$ torch-prover " + " ".join(argv) + "\n"
                   + capsys.readouterr().err)
