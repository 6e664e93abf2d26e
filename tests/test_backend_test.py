"""``torch_prover.ci.backend_test``: the committed evidence run under pytest in onnxruntime's
backend, with no private ONNX API.

The tree is written by ``torch-prover node-tests models`` (its manifest says which tests it
wrote for onnxruntime: the expectation comes from there, not from the helper); a test
module of four lines, as docs/ci.md shows it, is run by pytest in a child process.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from torch_prover.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("backend") / "node-tests"
    done = subprocess.run([sys.executable, "-m", "torch_prover", "node-tests",
                           str(ROOT / "models"), "-o", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def test_pytest_runs_the_committed_evidence_in_onnxruntime(tree, tmp_path):
    manifest = json.loads((tree / "node-tests.json").read_text(encoding="utf-8"))
    written = [e for e in manifest["directories"] if e["status"] == "written"
               and e["kind"] == "onnxruntime"]
    assert written
    module = tmp_path / "test_evidence.py"
    module.write_text(
        "import onnxruntime.backend\n"
        "from torch_prover.ci import backend_test\n\n"
        f"TestEvidence = backend_test(onnxruntime.backend, {str(tree)!r})\n",
        encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(module)], capture_output=True, text=True, timeout=900,
                          cwd=tmp_path, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    tail = done.stdout.strip().splitlines()[-1]
    assert done.returncode == 0, done.stdout[-3000:]
    # onnxruntime.backend's import warns (onnx.version is deprecated): counted, not failed
    assert re.fullmatch(rf"{len(written)} passed(?:, \d+ warnings?)? in [0-9.]+s(?: \(.*\))?",
                        tail), tail


def test_a_tree_without_tests_of_the_kind_is_refused(tmp_path):
    from torch_prover.ci import backend_test
    from torch_prover.ci.node_tests_run import backend_for
    backend = backend_for("onnxruntime")   # onnxruntime.backend, its import warning quieted
    with pytest.raises(UsageError, match="no onnxruntime test under"):
        backend_test(backend, tmp_path)
    with pytest.raises(UsageError, match="kind 'node'"):
        backend_test(backend, tmp_path, kind="node")
