"""GitHub's limit on a pull request's or a comment's body, and the one way every Markdown
document the tool writes keeps to it (pure).

A document within ``PR_BODY_LIMIT`` characters is written whole. A longer one becomes a
*body* made of ``Block``s -- lines always kept, then as many of a block's rows as the room
left allows, in the order the blocks come (what matters most first), with a line saying
how many rows were left out -- and a *details* document that holds everything. The body
names the details file, which the command writes beside its output (``details_path``).
``fix-tags`` (its PR text and evidence file) and the batch reports (``verify-all``,
``merge``, ``report``) split through ``fit``; ``prove`` and ``run`` go through it too, so
no Markdown document the tool prints or writes is longer than the limit without saying so.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

PR_BODY_LIMIT = 65536
"""GitHub's limit on a pull request's or a comment's body, in characters."""

COMMENT_MARKER = "<!-- torch-prover -->"
"""The first line of the one torch-prover PR comment: the comment workflow puts it before
the comment (``ci.pr_comment``) to find and update the comment again."""

COMMENT_LIMIT = PR_BODY_LIMIT - len(COMMENT_MARKER) - 1
"""The room a PR comment has: GitHub's limit less the marker's line (``gate.comment``)."""


@dataclass(frozen=True)
class Block:
    """Part of a body that must fit: ``lines`` are always kept; then ``rows``, as many as
    the room allows, then ``more`` (``{n}``: how many rows were left out, ``{details}``:
    the details file's name) if any was; then ``after``."""

    lines: tuple[str, ...]
    rows: tuple[str, ...] = ()
    more: str = "... and {n} more rows in `{details}`."
    after: tuple[str, ...] = ()


@dataclass(frozen=True)
class Split:
    """What a Markdown document becomes: its body, and the details that go beside it
    (None when the whole document is the body)."""

    body: str
    details: str | None
    full_length: int

    @property
    def is_split(self) -> bool:
        return self.details is not None


def fit(full: str, summary: Sequence[Block], details: str, details_name: str,
        limit: int = PR_BODY_LIMIT) -> Split:
    """``full`` when it fits in ``limit`` characters; otherwise the body ``summary`` makes
    within ``limit`` (its rows kept in order while they fit) and ``details`` beside it."""
    if len(full) <= limit:
        return Split(full, None, len(full))
    fixed = [list(b.lines) + list(b.after) for b in summary]
    mores = [b.more.format(n=len(b.rows), details=details_name) if b.rows else None
             for b in summary]
    used = sum(len(line) + 1 for lines in fixed for line in lines) + sum(
        len(m) + 1 for m in mores if m)
    if used > limit:
        raise ValueError(f"the fixed lines of a Markdown summary take {used} characters, "
                         f"over the {limit} a body may hold")
    room = limit - used
    out: list[str] = []
    for block in summary:
        out += block.lines
        kept = 0
        for row in block.rows:
            if len(row) + 1 > room:
                break
            out.append(row)
            room -= len(row) + 1
            kept += 1
        if kept < len(block.rows):
            out.append(block.more.format(n=len(block.rows) - kept, details=details_name))
        out += block.after
    body = "\n".join(out)
    assert len(body) <= limit, (len(body), limit)
    return Split(body, details, len(full))


def limit_words(limit: int = PR_BODY_LIMIT) -> str:
    """How the limit is named wherever a body says why it was split."""
    return f"GitHub's {limit:,}-character limit for a pull request's or a comment's body"


def details_path(out: Path, tag: str = "details") -> Path:
    """Where the details of ``out`` go: beside it, ``<stem>-<tag>.md`` (``report.md`` ->
    ``report-details.md``; fix-tags: ``fix.patch`` -> ``fix-evidence.md``)."""
    return out.with_name(f"{out.stem}-{tag}.md")
