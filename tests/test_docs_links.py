"""README.md and docs/: a page a newcomer reads in five minutes, and links that resolve.

Issue 26 part 8: the README at most 12 KB, with the test command CI runs (`.ci/run` runs
exactly the README's line) and links into docs/ for the reference; every relative link in
the docs points at a file that exists and, with an anchor, at a heading of it.
"""
from __future__ import annotations

import re
from pathlib import Path

from docs_examples import doc_files

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)\s]+)\)")
TEST_COMMAND = ".venv/bin/ruff check . && .venv/bin/python -m pytest -q"


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    found, fence = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            found.add(_slug(line.lstrip("#")))
    return found


def test_readme_is_a_short_page_with_the_ci_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) <= 12 * 1024
    assert TEST_COMMAND in readme.splitlines()
    assert TEST_COMMAND in (ROOT / ".ci" / "run").read_text()
    for doc in ("commands.md", "verdicts.md", "evidence.md", "json.md", "ci.md", "design.md"):
        assert f"(docs/{doc}" in readme, doc


def test_every_relative_link_resolves():
    broken = []
    for page in doc_files():
        text = page.read_text(encoding="utf-8")
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target):       # https:, mailto:
                continue
            file, _, anchor = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []
