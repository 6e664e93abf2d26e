"""Issue 22's data-loss and foreign-file findings: every output path is checked, before any
work, against every input path and the tool's own trees, and must be a regular file or
absent (preflight.outputs_checked: docs/safety.md, "The output rule").

Each test plants the input a careless tool would overwrite and checks, byte for byte,
that it is still there after a one-line exit 2, and that no work started.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from cli_lines import one_line_exit_2
from fix_report import SRC, param, record, write_report

from torch_prover import cli

DOCS = Path(__file__).parent / "data" / "Operators.md"




@pytest.mark.usefixtures("no_work")
def test_verify_all_report_naming_the_tags_from_file_is_refused(tmp_path, capsys):
    docs = tmp_path / "Operators.md"
    docs.write_bytes(DOCS.read_bytes())
    code = cli.main(["verify-all", "--ops", "Relu", "--no-write", "--no-cache",
                     "--tags-from", str(docs), "--report", str(docs)])
    one_line_exit_2(capsys, code, "--report", "--tags-from")
    assert docs.read_bytes() == DOCS.read_bytes()


@pytest.mark.usefixtures("no_work")
def test_verify_all_report_naming_the_waivers_file_is_refused(tmp_path, capsys):
    waivers = tmp_path / "waivers.toml"
    text = '[[waiver]]\nop = "Clip"\nparameter = "min"\nreason = "r"\n'
    waivers.write_text(text)
    code = cli.main(["verify-all", "--ops", "Relu", "--no-write", "--no-cache",
                     "--waivers", str(waivers), "--report", str(tmp_path / "." / "waivers.toml")])
    one_line_exit_2(capsys, code, "--report", "--waivers")
    assert waivers.read_text() == text


@pytest.mark.usefixtures("no_work")
def test_fix_tags_report_and_output_the_same_file_is_refused(tmp_path, capsys):
    rep = write_report(tmp_path / "r.json", record("Relu", 14, "relu_basic", param(
        "input", 0, "X", "differentiable", "agree", "differentiable")))
    before = rep.read_bytes()
    code = cli.main(["fix-tags", "--onnx-src", str(SRC), "--report", str(rep), "-o", str(rep)])
    one_line_exit_2(capsys, code, "-o", "--report")
    assert rep.read_bytes() == before


@pytest.mark.usefixtures("no_work")
def test_fix_tags_output_inside_the_onnx_sources_is_refused(tmp_path, capsys):
    src = tmp_path / "onnx-src"
    import shutil
    shutil.copytree(SRC, src)
    target = next((src / "onnx" / "defs").rglob("*.cc"))
    before = target.read_bytes()
    rep = write_report(tmp_path / "r.json", record("Relu", 14, "relu_basic", param(
        "input", 0, "X", "differentiable", "agree", "differentiable")))
    code = cli.main(["fix-tags", "--onnx-src", str(src), "--report", str(rep),
                     "-o", str(target)])
    one_line_exit_2(capsys, code, "-o", "onnx/defs")
    assert target.read_bytes() == before


@pytest.mark.usefixtures("no_work")
def test_report_inside_the_evidence_tree_is_refused(tmp_path, capsys):
    case = tmp_path / "out" / "Relu" / "relu_basic"
    case.mkdir(parents=True)   # evidence as torch-prover writes it (evidence.is_our_case_dir)
    (case / "proof.json").write_text(json.dumps(
        {"format": 2, "op": "Relu", "case": "relu_basic", "parameters": []}))
    (case / "model.onnx").write_bytes(b"the evidence")
    code = cli.main(["verify-all", "--ops", "Relu", "--out", str(tmp_path / "out"),
                     "--no-cache", "--report", str(case / "model.onnx")])
    one_line_exit_2(capsys, code, "--report", "--out")
    assert (case / "model.onnx").read_bytes() == b"the evidence"


def _foreign(tmp_path: Path, kind: str) -> Path:
    p = tmp_path / f"a-{kind}"
    if kind == "fifo":
        os.mkfifo(p)
    else:
        (tmp_path / "target.txt").write_text("someone's file\n")
        p.symlink_to(tmp_path / "target.txt")
    return p


def _untouched(p: Path, kind: str, tmp_path: Path) -> None:
    if kind == "fifo":
        assert stat.S_ISFIFO(os.lstat(p).st_mode)
    else:
        assert p.is_symlink() and (tmp_path / "target.txt").read_text() == "someone's file\n"


@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("kind", ["fifo", "symlink"])
@pytest.mark.parametrize("command_line", [
    ["verify-all", "--ops", "Relu", "--no-write", "--no-cache", "--report"],
    ["script", "Relu", "-o"],
    ["fix-tags", "--onnx-src", str(SRC), "--report", "REPORT", "-o"],
])
def test_an_output_that_is_not_a_regular_file_is_refused(tmp_path, capsys, kind, command_line):
    """A char device (/dev/null) is refused by the same check, not planted here: as root
    the unfixed tool would have replaced the machine's /dev/null."""
    p = _foreign(tmp_path, kind)
    rep = write_report(tmp_path / "r.json", record("Relu", 14, "relu_basic", param(
        "input", 0, "X", "differentiable", "agree", "differentiable")))
    argv = [str(rep) if a == "REPORT" else a for a in command_line] + [str(p)]
    code = cli.main(argv)
    one_line_exit_2(capsys, code, str(p), "FIFO" if kind == "fifo" else "symlink")
    _untouched(p, kind, tmp_path)


