"""A real tag-fixing commit of ONNX's history, replayed with its two documents only.

onnx/onnx 398cbb6 ("Add Some Differentiable Tags for The Rest Ops in tensor/defs.cc
(#2954)") set or changed 14 tags; ``tests/data/onnx-398cbb64`` holds docs/Changelog.md of
its parent and of the commit, byte for byte. ``verify-all --changed-from BEFORE
--tags-from AFTER`` reads the PR's tags from the commit's own docs: no build of that
2020 onnx, the proofs run in the installed one.

The expectations come from outside the gate: the changed entries are the commit's diff
(``git show 398cbb6 -- docs/Changelog.md``, copied below), and the verdicts are the math:
Resize's output moves with ``roi`` (tf_crop_and_resize: the crop box *is* roi) and with
``scales`` (the sampling grid is x / scale), so the commit's non-differentiable tags on
both are wrong; every other tag it wrote holds (Compress selects its input, Round and Sign
are piecewise constant, Squeeze reshapes). And the same verdicts come out of today's PR
mode on the installed onnx (its build), given a base of its own docs carrying the commit's
"before" tags on those parameters.
"""
from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gate_fixture import generate_docs, retag
from json_contract import validate_text

DATA = Path(__file__).resolve().parent / "data" / "onnx-398cbb64"
D, N, U = "differentiable", "non-differentiable", "unknown"

# (op, version, io, name): (before, after) -- the commit's diff of docs/Changelog.md
COMMIT = {
    ("Compress", 11, "input", "input"): (U, D),
    ("Compress", 11, "input", "condition"): (U, N),
    ("Compress", 11, "output", "output"): (U, D),
    ("Round", 11, "input", "X"): (D, N),
    ("Round", 11, "output", "Y"): (D, N),
    ("Resize", 13, "input", "X"): (U, D),
    ("Resize", 13, "input", "roi"): (U, N),
    ("Resize", 13, "input", "scales"): (U, N),
    ("Resize", 13, "input", "sizes"): (U, N),
    ("Resize", 13, "output", "Y"): (U, D),
    ("Sign", 13, "input", "input"): (D, N),
    ("Sign", 13, "output", "output"): (D, N),
    ("Squeeze", 13, "input", "data"): (U, D),
    ("Squeeze", 13, "output", "squeezed"): (U, D),
}
REFUTED = {("Resize", 13, "input", "roi"), ("Resize", 13, "input", "scales")}
"""The math's verdict (module doc); every other tag the commit wrote is confirmed."""


def _gate(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "torch_prover", "verify-all", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "COLUMNS": "100"})


def _verdicts(doc: dict) -> dict[tuple, dict]:
    return {(c["op"], c["version"], p["io"], p["name"]): p
            for c in doc["changes"] for p in c["parameters"]}


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    work = tmp_path_factory.mktemp("replay")
    for side in ("before", "after"):
        (work / f"Changelog-{side}.md").write_bytes(
            gzip.decompress((DATA / f"Changelog-{side}.md.gz").read_bytes()))
    cache = tmp_path_factory.mktemp("replay_cache")
    done = _gate(work, "--changed-from", "Changelog-before.md", "--tags-from",
                 "Changelog-after.md", "--cache-dir", str(cache), "--no-write",
                 "--format", "json")
    return {"work": work, "cache": cache, "done": done, "doc": validate_text(done.stdout)}


def test_the_commit_is_replayed_from_its_two_documents(replay):
    doc, done = replay["doc"], replay["done"]
    assert done.returncode == 1, done.stderr
    assert doc["pr"]["path"] == "Changelog-after.md"
    assert doc["summary"]["needs_build"] == 0
    found = _verdicts(doc)
    assert set(found) == set(COMMIT)
    for key, (before, after) in COMMIT.items():
        p = found[key]
        assert (p["base"], p["pr"]) == (before, after), key
        expected = "refuted" if key in REFUTED else "confirmed"
        assert p["verdict"] == expected, (key, p["why"])
        if key in REFUTED:
            assert p["supports"] == D
    # every record judged the PR's docs, not the installed onnx's tags
    assert doc["cases"] and all(r["tags_from"] == doc["pr"]["source"] for r in doc["cases"])


def test_each_refuted_tag_names_the_proof_that_refutes_it(replay):
    """The first witness (the one the reproduce command, annotation and JUnit name) is a
    disagreeing proof; the not-exercised ones come after."""
    found = _verdicts(replay["doc"])
    for key in REFUTED:
        ws = found[key]["witnesses"]
        assert ws[0]["verdict"] == "disagree", (key, ws[0])
        assert ws[0]["command"].endswith("--tags-from Changelog-after.md")
        ranks = ["disagree agree proposed".split().count(w["verdict"]) == 0 for w in ws]
        assert ranks == sorted(ranks)   # every inconclusive witness after the deciding ones
    roi = found["Resize", 13, "input", "roi"]["witnesses"][0]
    assert roi["case"].startswith("resize_crop_roi")   # the case that exercises roi
    from torch_prover.ci.outcomes import all_tests
    tests = {(t.op, t.version, t.io, t.name): t for t in all_tests(replay["doc"])}
    for key in REFUTED:
        assert tests[key].reproduce == found[key]["witnesses"][0]["command"]


def test_the_same_verdicts_as_pr_mode_on_the_installed_onnx(replay, tmp_path):
    """Today's PR mode (the PR's tags = the installed onnx) on a base of the installed
    onnx's own docs with the commit's "before" tags gives the same verdicts: the installed
    onnx carries the commit's "after" tags on these parameters (checked first)."""
    import onnx.defs
    cat = onnx.defs.OpSchema.DifferentiationCategory
    word = {cat.Differentiable: D, cat.NonDifferentiable: N, cat.Unknown: U}
    for (op, version, io, name), (_, after) in COMMIT.items():
        s = onnx.defs.get_schema(op, version)
        formal = next(f for f in (s.inputs if io == "input" else s.outputs) if f.name == name)
        assert word[formal.differentiation_category] == after, (op, name)
    docs = generate_docs(tmp_path / "gen")
    text = (docs / "Changelog.md").read_text(encoding="utf-8")
    for (op, version, _, name), (before, _) in COMMIT.items():
        text = retag(text, f"{op}-{version}", name, before)
    (tmp_path / "base.md").write_text(text, encoding="utf-8")
    done = _gate(tmp_path, "--changed-from", "base.md", "--cache-dir", str(replay["cache"]),
                 "--no-write", "--format", "json")
    built = _verdicts(validate_text(done.stdout))
    assert done.returncode == replay["done"].returncode
    assert {k: (p["base"], p["pr"], p["verdict"], p["supports"]) for k, p in built.items()} \
        == {k: (p["base"], p["pr"], p["verdict"], p["supports"])
            for k, p in _verdicts(replay["doc"]).items()}
