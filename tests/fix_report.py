"""Shared by the fix-tags tests: verify-all report records written by hand, and applying a
patch to a copy of the sources (git apply) and re-reading it.

The records carry the verdict a case declares, so every expectation in the tests comes from
these declarations and the fixture sources (tests/data/onnx-src), not from fix-tags' output.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from torch_prover.fix.locate import SourceTree, read_tree

SRC = Path(__file__).parent / "data" / "onnx-src"


def param(io: str, index: int, name: str, tag: str, verdict: str, supports: str) -> dict:
    """One parameter of a case record, as verify-all's JSON report writes it."""
    return {"io": io, "index": index, "name": name, "tag": tag, "verdict": verdict,
            "supports": supports, "rule": "both witnesses",
            "reason": f"both witnesses support {supports}",
            "witnesses": {"autograd": {"outcome": "grad", "detail": "nonzero gradient"},
                          "numeric": {"outcome": "smooth", "detail": "smooth into output 0"}}}


def record(op: str, version: int, case: str, *params: dict) -> dict:
    return {"op": op, "domain": "", "case": case, "schema_version": version,
            "parameters": list(params)}


def write_report(path: Path, *records: dict) -> Path:
    path.write_text(json.dumps({"format": 1, "summary": {}, "cases": list(records)}))
    return path


def applied(diff: str, tmp: Path) -> SourceTree:
    """The fixture sources with ``diff`` applied by git, re-read."""
    copy = tmp / "applied"
    shutil.copytree(SRC / "onnx", copy / "onnx")
    (tmp / "applied.patch").write_text(diff)
    subprocess.run(["git", "init", "-q"], cwd=copy, check=True)
    subprocess.run(["git", "apply", "--check", "../applied.patch"], cwd=copy, check=True)
    subprocess.run(["git", "apply", "../applied.patch"], cwd=copy, check=True)
    return read_tree(copy)


def tags_of(tree: SourceTree) -> dict:
    """(op, version, io, index) -> tag value of every located declaration."""
    return {(b.op, b.version, d.io, d.index): d.tag.value for b in tree.blocks
            for d in b.declarations if d.tag is not None}
