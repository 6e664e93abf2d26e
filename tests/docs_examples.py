"""Example outputs in README.md and docs/*.md, each produced by a test.

A fenced block in the docs that shows what a command prints is preceded by a marker
line ``<!-- example: NAME -->``. The test that runs that command hands its real output
to ``assert_example(NAME, text)``, which compares it with the block, so the docs cannot
drift from the tool. ``tests/test_docs_examples.py`` checks the other direction: every
marker is claimed by a test, and every shell transcript in the docs (a block whose
first line starts with ``$ ``) carries a marker.

With ``TORCH_PROVER_UPDATE_DOCS=1`` in the environment, ``assert_example`` rewrites the
block with the real output instead of failing (for the author; CI never sets it).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pins

ROOT = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"^<!-- example: ([A-Za-z0-9_.-]+) -->$")
FENCE = re.compile(r"^(`{3,}|~{3,})")


@dataclass(frozen=True)
class Example:
    """One marked block: where it is, and the lines between its fences."""

    name: str
    path: Path
    start: int      # index of the first line inside the fences
    end: int        # index of the closing fence
    text: str


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _blocks(lines: list[str]):
    """(marker name or None, open index, close index) of every fenced block."""
    i, marker = 0, None
    while i < len(lines):
        m = MARKER.match(lines[i].strip())
        if m:
            marker = m.group(1)
            i += 1
            continue
        f = FENCE.match(lines[i])
        if f:
            fence = f.group(1)
            j = i + 1
            while j < len(lines) and not lines[j].startswith(fence):
                j += 1
            yield marker, i, j
            i, marker = j + 1, None
            continue
        if lines[i].strip():
            marker = None
        i += 1


def examples() -> dict[str, Example]:
    out: dict[str, Example] = {}
    for path in doc_files():
        lines = path.read_text(encoding="utf-8").split("\n")
        for name, i, j in _blocks(lines):
            if name is None:
                continue
            assert name not in out, f"example {name!r} is marked twice ({out[name].path}, {path})"
            out[name] = Example(name, path, i + 1, j, "\n".join(lines[i + 1:j]))
    return out


def unmarked_transcripts() -> list[str]:
    """Blocks that show a command's output (first line ``$ ...``) with no marker."""
    found = []
    for path in doc_files():
        lines = path.read_text(encoding="utf-8").split("\n")
        for name, i, j in _blocks(lines):
            if name is None and i + 1 < j and lines[i + 1].startswith("$ "):
                found.append(f"{path.relative_to(ROOT)}:{i + 1}")
    return found


def assert_example(name: str, actual: str, vary: str | None = None) -> None:
    """The docs' block ``name`` is ``actual`` (trailing spaces and the final newline aside).
    ``vary``: a regular expression for what legitimately differs from run to run or machine
    to machine (a hash over a file that holds a temporary path); its matches are masked on
    both sides before comparing, so the docs still show a real value."""
    ex = examples().get(name)
    assert ex is not None, f"no block marked <!-- example: {name} --> in README.md or docs/"
    got = "\n".join(line.rstrip() for line in actual.rstrip("\n").split("\n"))
    if vary is not None and re.sub(vary, "<varies>", got) == re.sub(vary, "<varies>", ex.text):
        return
    if pins.other_torch() is not None:
        # The docs show the pinned torch's output; on another supported torch (a
        # compatibility venv) the same text is expected but for the version it prints and
        # the digests over files holding it (tests/pins.py). Never rewritten from there.
        shown, printed = (pins.mask_text(t if vary is None else re.sub(vary, "<varies>", t))
                          for t in (ex.text, got))
        assert printed == shown, (
            f"{ex.path.relative_to(ROOT)}: example {name!r} differs (beyond the torch "
            f"version {pins.other_torch()}) from what the command prints now:\n{got}")
        return
    if os.environ.get("TORCH_PROVER_UPDATE_DOCS") == "1" and got != ex.text:
        lines = ex.path.read_text(encoding="utf-8").split("\n")
        lines[ex.start:ex.end] = got.split("\n")
        ex.path.write_text("\n".join(lines), encoding="utf-8")
        return
    assert got == ex.text, (f"{ex.path.relative_to(ROOT)}: example {name!r} differs from "
                            f"what the command prints now:\n{got}")
