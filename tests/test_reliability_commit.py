"""Reliability round 5 (issue 35), part A: what node-tests and every single- or multi-file
output write, replace and leave behind (docs/safety.md, "What torch-prover writes and
deletes").

The kill -9 tests hold the commit open at a named step deterministically: the process is
run with ``TORCH_PROVER_TEST_STOP_AT=<step>`` (``output/commit.py``), stops itself there
(SIGSTOP), the test sees it stopped (``waitpid(WUNTRACED)``) and kills it -- never a timed
kill. Expectations: before the journal is written the old set is on disk, after it the new
set (the commit's own order), and nothing of the run is left once any command ran there.
"""
from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from torch_prover import cli
from torch_prover.output.commit import STOP_AT, recover

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
ORT = ("Relu/relu_basic", "Abs/abs_basic")
REF = ("Tan/tan_basic",)
BEFORE_JOURNAL = ("staged",)
AFTER_JOURNAL = ("journal", "moved:onnxruntime", "placed:onnxruntime",
                 "placed:onnx-reference", "moved:node-tests.json", "committed")


def _runtime(rel: str) -> str:
    return json.loads((MODELS / rel / "proof.json").read_text())["test_data"]["runtime"]


def _models(root: Path, rels) -> Path:
    for rel in rels:
        shutil.copytree(MODELS / rel, root / rel)
    return root


def _snapshot(root: Path) -> dict[str, str]:
    """Every entry under ``root`` (hidden ones included): a file's sha256, a directory's
    mark; so a leftover temporary or scratch directory shows as a difference."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        out[rel] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return out


def _node_tests(capsys, models: Path, out: Path) -> tuple[int, dict]:
    code = cli.main(["node-tests", str(models), "-o", str(out), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def _onnx_layout(at: Path) -> None:
    """A test directory in ONNX's own backend-test layout (what ``onnx/backend/test/data``
    holds): model.onnx and test_data_set_0/{input,output}_N.pb -- node-tests' shape."""
    src = MODELS / "Relu" / "relu_basic"
    (at / "test_data_set_0").mkdir(parents=True)
    shutil.copyfile(src / "model.onnx", at / "model.onnx")
    for f in ("input_0.pb", "output_0.pb"):
        shutil.copyfile(src / "test_data_set_0" / f, at / "test_data_set_0" / f)


def test_sample_runtimes_are_what_the_tests_assume():
    assert {_runtime(r) for r in ORT} == {"onnxruntime"}
    assert {_runtime(r) for r in REF} == {"onnx.reference"}


@pytest.mark.parametrize("kind, models", [("onnxruntime", ORT + REF), ("onnxruntime", REF),
                                          ("onnx-reference", ORT)])
def test_problem_01_node_tests_never_deletes_onnx_layout_it_did_not_write(
        tmp_path, capsys, kind, models):
    """ONNX's own layout in OUT/<kind>/ without a node-tests.json listing it: refused before
    any work, untouched -- whether node-tests would replace the kind (it has tests for it)
    or remove it (it has none: "a kind left empty")."""
    tree = _models(tmp_path / "models", models)
    out = tmp_path / "out"
    _onnx_layout(out / kind / "test_abs")
    before = _snapshot(out)
    code, doc = _node_tests(capsys, tree, out)
    assert code == 2 and doc["status"] == "usage error"
    assert f"{out / kind} exists and is not what node-tests last wrote" in doc["reason"]
    assert _snapshot(out) == before


def test_problem_01_a_manifest_without_the_digest_owns_nothing(tmp_path, capsys):
    """A node-tests.json of ours that does not list the kind with its digest (an older
    manifest, or a tree changed since) proves nothing: refused, untouched."""
    tree = _models(tmp_path / "models", ORT)
    out = tmp_path / "out"
    assert _node_tests(capsys, tree, out)[0] == 0
    manifest = json.loads((out / "node-tests.json").read_text())
    assert set(manifest["written"]) == {"onnxruntime"}
    del manifest["written"]
    (out / "node-tests.json").write_text(json.dumps(manifest))
    before = _snapshot(out)
    code, doc = _node_tests(capsys, tree, out)
    assert code == 2 and "not what node-tests last wrote" in doc["reason"]
    assert _snapshot(out) == before


def test_problem_18_node_tests_on_one_case_directory(tmp_path, capsys):
    """check-evidence takes one case directory; node-tests writes its one test from it."""
    tree = _models(tmp_path / "models", ORT[:1])
    one = tree / ORT[0]
    code, doc = _node_tests(capsys, one, tmp_path / "out")
    assert code == 0, doc["reason"]
    (entry,) = doc["directories"]
    assert entry["status"] == "written" and entry["kind"] == "onnxruntime"
    test = tmp_path / "out" / "onnxruntime" / entry["name"]
    assert (test / "model.onnx").read_bytes() == (one / "model.onnx").read_bytes()