@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("argv, words", [
    (["verify-all", "--ops", "Relu", "--no-write", "--no-cache", "--report", ""], ("--report",)),
    (["script", "Relu", "-o", ""], ("-o",)),
    (["verify-all", "--ops", "Relu", "--no-write", "--cache-dir", ""], ("--cache-dir",)),
])
def test_an_empty_output_path_is_refused(tmp_path, capsys, monkeypatch, argv, words):
    monkeypatch.chdir(tmp_path)
    code = cli.main(argv)
    one_line_exit_2(capsys, code, "empty", *words)
    assert os.listdir(tmp_path) == []
    assert capsys.readouterr().out == ""


def test_fix_tags_does_not_follow_a_symlink_out_of_onnx_defs(tmp_path, capsys, monkeypatch,
                                                            real_report):
    """A symlink inside onnx/defs is skipped with a warning: its target is neither read nor
    copied (fix/patch.py copies the tree to check the patch)."""
    import shutil
    from torch_prover.fix.locate import read_tree
    src = tmp_path / "onnx-src"
    shutil.copytree(SRC, src)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big.cc").write_text("this is not ONNX\n")
    (src / "onnx" / "defs" / "linked").symlink_to(outside, target_is_directory=True)
    (src / "onnx" / "defs" / "link.cc").symlink_to(outside / "big.cc")
    tree = read_tree(src)
    assert not any("linked" in f or "link.cc" in f for f in tree.files)
    assert any("symlink" in e for e in tree.errors), tree.errors
    copied = []
    real_copytree = shutil.copytree

    def watch(source, dest, *a, **k):
        copied.append((source, dest))
        result = real_copytree(source, dest, *a, **k)
        for p in Path(dest).rglob("*"):
            assert "big.cc" not in p.name and not p.resolve().is_relative_to(outside), p
        return result
    monkeypatch.setattr(shutil, "copytree", watch)
    rep = real_report("If,Relu")
    code = cli.main(["fix-tags", "--onnx-src", str(src), "--report", str(rep),
                     "-o", str(tmp_path / "fix.patch")])
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    assert code == 0 and copied, err
    assert "symlink" in err


def test_onnxruntime_writes_nothing_into_the_users_cache(tmp_path):
    """onnxruntime's telemetry writes a device id and a usage database under
    $XDG_CACHE_HOME/Microsoft/DeveloperTools/ on import; torch-prover switches it off."""
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    env.update(XDG_CACHE_HOME=str(tmp_path / "xdg"), HOME=str(tmp_path / "home"))
    tool = Path(sys.executable).parent / "torch-prover"
    done = subprocess.run([str(tool), "prove", "Relu", "--no-write"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "onnxruntime" in done.stdout            # the numeric witness did run in it
    written = [p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()]
    assert written == [], written
