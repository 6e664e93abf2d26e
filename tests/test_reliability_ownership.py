"""Reliability round 5 (issue 35), the rest of problem 10 and the ownership rule: a
single-file output is torch-prover's to replace only when its directory's manifest lists it
(docs/safety.md, "The output rule"), and an older torch-prover's half-written temporaries
of it are swept when it is written next -- those it can prove are its own, nothing else.

Expectations come from outside the code under test: a look-alike is built from the very
first bytes torch-prover's own outputs begin with (the old rule's marks), so only
ownership by manifest can tell it apart; a leftover is named as ``tempfile.mkstemp`` named
the old writer's temporaries (``.NAME.torch-prover-`` and eight of ``[a-z0-9_]``).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_lines import one_line_exit_2
from fix_report import SRC

from torch_prover import cli
from torch_prover.output.ownership import (MARKDOWN_REPORT_HEAD, PATCH_HEAD, PR_TEXT_HEAD,
                                           SCRIPT_HEAD)

OUTPUTS = ".torch-prover-outputs.json"
"""The manifest's name, as docs/safety.md gives it."""

USERS = "\n\nMy own notes, which begin as torch-prover's files do.\n"

LOOK_ALIKES = {
    "script": (lambda p: ["script", "Relu", "-o", p], "proof.py",
               SCRIPT_HEAD + 'Relu."""' + USERS),
    "markdown report": (lambda p: ["verify-all", "--ops", "Relu", "--no-write", "--no-cache",
                                   "--format", "markdown", "--report", p], "report.md",
                        MARKDOWN_REPORT_HEAD + USERS),
    "text report": (lambda p: ["merge", "a.json", "b.json", "--report", p], "report.txt",
                    "op  status  reason\n" + USERS),
    "json report": (lambda p: ["merge", "a.json", "b.json", "--format", "json", "--report", p],
                    "report.json", '{"kind": "batch-report", "mine": true}\n'),
    "junit": (lambda p: ["merge", "a.json", "b.json", "--junit", p], "junit.xml",
              '<?xml version="1.0"?>\n<testsuites><testsuite name="torch-prover mine">'
              "</testsuite></testsuites>\n"),
    "patch": (lambda p: ["fix-tags", "--onnx-src", str(SRC), "--report", "a.json", "-o", p],
              "fix.patch", PATCH_HEAD + USERS),
    "PR text": (lambda p: ["fix-tags", "--onnx-src", str(SRC), "--report", "a.json", "-o",
                           str(Path(p).with_suffix(".patch"))], "fix.md",
                PR_TEXT_HEAD + USERS),
}


@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("kind", sorted(LOOK_ALIKES))
def test_problem_10_a_look_alike_is_refused_before_any_work(tmp_path, capsys, kind):
    """A file that begins as torch-prover's output of that kind does, but that no manifest
    lists: refused in one line, exit 2, before any work, and left as it was."""
    argv_of, name, text = LOOK_ALIKES[kind]
    mine = tmp_path / name
    mine.write_text(text)
    one_line_exit_2(capsys, cli.main(argv_of(str(mine))), str(mine), "left alone")
    assert mine.read_text() == text
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_problem_10_a_file_it_wrote_then_edited_is_refused(tmp_path, capsys):
    """Listed, but its bytes are no longer what was written (you edited it): yours now."""
    target = tmp_path / "proof.py"
    assert cli.main(["script", "Relu", "-o", str(target)]) == 0
    capsys.readouterr()
    edited = target.read_text() + "# my change\n"
    target.write_text(edited)
    one_line_exit_2(capsys, cli.main(["script", "Abs", "-o", str(target)]), str(target),
                    "left alone")
    assert target.read_text() == edited


