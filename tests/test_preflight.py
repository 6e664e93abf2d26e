"""Every bad input costs one line on stderr and exit 2, before any work is done.

"Before any work": nothing is written -- no evidence directory, no cache, no report --
which a run that had started proving would have done.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from torch_prover.cli import main


def _run(capsys, argv):
    code = main(argv)
    err = capsys.readouterr().err
    return code, err


def _one_line_exit_2(code, err):
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    return lines[0]


def _bytes_file(tmp_path: Path, name: str, data: bytes) -> str:
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


WAIVER = "[[waiver]]\nop = {op}\nparameter = {param}\nreason = 'r'\n{extra}"


@pytest.mark.parametrize("extra,needle", [
    (["--jobs", "0"], "--jobs 0"),
    (["--jobs", "-3"], "--jobs -3"),
    (["--timeout", "nan"], "--timeout nan"),
    (["--timeout", "0"], "--timeout 0"),
    (["--timeout", "inf"], "--timeout inf"),
    (["--timeout", "-5"], "--timeout -5"),
    (["--ops", ",,,"], "names no op"),
    (["--ops", ""], "names no op"),
    (["--ops", "Sofmax"], "Softmax"),
    (["--out", "/proc/torch-prover-models"], "cannot write there"),
    (["--report", "/proc/torch-prover-report.md"], "cannot write there"),
    (["--cache-dir", "/proc/torch-prover-cache"], "cannot write there"),
])
def test_verify_all_bad_arguments(capsys, tmp_path, monkeypatch, extra, needle):
    monkeypatch.chdir(tmp_path)   # a run that started would write ./models here
    argv = ["verify-all", "--ops", "Relu", "--cache-dir", str(tmp_path / "cache")]
    if "--ops" in extra:
        argv = ["verify-all", "--cache-dir", str(tmp_path / "cache")]
    code, err = _run(capsys, argv + extra)
    assert needle in _one_line_exit_2(code, err)
    assert sorted(os.listdir(tmp_path)) == [], "something was written before the error"


def test_verify_all_refuses_an_op_neither_a_case_nor_its_types_decide(capsys, tmp_path,
                                                                      monkeypatch):
    """Every ai.onnx op is decided today, so the op is made case-less here: Relu, whose
    types (float) decide nothing, without its cases."""
    import torch_prover.cases as cases_mod
    real = cases_mod.cases_for
    monkeypatch.setattr(cases_mod, "cases_for", lambda op: [] if op == "Relu" else real(op))
    monkeypatch.chdir(tmp_path)
    code, err = _run(capsys, ["verify-all", "--ops", "Relu", "--cache-dir", str(tmp_path / "c")])
    assert "no case for op Relu, and its types decide nothing" in _one_line_exit_2(code, err)
    assert sorted(os.listdir(tmp_path)) == [], "something was written before the error"


def test_out_below_a_file_and_report_naming_a_directory(capsys, tmp_path):
    f = tmp_path / "a_file"
    f.write_text("x")
    code, err = _run(capsys, ["verify-all", "--ops", "Relu", "--out", str(f / "models")])
    assert "is not a directory" in _one_line_exit_2(code, err)
    code, err = _run(capsys, ["verify-all", "--ops", "Relu", "--no-write",
                              "--report", str(tmp_path)])
    assert "is a directory" in _one_line_exit_2(code, err)


@pytest.mark.parametrize("content,needle", [
    (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "not UTF-8 text"),
    (b"waiver = [1, 2]\n", "not a [[waiver]] table"),
    (WAIVER.format(op="'Clip'", param="'min'", extra="case = ['x']\n").encode(),
     "must be a string"),
    (WAIVER.format(op="'Sofmax'", param="'input 0'", extra="").encode(), "Softmax"),
    (WAIVER.format(op="'Clip'", param="'input 99'", extra="").encode(), "no parameter"),
    (WAIVER.format(op="'Clip'", param="'mni'", extra="").encode(), "did you mean min"),
    (WAIVER.format(op="'Clip'", param="'min'", extra="case = 'clip_tensor_bound'\n").encode(),
     "clip_tensor_bounds"),
])
def test_bad_waivers_files(capsys, tmp_path, content, needle):
    path = _bytes_file(tmp_path, "waivers.toml", content)
    code, err = _run(capsys, ["verify-all", "--ops", "Relu", "--out", str(tmp_path / "m"),
                              "--waivers", path])
    assert needle in _one_line_exit_2(code, err)
    assert not (tmp_path / "m").exists()


def test_a_valid_waiver_of_an_op_not_run_is_accepted_and_not_stale(capsys, tmp_path):
    path = _bytes_file(tmp_path, "waivers.toml", WAIVER.format(
        op="'LSTM'", param="'initial_h'", extra="").encode())
    code = main(["verify-all", "--ops", "Relu", "--no-write", "--no-cache", "--waivers", path])
    out = capsys.readouterr().out
    assert code == 0
    assert "stale" not in out.lower()


@pytest.mark.parametrize("argv,needle", [
    (["prove", "Reshape", "--out", "/proc/torch-prover-models"], "cannot write there"),
    (["prove", "Reshape", "--case", "nope"], "reshape_basic"),
    (["prove", "Sofmax"], "Softmax"),
    (["prove", "Reshape", "--seed", "-1"], "--seed -1"),
    (["prove", "StringConcat", "--all"], "no case for op StringConcat"),
    (["script", "Reshape", "-o", "/proc/torch-prover-proof.py"], "cannot write there"),
    (["tags", "Sofmax"], "Softmax"),
])
def test_other_commands_bad_arguments(capsys, tmp_path, monkeypatch, argv, needle):
    monkeypatch.chdir(tmp_path)
    code, err = _run(capsys, argv)
    assert needle in _one_line_exit_2(code, err)
    assert os.listdir(tmp_path) == []


def test_symlinked_case_directory_is_refused_before_any_work(capsys, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    out = tmp_path / "m"
    (out / "Reshape").mkdir(parents=True)
    (out / "Reshape" / "reshape_basic").symlink_to(outside, target_is_directory=True)
    code, err = _run(capsys, ["verify-all", "--ops", "Reshape", "--out", str(out), "--no-cache"])
    assert "symlink" in _one_line_exit_2(code, err)
    assert sorted(os.listdir(outside)) == ["keep.txt"]
    code, err = _run(capsys, ["prove", "Reshape", "--out", str(out)])
    assert "symlink" in _one_line_exit_2(code, err)
    assert sorted(os.listdir(outside)) == ["keep.txt"]


def test_symlinked_op_directory_is_refused(capsys, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    out = tmp_path / "m"
    out.mkdir()
    (out / "Floor").symlink_to(outside, target_is_directory=True)
    code, err = _run(capsys, ["verify-all", "--ops", "Floor", "--out", str(out), "--no-cache"])
    assert "symlink" in _one_line_exit_2(code, err)
    assert os.listdir(outside) == []


def test_a_case_directory_holding_foreign_files_is_refused(capsys, tmp_path):
    d = tmp_path / "m" / "Floor" / "floor_basic"
    d.mkdir(parents=True)
    (d / "notes.txt").write_text("mine")
    code, err = _run(capsys, ["verify-all", "--ops", "Floor", "--out", str(tmp_path / "m"),
                              "--no-cache"])
    assert "did not write" in _one_line_exit_2(code, err)
    assert sorted(os.listdir(d)) == ["notes.txt"]


def test_readme_and_index_of_someone_else_are_left_alone(tmp_path):
    from torch_prover.output.index_files import write_index
    (tmp_path / "README.md").write_text("# My project\n")
    (tmp_path / "index.json").write_text('{"mine": true}\n')
    from torch_prover.batch.summary import batch_report
    report = {**batch_report([], [], 0.0),
              "ops": [{"op": "Relu", "status": "proved", "reason": "a | b"}]}
    warnings = write_index(tmp_path, report)
    assert len(warnings) == 2
    assert (tmp_path / "README.md").read_text() == "# My project\n"
    assert (tmp_path / "index.json").read_text() == '{"mine": true}\n'
    fresh = tmp_path / "fresh"
    assert write_index(fresh, report) == []
    assert "| Relu | proved |  | a \\| b |" in (fresh / "README.md").read_text()
