"""Two real 2020 tagging commits of ONNX, replayed on a base that documents Scatter-13 and
Upsample-13 -- versions ONNX added in May 2020 (a82c6a701, #2770) and reverted before any
release (07736fc19, #3056), so no onnx since has them (issue 40).

The gate must prove these PRs, not refuse them as "the installed onnx is older than the
base": the installed onnx (opset 28) is far newer than the base (opset 13); the two
versions it lacks are named as reverted before release, and nothing else changes.

``tests/data/onnx-2020-tagging`` holds docs/Changelog.md of 63369697 (the parent of
b2ed660d0) and the two commits' diffs of that file, each as ``git show`` prints it; the
PRs' Changelogs are the base with the diffs applied (a0ba28eda's parent has b2ed660d0's
Changelog byte for byte). The expectations come from the diffs (which parameters change)
and the math:

- b2ed660d0 "Fix scatter family's differentiable tags (#3028)": ScatterElements-13 and
  ScatterND-13 write ``updates`` into the output (out[idx] = updates): d out / d updates
  is 1 at the written positions, so ``differentiable`` holds.
- a0ba28eda "Define the differentiable variables for NN operator (#3035)": ConvTranspose
  is bilinear in X and W and affine in B; Flatten reshapes; MaxUnpool's indices I and
  output_shape and TfIdfVectorizer's X are integer (or string) inputs; BatchNormalization-9's
  running ``mean`` output is momentum * mean + (1 - momentum) * the batch's mean, smooth in
  X and in the input mean, so its non-differentiable tag is refuted.
"""
from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from json_contract import validate_text

DATA = Path(__file__).resolve().parent / "data" / "onnx-2020-tagging"
D, N = "differentiable", "non-differentiable"
REVERTED = "reverted before release (absent from the installed onnx, newer than the base)"


def _apply(work: Path, patch: str) -> None:
    subprocess.run(["git", "apply", str(DATA / patch)], cwd=work, check=True)


def _changed(patch: str) -> int:
    """How many parameter lines the commit's diff re-tags (its ``+<dt>`` lines)."""
    text = (DATA / patch).read_text(encoding="utf-8")
    return len(re.findall(r"^\+<dt><tt>", text, re.M))


@pytest.fixture(scope="module")
def replays(tmp_path_factory):
    work = tmp_path_factory.mktemp("replay2020")
    (work / "docs").mkdir()
    changelog = work / "docs" / "Changelog.md"
    changelog.write_bytes(gzip.decompress((DATA / "Changelog-63369697.md.gz").read_bytes()))
    (work / "base.md").write_bytes(changelog.read_bytes())
    _apply(work, "b2ed660d0.patch")
    (work / "pr1.md").write_bytes(changelog.read_bytes())
    _apply(work, "a0ba28eda.patch")
    (work / "pr2.md").write_bytes(changelog.read_bytes())
    cache = tmp_path_factory.mktemp("replay2020_cache")
    out = {}
    for name, base, pr in (("b2ed660d0", "base.md", "pr1.md"), ("a0ba28eda", "pr1.md", "pr2.md")):
        done = subprocess.run(
            [sys.executable, "-m", "torch_prover", "verify-all", "--changed-from", base,
             "--tags-from", pr, "--no-write", "--cache-dir", str(cache), "--format", "json"],
            cwd=work, capture_output=True, text=True, timeout=1200,
            env={**os.environ, "COLUMNS": "100"})
        out[name] = (done, validate_text(done.stdout) if done.stdout else None)
    return out


def _params(doc: dict) -> dict[tuple, dict]:
    return {(c["op"], c["version"], p["io"], p["name"], p["pr"]): p
            for c in doc["changes"] for p in c["parameters"]}


def test_the_scatter_family_pr_is_proved_on_a_base_with_reverted_versions(replays):
    done, doc = replays["b2ed660d0"]
    assert done.returncode == 0, done.stderr
    assert doc["absent"] == [{"version": "Scatter-13", "why": REVERTED},
                             {"version": "Upsample-13", "why": REVERTED}]
    found = _params(doc)
    assert set(found) == {("ScatterElements", 13, "input", "updates", D),
                          ("ScatterND", 13, "input", "updates", D)}
    for p in found.values():
        assert (p["base"], p["verdict"]) == (N, "confirmed"), p["why"]
    assert doc["summary"]["needs_build"] == 0 and "older" not in done.stderr
    from torch_prover.gate.comment import markdown
    md = markdown(doc)
    assert "not in the installed onnx" in md and f"{REVERTED}: `Scatter-13`, `Upsample-13`" in md


def test_the_nn_ops_pr_is_proved_not_refused(replays):
    done, doc = replays["a0ba28eda"]
    assert done.returncode == 1, done.stderr          # a tag the math refutes (below)
    assert [a["version"] for a in doc["absent"]] == ["Scatter-13", "Upsample-13"]
    found = _params(doc)
    assert len(found) == _changed("a0ba28eda.patch") == 47
    math = {("ConvTranspose", 11, "input", "X", D): "confirmed",
            ("ConvTranspose", 11, "input", "W", D): "confirmed",
            ("ConvTranspose", 11, "input", "B", D): "confirmed",
            ("ConvTranspose", 11, "output", "Y", D): "confirmed",
            ("Flatten", 13, "input", "input", D): "confirmed",
            ("MaxUnpool", 11, "input", "I", N): "confirmed",
            ("MaxUnpool", 11, "input", "output_shape", N): "confirmed",
            ("TfIdfVectorizer", 9, "input", "X", N): "confirmed",
            ("BatchNormalization", 9, "output", "mean", N): "refuted"}
    for key, verdict in math.items():
        assert found[key]["verdict"] == verdict, (key, found[key]["why"])
    assert found["BatchNormalization", 9, "output", "mean", N]["supports"] == D
    assert not any(p["verdict"].startswith("not proved: build") for p in found.values())
