"""Reliability round 5 (issue 35), part A: check-evidence and node-tests take nothing a
record says on its word (docs/safety.md, "What torch-prover reads back"): the record's
test_data is re-derived from its own numeric check and model.onnx, a directory without a
record is a mismatch, a damaged record is one line naming the file and the field (exit 2),
and a file that is not a regular file is refused before it is opened.

Every tamper below also shifts the committed output by 3 -- far outside any tolerance the
case's numeric check recorded -- so a run that believed the tampered field would say
"match", "not compared", "cannot run" or "explained" (exit 0): the outside fact is the
shift, not the code under test.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import onnx.numpy_helper
import pytest

from torch_prover import cli
from torch_prover.output import evidence_data

ROOT = Path(__file__).resolve().parent.parent
CASE = "Relu/relu_basic"           # onnxruntime reproduces it, one output, compared


def _tree(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "models" / CASE, tmp_path / "models" / CASE)
    return tmp_path / "models"


def _shift(d: Path) -> None:
    pb = d / "test_data_set_0" / "output_0.pb"
    t = evidence_data.load_pb(pb)
    pb.write_bytes(onnx.numpy_helper.from_array(t + 3.0, "y0").SerializeToString())


def _edit(d: Path, change) -> None:
    rec = json.loads((d / "proof.json").read_text())
    change(rec)
    (d / "proof.json").write_text(json.dumps(rec))


def _cli(capsys, *argv: str) -> tuple[int, dict]:
    code = cli.main([*argv, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def _check(capsys, tree: Path) -> tuple[int, dict]:
    code, doc = _cli(capsys, "check-evidence", str(tree))
    return code, {d["path"]: d for d in doc["directories"]}


def _node_tests(capsys, tree: Path, out: Path) -> tuple[int, dict]:
    code, doc = _cli(capsys, "node-tests", str(tree), "-o", str(out))
    return code, {d["source"]: d for d in doc["directories"]}


def test_the_untampered_case_matches(tmp_path, capsys):
    tree = _tree(tmp_path)
    code, by = _check(capsys, tree)
    assert code == 0 and by[CASE]["status"] == "match"


def test_problem_02_a_raised_test_data_tolerance_is_not_believed(tmp_path, capsys):
    tree = _tree(tmp_path)
    _shift(tree / CASE)
    _edit(tree / CASE, lambda r: r["test_data"].update(fwd_tol=10.0))
    code, by = _check(capsys, tree)
    assert code == 1 and by[CASE]["status"] == "mismatch"
    assert "test_data.fwd_tol" in by[CASE]["detail"]
    code, by = _node_tests(capsys, tree, tmp_path / "out")
    assert code == 1 and by[CASE]["status"] == "refused"     # its --run atol came from it
    assert not (tmp_path / "out" / "onnxruntime").exists()


def _random(rec):
    rec["test_data"]["outputs"][0].update(check="random draw", reason="drawn by Relu")


def _declared(rec):
    rec["test_data"]["outputs"][0].update(check="declared mismatch", reason="declared")


def _no_runtime(rec):
    rec["test_data"].update(runtime=None, why="no runtime ran")


TAMPERS = {"random draw": _random, "declared mismatch": _declared, "runtime null": _no_runtime}


@pytest.mark.parametrize("tamper", sorted(TAMPERS))
def test_problem_03_test_data_taken_on_its_word(tmp_path, capsys, tamper):
    tree = _tree(tmp_path)
    _shift(tree / CASE)
    _edit(tree / CASE, TAMPERS[tamper])
    code, by = _check(capsys, tree)
    assert code == 1 and by[CASE]["status"] == "mismatch", by[CASE]
    code, by = _node_tests(capsys, tree, tmp_path / "out")
    assert code == 1 and by[CASE]["status"] == "refused", by[CASE]


def test_problem_03_a_deleted_record_is_a_mismatch(tmp_path, capsys):
    tree = _tree(tmp_path)
    _shift(tree / CASE)
    (tree / CASE / "proof.json").unlink()
    code, by = _check(capsys, tree)
    assert code == 1 and by[CASE]["status"] == "mismatch"
    code, by = _node_tests(capsys, tree, tmp_path / "out")
    assert code == 1 and by[CASE]["status"] == "refused"


def test_problem_03_a_removed_test_data_is_not_explained(tmp_path, capsys):
    """A format-3 record without test_data is not one torch-prover writes: one line naming
    the file and the field, exit 2 -- never 'cannot run' or 'explained', exit 0."""
    tree = _tree(tmp_path)
    _shift(tree / CASE)
    _edit(tree / CASE, lambda r: r.pop("test_data"))
    for argv in (["check-evidence", str(tree)],
                 ["node-tests", str(tree), "-o", str(tmp_path / "out")]):
        code, doc = _cli(capsys, *argv)
        assert code == 2 and "test_data" in doc["reason"]
        assert str(tree / CASE / "proof.json") in doc["reason"]


MALFORMED = {
    "check random": (lambda r: r["test_data"]["outputs"][0].update(check="random"),
                     "test_data/outputs/0/check"),
    "outputs [5]": (lambda r: r["test_data"].update(outputs=[5]), "test_data/outputs/0"),
    "model x": (lambda r: r.update(model="x"), "model"),
}


@pytest.mark.parametrize("field", sorted(MALFORMED))
@pytest.mark.parametrize("command", ["check-evidence", "node-tests"])
def test_problem_17_malformed_record_fields_exit_2_naming_file_and_field(
        tmp_path, capsys, field, command):
    tree = _tree(tmp_path)
    change, where = MALFORMED[field]
    _edit(tree / CASE, change)
    argv = [command, str(tree)] + (["-o", str(tmp_path / "out")]
                                   if command == "node-tests" else [])
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2
    (line,) = err.splitlines()
    assert f"{tree / CASE / 'proof.json'}: {where}:" in line, line
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")


@pytest.mark.parametrize("fifo", ["model.onnx", "proof.json", "test_data_set_0/input_0.pb"])
def test_problem_12_a_fifo_is_refused_not_opened(tmp_path, fifo):
    """A FIFO where a regular file is expected: refused at once (a blocking open() on it
    would wait for a writer for ever; the timeout is a guard, not the check)."""
    tree = _tree(tmp_path)
    path = tree / CASE / fifo
    path.unlink()
    os.mkfifo(path)
    r = subprocess.run([sys.executable, "-m", "torch_prover", "check-evidence", str(tree),
                        "--format", "json"], capture_output=True, text=True, timeout=300,
                       cwd=ROOT)
    doc = json.loads(r.stdout)
    if fifo == "proof.json":
        assert r.returncode == 2
        assert doc["reason"].startswith(f"{path}: is a FIFO, not a regular file")
    else:
        assert r.returncode == 1, r.stderr
        (d,) = doc["directories"]
        assert d["status"] == "mismatch" and "not a regular file" in d["detail"]
