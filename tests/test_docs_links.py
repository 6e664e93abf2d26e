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


# ------------------------------------------------------------------- the page on PyPI
PYPI_README = ROOT / "README.pypi.md"
"""The long description (pyproject.toml's ``readme``): README.md with every relative link
made absolute against the Source URL, since PyPI renders it away from the repository,
where ``docs/safety.md`` resolves to nothing (issue 42: 26 such links). Written by the test
below with ``TORCH_PROVER_UPDATE_DOCS=1`` (docs/performance.md, "Packaging": before a
release)."""


def _project() -> dict:
    from torch_prover.compat import tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _absolute(readme: str, source: str) -> str:
    """``readme`` with each relative link (a file, or an anchor of the README itself)
    pointing at that file in the repository's main branch."""
    blob = source.rstrip("/") + "/blob/main/"

    def one(m: re.Match) -> str:
        target = m.group(1)
        if re.match(r"^[a-z]+:", target):
            return m.group(0)
        return "](" + blob + (target if not target.startswith("#") else "README.md" + target) + ")"
    header = ("<!-- Generated from README.md by tests/test_docs_links.py "
              "(TORCH_PROVER_UPDATE_DOCS=1): edit README.md. -->\n")
    return header + LINK.sub(one, readme)


def test_the_package_says_where_it_lives():
    """Source, Issues and Changelog URLs in the metadata, the Source one the base of the
    long description's links."""
    urls = _project()["urls"]
    for key in ("Source", "Issues", "Changelog"):
        assert re.match(r"^https://", urls.get(key, "")), key
    assert urls["Issues"].startswith(urls["Source"])
    assert urls["Changelog"].startswith(urls["Source"])


def test_the_long_description_links_resolve_off_the_repository():
    import os
    project = _project()
    assert project["readme"] == PYPI_README.name
    want = _absolute((ROOT / "README.md").read_text(encoding="utf-8"), project["urls"]["Source"])
    if os.environ.get("TORCH_PROVER_UPDATE_DOCS") == "1":
        PYPI_README.write_text(want, encoding="utf-8")
    assert PYPI_README.read_text(encoding="utf-8") == want, \
        "README.pypi.md is stale: rerun this test with TORCH_PROVER_UPDATE_DOCS=1"
    relative = [t for t in LINK.findall(want) if not re.match(r"^https://", t)]
    assert relative == []
