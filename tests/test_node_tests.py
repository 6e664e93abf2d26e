"""node-tests: the committed evidence as tests ONNX's own loader and runner accept, run in
onnxruntime's backend (or onnx.reference's, where the record names it).

Expectations come from outside the code under test: which directory goes to which kind,
and the reason an explained one gives, are read here from each record's ``test_data``;
that the tree is ONNX's is shown by ONNX's ``load_model_tests`` and ``Runner``. A sample
of models/ keeps it fast (scripts/benchmark.py counts the whole tree).
"""
from __future__ import annotations

import hashlib
import io
import json
import shutil
import unittest
from pathlib import Path

import pytest

from torch_prover import cli
from torch_prover.ci import node_tests as nt

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"


def _record(d: Path) -> dict:
    return json.loads((d / "proof.json").read_text())


def _sample() -> list[Path]:
    """Every 60th directory the record says onnxruntime reproduces, every 25th that names
    onnx.reference, and every one that names no runtime or has an output not compared."""
    ort, ref, other = [], [], []
    for d in sorted(p.parent for p in MODELS.glob("*/*/proof.json")):
        data = _record(d).get("test_data") or {}
        compared = all(o["check"] == "compare" for o in data.get("outputs", ()))
        if data.get("runtime") == "onnxruntime" and compared:
            ort.append(d)
        elif data.get("runtime") == "onnx.reference" and compared:
            ref.append(d)
        else:
            other.append(d)
    return ort[::60] + ref[::25] + other


