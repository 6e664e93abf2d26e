"""Shared by the fix-tags tests: records written by hand (for the planner, called
directly), a docs file with tags of our choosing, and applying a patch to a copy of the
sources (git apply) and re-reading it.

The records carry the verdict a case declares, so every expectation in the tests comes from
these declarations and the fixture sources (tests/data/onnx-src), not from fix-tags' output.
The command itself re-checks every record it reads, so its tests give it real reports
(conftest.py: ``real_report``).
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
    """A file shaped like a report, for checks made before a report is read (it is no
    report: fix-tags refuses it)."""
    path.write_text(json.dumps({"format": 1, "summary": {}, "cases": list(records)}))
    return path


DOCS = Path(__file__).parent / "data" / "Operators.md"


def docs_with_input_tag(path: Path, ops: tuple[str, ...], tag: str) -> Path:
    """tests/data/Operators.md with input 0 of each of ``ops`` tagged ``tag``: the tags a
    stale or edited docs file gives a ``--tags-from`` run."""
    text = DOCS.read_text(encoding="utf-8")
    for op in ops:
        start = text.index(f'### <a name="{op}"></a>')
        end = text.index("### <a name=", start + 10)
        section = text[start:end]
        first = section.index("<dt><tt>", section.index("#### Inputs"))
        close = section.index("</dt>", first)
        line = section[first:close]
        edited = line.replace(line[line.index("("):line.index(")") + 1], f"({tag})", 1)
        text = text[:start] + section[:first] + edited + section[close:] + text[end:]
    path.write_text(text, encoding="utf-8")
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