def test_problem_10_what_it_wrote_is_listed_and_replaced(tmp_path, capsys):
    """The manifest lists each output with what it holds and its digest; a rerun replaces
    the file and the entry, and keeps the entries of other outputs there."""
    import hashlib
    first, second = tmp_path / "relu.py", tmp_path / "abs.py"
    assert cli.main(["script", "Relu", "-o", str(first)]) == 0
    assert cli.main(["script", "Abs", "-o", str(second)]) == 0
    assert cli.main(["script", "Floor", "-o", str(first)]) == 0
    capsys.readouterr()
    files = json.loads((tmp_path / OUTPUTS).read_text())["files"]
    assert files == {p.name: {"holds": "script",
                              "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}
                     for p in (first, second)}
    assert "Floor" in first.read_text()


@pytest.mark.usefixtures("no_work")
def test_problem_10_a_manifest_it_did_not_write_is_left_alone(tmp_path, capsys):
    manifest = tmp_path / OUTPUTS
    manifest.write_text('{"my": "file"}\n')
    one_line_exit_2(capsys, cli.main(["script", "Relu", "-o", str(tmp_path / "p.py")]),
                    str(manifest), "left alone")
    assert manifest.read_text() == '{"my": "file"}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == [OUTPUTS]


# ----------------------------------------------------------------------------- leftovers
def _old_temporary(directory: Path, name: str, tail: str = "k3x_9q2a") -> Path:
    """The name the old writer's ``mkstemp(prefix=f".{name}.torch-prover-")`` gave."""
    return directory / f".{name}.torch-prover-{tail}"


def test_problem_10_an_old_writers_leftovers_are_swept_and_nothing_else(tmp_path, capsys):
    """``script -o proof.py``: the leftovers of proof.py that are provably the old writer's
    go (one killed before its first write, one killed mid-write); every look-alike stays."""
    ours = {_old_temporary(tmp_path, "proof.py", "aaaaaaaa"): "",
            _old_temporary(tmp_path, "proof.py", "bbbbbbbb"): SCRIPT_HEAD + "Relu.\n\nimport"}
    theirs = {_old_temporary(tmp_path, "proof.py", "cccccccc"): "my own file\n",
              _old_temporary(tmp_path, "proof.py", "too_long_tail"): "",
              _old_temporary(tmp_path, "other.py", "dddddddd"): "",
              tmp_path / ".proof.py.torch-prover-eeeeeeee.bak": ""}
    for path, text in {**ours, **theirs}.items():
        path.write_text(text)
    directory = _old_temporary(tmp_path, "proof.py", "ffffffff")
    directory.mkdir()
    link = _old_temporary(tmp_path, "proof.py", "gggggggg")
    link.symlink_to(next(iter(ours)))
    assert cli.main(["script", "Relu", "-o", str(tmp_path / "proof.py")]) == 0
    capsys.readouterr()
    left = {p.name for p in tmp_path.iterdir()}
    assert not {p.name for p in ours} & left
    assert {p.name for p in theirs} | {directory.name, link.name} <= left
    assert all(p.read_text() == text for p, text in theirs.items())


@pytest.mark.usefixtures("no_work")
def test_problem_10_a_refused_output_sweeps_nothing(tmp_path, capsys):
    """The sweep comes after every check: a refused command removes nothing."""
    mine = tmp_path / "report.md"
    mine.write_text("my notes\n")
    leftover = _old_temporary(tmp_path, "report.md")
    leftover.write_text("")
    one_line_exit_2(capsys, cli.main(["merge", "a.json", "b.json", "--report", str(mine)]),
                    "left alone")
    assert leftover.exists()


def test_problem_10_node_tests_sweeps_its_old_manifests_temporary(tmp_path, capsys):
    """node-tests.json's leftover from the old writer goes when node-tests next writes
    there; one holding another document stays."""
    import shutil
    models = tmp_path / "models"
    shutil.copytree(Path(__file__).resolve().parents[1] / "models" / "Relu" / "relu_basic",
                    models / "Relu" / "relu_basic")
    out = tmp_path / "out"
    out.mkdir()
    ours = _old_temporary(out, "node-tests.json", "aaaaaaaa")
    ours.write_text('{\n  "kind": "node-tests",\n  "format": 1,\n  "sta')
    theirs = _old_temporary(out, "node-tests.json", "bbbbbbbb")
    theirs.write_text('{\n  "kind": "my-tests"\n}\n')
    assert cli.main(["node-tests", str(models), "-o", str(out)]) == 0
    capsys.readouterr()
    assert not os.path.lexists(ours) and theirs.exists()


@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("argv_of", [lambda p: ["script", "Relu", "-o", p],
                                     lambda p: ["merge", "a.json", "b.json", "--junit", p]])
def test_problem_10_an_output_named_as_the_manifest_is_refused(tmp_path, capsys, argv_of):
    """An output where the manifest goes would be staged twice in one commit."""
    one_line_exit_2(capsys, cli.main(argv_of(str(tmp_path / OUTPUTS))), OUTPUTS,
                    "another name")
    assert list(tmp_path.iterdir()) == []