def _tree_digest(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    root = tmp_path_factory.mktemp("node_tests")
    models = root / "models"
    for d in _sample():
        shutil.copytree(d, models / d.parent.name / d.name)
    return root, models


def _run(capsys, *argv: str) -> tuple[int, dict]:
    code = cli.main(["node-tests", *argv, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_the_tree_is_onnxs_and_every_directory_passes_or_says_why(sample, capsys):
    root, models = sample
    out = root / "out"
    before = _tree_digest(models)
    code, doc = _run(capsys, str(models), "-o", str(out), "--run")
    assert code == 0, doc["reason"]
    assert _tree_digest(models) == before            # MODELS only read

    from onnx.backend.test.loader import load_model_tests
    by_source = {d["source"]: d for d in doc["directories"]}
    expect = {"onnxruntime": set(), "onnx-reference": set()}
    for d in sorted(p.parent for p in models.glob("*/*/proof.json")):
        rel = d.relative_to(models).as_posix()
        data = _record(d)["test_data"]
        entry = by_source[rel]
        not_compared = [o for o in data["outputs"] if o["check"] != "compare"]
        if data["runtime"] is None:
            assert entry["status"] == "explained" and entry["detail"] == data["why"]
        elif not_compared:
            assert entry["status"] == "explained"
            assert all(o["reason"] in entry["detail"] for o in not_compared)
        elif (_record(d).get("numeric") or {}).get("forward_ok") is False:
            # a failed proof: its runtime computed another function than PyTorch's
            assert entry["status"] == "explained" and entry["detail"].startswith(
                "forward mismatch in ")
        else:
            kind = {"onnxruntime": "onnxruntime", "onnx.reference": "onnx-reference"}[
                data["runtime"]]
            expect[kind].add(entry["name"])
            assert entry["status"] == "written" and entry["kind"] == kind
            assert entry["run"] == {"passed": True, "detail": ""}
    assert all(expect.values()) and doc["summary"]["explained"] > 0
    for kind, names in expect.items():
        loaded = load_model_tests(data_dir=str(out), kind=kind)
        assert {c.name for c in loaded} == names
        assert all(c.name.startswith("test_") and c.name.isidentifier() for c in loaded)

    # copies, not links; ONNX's node-test files only (no gradients)
    for p in (out / "onnxruntime").rglob("*"):
        assert not p.is_symlink()
        if p.is_file():
            assert p.stat().st_nlink == 1 and not p.name.startswith("grad_"), p
    assert json.loads((out / "node-tests.json").read_text())["kind"] == "node-tests"


def test_onnxs_own_runner_runs_them(sample, capsys, monkeypatch):
    """``onnx.backend.test.runner.Runner`` registers and runs the tree (its loader pointed
    at OUT, its own node tests left out): every CPU test passes, CUDA ones skip."""
    from onnx.backend.test import loader
    from onnx.backend.test import runner as runner_mod
    from torch_prover.ci.node_tests_run import backend_for
    root, models = sample
    out = root / "runner"
    code, _ = _run(capsys, str(models), "-o", str(out))
    assert code == 0
    for kind in ("onnxruntime", "onnx-reference"):
        backend = backend_for(kind)
        monkeypatch.setattr(runner_mod, "load_model_tests", lambda data_dir=None, kind=None, _k=kind:
                            loader.load_model_tests(str(out), _k) if kind == "simple" else [])
        tests = runner_mod.Runner(backend).test_suite
        result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(tests)
        names = list(loader.load_model_tests(str(out), kind))
        assert result.testsRun == 2 * len(names) > 0          # CPU and CUDA, per test
        assert not result.failures and not result.errors, (result.failures + result.errors)[:2]
        assert len(result.skipped) == len(names)              # CUDA: not on this machine


def test_nothing_outside_its_own_entries_is_touched(sample, capsys, tmp_path):
    root, models = sample
    code, _ = _run(capsys, str(models), "-o", str(models / "tests"))
    assert code == 2                                          # OUT inside MODELS
    code, _ = _run(capsys, str(models), "-o", str(root))
    assert code == 2                                          # MODELS inside OUT
    out = tmp_path / "out"
    (out / "onnxruntime").mkdir(parents=True)
    notes = out / "onnxruntime" / "notes.txt"
    notes.write_text("mine")
    code, doc = _run(capsys, str(models), "-o", str(out))
    assert code == 2 and "not what node-tests last wrote there" in doc["reason"]
    assert notes.read_text() == "mine"
    notes.unlink()
    (out / "onnxruntime").rmdir()
    (out / "onnxruntime").symlink_to(models, target_is_directory=True)
    code, doc = _run(capsys, str(models), "-o", str(out))
    assert code == 2 and (out / "onnxruntime").is_symlink()
    (out / "onnxruntime").unlink()
    (out / "node-tests.json").write_text('{"kind": "not ours"}')
    code, doc = _run(capsys, str(models), "-o", str(out))
    assert code == 2 and "not written by node-tests" in doc["reason"]
    (out / "node-tests.json").unlink()
    # ours (the manifest lists it): rewritten whole, a test whose directory is gone goes
    # with it; a test added by hand makes the tree not the one the manifest lists
    fewer = tmp_path / "fewer"
    shutil.copytree(models, fewer)
    assert _run(capsys, str(fewer), "-o", str(out))[0] == 0
    tests = sorted((out / "onnxruntime").iterdir())
    gone = next(d for d in sorted(fewer.glob("*/*")) if nt.test_name(d.name) == tests[0].name)
    shutil.rmtree(gone)
    assert _run(capsys, str(fewer), "-o", str(out))[0] == 0
    assert not tests[0].exists() and tests[1].exists()
    added = out / "onnxruntime" / "test_gone"
    shutil.copytree(tests[1], added)
    code, doc = _run(capsys, str(fewer), "-o", str(out))
    assert code == 2 and "not what node-tests last wrote there" in doc["reason"]
    assert added.exists() and tests[1].exists()


def test_a_tree_that_lies_is_refused_or_fails(sample, capsys, tmp_path):
    _, models = sample
    forged = tmp_path / "models"
    ort = next(d for d in sorted(models.glob("*/*"))
               if (_record(d).get("test_data") or {}).get("runtime") == "onnxruntime"
               and all(o["check"] == "compare" for o in _record(d)["test_data"]["outputs"]))
    ref = next(d for d in sorted(models.glob("*/*"))
               if (_record(d).get("test_data") or {}).get("runtime") == "onnx.reference")
    a = forged / ort.parent.name / ort.name
    b = forged / ref.parent.name / ref.name
    shutil.copytree(ort, a)
    shutil.copytree(ref, b)
    data = bytearray((a / "model.onnx").read_bytes())
    data[-1] ^= 1                                             # not the record's model
    (a / "model.onnx").write_bytes(bytes(data))
    rec = _record(b)                                          # claims onnxruntime runs it
    rec["test_data"]["runtime"] = "onnxruntime"
    (b / "proof.json").write_text(json.dumps(rec))
    code, doc = _run(capsys, str(forged), "-o", str(tmp_path / "out"), "--run")
    assert code == 1
    status = {d["source"]: d for d in doc["directories"]}
    assert status[f"{ort.parent.name}/{ort.name}"]["status"] == "refused"
    # its numeric check ran the reference evaluator: test_data cannot say otherwise
    bad = status[f"{ref.parent.name}/{ref.name}"]
    assert bad["status"] == "refused" and "test_data.runtime" in bad["detail"]
    assert not (tmp_path / "out" / "onnxruntime").exists()


def test_docs_example(tmp_path, capsys, monkeypatch):
    from docs_examples import assert_example
    for rel in ("Relu/relu_basic", "Tan/tan_basic", "RandomUniform/randomuniform_fixed_shape"):
        shutil.copytree(MODELS / rel, tmp_path / "models" / rel)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "100")
    code = cli.main(["node-tests", "models", "-o", "node-tests", "--run"])
    assert code == 0
    assert_example("node-tests", "$ torch-prover node-tests models -o node-tests --run\n"
                   + capsys.readouterr().out)


def test_judging_a_directory_parses_its_model_once(monkeypatch):
    """A float32-copy directory takes every check judge makes (sha256, record re-check, test
    data, the copy's bound): all of them read the one parse of the sha256-checked bytes."""
    import onnx
    d = next(d for d in sorted(p.parent for p in MODELS.glob("*/*/proof.json"))
             if (_record(d).get("test_data") or {}).get("copy") == "float32"
             and all(o["check"] == "compare" for o in _record(d)["test_data"]["outputs"]))
    real, parsed = onnx.load_model_from_string, []
    monkeypatch.setattr(onnx, "load_model_from_string",
                        lambda *a, **k: parsed.append(1) or real(*a, **k))
    entry = nt.judge(d, MODELS, _record(d))
    assert entry.status is nt.Status.WRITTEN and entry.atol is not None, entry
    assert len(parsed) == 1