def _stopped_at(step: str, argv: list[str], cwd: Path) -> None:
    """Run the CLI in a child stopped at ``step``; kill it there with SIGKILL."""
    env = {**os.environ, STOP_AT: step}
    proc = subprocess.Popen([sys.executable, "-m", "torch_prover", *argv], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status = os.waitpid(proc.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), (step, proc.stderr.read().decode()[-800:])
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stderr.close()


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """OUT after an unkilled run of models A (the old set) and of models B (the new set)."""
    root = tmp_path_factory.mktemp("commit")
    a = _models(root / "a", ORT[:1] + REF)
    b = _models(root / "b", ORT)
    sets = {}
    for name, models in (("new", b), ("old", a)):
        out = root / "out"
        shutil.rmtree(out, ignore_errors=True)
        assert cli.main(["node-tests", str(models), "-o", str(out)]) == 0
        shutil.copytree(out, root / name)
        sets[name] = _snapshot(out)
    return root, a, b, sets


@pytest.mark.parametrize("step", BEFORE_JOURNAL + AFTER_JOURNAL)
def test_problem_09_node_tests_killed_at_any_step_leaves_old_or_new_set(two_runs, tmp_path,
                                                                        capsys, step):
    root, _, b, sets = two_runs
    out = root / "out"
    shutil.rmtree(out)
    shutil.copytree(root / "old", out)
    _stopped_at(step, ["node-tests", str(b), "-o", str(out)], ROOT)
    assert any(p.name.startswith(".") for p in out.iterdir())   # the run's scratch is there
    recover(out)   # what the next command writing there does first
    assert _snapshot(out) == sets["old" if step in BEFORE_JOURNAL else "new"]
    code, _ = _node_tests(capsys, b, out)                # the rerun equals an unkilled run
    assert code == 0 and _snapshot(out) == sets["new"]


MULTI = """
import sys
from pathlib import Path
from torch_prover.output.commit import write_texts
d = Path(sys.argv[1])
write_texts({d / "r.md": "new summary", d / "r-details.md": "new details"})
"""


@pytest.mark.parametrize("step", ["staged", "journal", "moved:r.md", "placed:r.md",
                                  "moved:r-details.md", "placed:r-details.md", "committed"])
def test_problem_10_a_multi_file_output_commits_together(tmp_path, step):
    """A report and its details file (fix-tags' patch and PR text alike) are one commit:
    killed at any step, the next run finds the old pair or the new pair, never one of
    each, and no temporary."""
    (tmp_path / "r.md").write_text("old summary")
    (tmp_path / "r-details.md").write_text("old details")
    env = {**os.environ, STOP_AT: step}
    proc = subprocess.Popen([sys.executable, "-c", MULTI, str(tmp_path)], env=env)
    _, status = os.waitpid(proc.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    recover(tmp_path)
    want = "old" if step == "staged" else "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r-details.md", "r.md"]
    assert (tmp_path / "r.md").read_text() == f"{want} summary"
    assert (tmp_path / "r-details.md").read_text() == f"{want} details"


MANIFEST = ".torch-prover-outputs.json"
"""Where a single-file output is listed as torch-prover's (docs/safety.md)."""


def test_problem_10_a_single_file_output_leaves_no_temporary(tmp_path):
    """``script -o`` killed before its rename: the old file stays, and the next command
    writing there sweeps the run's scratch directory (it used to stay for good)."""
    target = tmp_path / "proof.py"
    assert cli.main(["script", "Relu", "-o", str(target)]) == 0
    old = target.read_bytes()
    _stopped_at("staged", ["script", "Abs", "-o", str(target)], tmp_path)
    assert target.read_bytes() == old
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".torch-prover-commit.")]
    assert cli.main(["script", "Abs", "-o", str(target)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST, "proof.py"]
    assert target.read_bytes() != old


@pytest.mark.parametrize("step", ["staged", "journal", "moved:proof.py", "placed:proof.py",
                                  f"moved:{MANIFEST}", f"placed:{MANIFEST}", "committed"])
def test_problem_10_the_manifest_commits_with_the_file_it_lists(tmp_path, step):
    """Killed at any step, the file and its manifest entry are of one set (the old script
    and its digest, or the new and its): the next run finds the file provably its own and
    replaces it; nothing of the killed run is left."""
    import hashlib
    target = tmp_path / "proof.py"
    assert cli.main(["script", "Relu", "-o", str(target)]) == 0
    _stopped_at(step, ["script", "Abs", "-o", str(target)], tmp_path)
    recover(tmp_path)
    listed = json.loads((tmp_path / MANIFEST).read_text())["files"]["proof.py"]
    assert listed["sha256"] == hashlib.sha256(target.read_bytes()).hexdigest()
    assert ("Abs" in target.read_text()) == (step != "staged")
    assert cli.main(["script", "Floor", "-o", str(target)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST, "proof.py"]


def test_problem_19_a_write_error_names_the_file_being_written(tmp_path):
    """A write that fails (a file-size limit: EFBIG, as a full disk gives ENOSPC) names the
    file under OUT being written, never the MODELS file it copies."""
    tree = _models(tmp_path / "models", ORT[:1])
    out = tmp_path / "out"

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))

    r = subprocess.run([sys.executable, "-m", "torch_prover", "node-tests", str(tree), "-o",
                        str(out)], cwd=ROOT, capture_output=True, text=True,
                       preexec_fn=limited)
    assert r.returncode == 2, r.stderr
    (line,) = r.stderr.splitlines()
    assert f"({out}/onnxruntime/test_relu_basic/model.onnx)" in line, line
    assert str(tree) not in line
    assert not out.exists() or not [p for p in out.iterdir()]
