"""The PR comment's layout where an opset bump makes it long (issue 40, item 4): a new
version's copied tags show their predecessor's tag, their confirmations are one collapsed
block, and the comment fits GitHub's 65,536 characters with the marker the comment
workflow puts before it. The documents are built by hand: each parameter's ``inherited``
label and tags are the declaration the expectations come from."""
from __future__ import annotations

import re

import pytest

from torch_prover.gate.comment import markdown, text
from torch_prover.output.markdown_limit import COMMENT_MARKER, PR_BODY_LIMIT

D, N = "differentiable", "non-differentiable"


def _param(name: str, inherited: str | None, verdict: str = "confirmed", why: str = "") -> dict:
    witness = {"case": f"{name.lower()}_basic", "opset": 28, "verdict": "agree", "supports": D,
               "rule": "both witnesses", "reason": "both witnesses: smooth " + why,
               "command": f"torch-prover prove Op --case {name.lower()}_basic",
               "declared": None}
    return {"io": "input", "index": 0, "name": name, "base": None, "pr": D, "base_name": None,
            "inherited": inherited, "verdict": verdict, "supports": D,
            "why": f"the evidence supports {D}", "waiver": None, "witnesses": [witness]}


def _doc(changes: list[dict]) -> dict:
    return {"exit_code": 0, "reason": f"{len(changes)} changed tags, none refuted",
            "status": "ok",
            "base": {"path": "/home/runner/work/_temp/base-Changelog.md", "kind": "Changelog.md",
                     "source": "x", "latest_only": False, "commit": "0123abc"},
            "pr": {"path": "docs/Changelog.md", "onnx": "1.23.2", "source": "x"},
            "summary": {"versions_compared": 10}, "changes": changes, "failed": [],
            "also": [], "removed": []}


def _change(op: str, version: int, params: list[dict]) -> dict:
    return {"op": op, "version": version, "kind": "new schema version", "parameters": params,
            "gaps": [], "no_case": False, "unbuilt": False, "new_case": None}


def test_copied_tags_show_their_predecessors_tag_and_collapse_into_one_block():
    doc = _doc([_change("Relu", 28, [_param("X", "Relu-14")]),
                _change("Abs", 28, [_param("X", "Abs-13")]),
                _change("Neg", 28, [_param("X", None)])])      # its own tag: not copied
    md = markdown(doc)
    assert f"| `Relu-28` | new schema version | input 0 (`X`) | {D} (in `Relu-14`) | {D} |" in md
    assert f"| `Abs-28` | new schema version | input 0 (`X`) | {D} (in `Abs-13`) | {D} |" in md
    assert f"| `Neg-28` | new schema version | input 0 (`X`) | — | {D} |" in md
    confirmed = md.split("### Confirmed")[1]
    blocks = re.findall(r"<details><summary>(.*?)</summary>(.*?)</details>", confirmed, re.S)
    assert [b[0] for b in blocks] == [
        "2 confirmed tags copied unchanged from the version each supersedes"]
    assert "`Relu-28`" in blocks[0][1] and "`Abs-28`" in blocks[0][1]
    assert "`Neg-28`" not in blocks[0][1] and "**`Neg-28` input 0 (`X`)**" in confirmed
    # the base is named by its commit, never the runner's path of its docs file
    assert "Base: the merge base `0123abc` (Changelog.md, every schema version)" in md
    assert "/home/runner" not in md and "/home/runner" not in text(doc)
    assert f"{D} (in Relu-14)" in text(doc, width=None)


@pytest.mark.parametrize("versions", [60, 120, 200, 400])
def test_the_comment_fits_githubs_limit_with_the_marker(versions):
    """An opset bump of ``versions`` new versions, each reason long enough that the whole
    comment passes the limit: what is posted -- the marker's line and the comment -- is
    within 65,536 characters."""
    doc = _doc([_change(f"Op{k}", 28, [_param("X", f"Op{k}-1", why="x" * 300),
                                        _param("Y", None, why="y" * 300)])
                for k in range(versions)])
    md = markdown(doc)
    posted = COMMENT_MARKER + "\n" + md
    assert len(posted) <= PR_BODY_LIMIT
    assert md.startswith("## torch-prover: the differentiability tags this PR changes")
