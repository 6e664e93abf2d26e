"""Whether an existing file is one torch-prover wrote, by what it holds: the third part of
the output rule (docs/safety.md; ``preflight.outputs_checked``): an output path is never a
file this command did not create.

Each kind of output file starts in a way no file of someone else's plausibly does, and the
reader looks only at its first bytes (``HEAD_BYTES``): a report in any of its four
formats (a JSON ``batch-report``, the text report's op table, the Markdown report's title,
the HTML report's page title), a generated proof script's docstring, and fix-tags' patch,
PR text and evidence file (each led by a line this module defines and their writers
use). An empty file holds nothing to lose, so it may be replaced too. Anything else --
your notes, an ONNX checkout's README, a report of another tool -- is refused.
"""
from __future__ import annotations

import re
from ..compat import StrEnum
from pathlib import Path

HEAD_BYTES = 4096

PATCH_HEAD = "# torch-prover fix-tags: differentiability tag edits for onnx/defs"
"""The patch's first line (``git apply`` and ``patch`` skip text before the first diff)."""
PR_TEXT_HEAD = "# Differentiability tags from torch-prover's evidence"
PR_EVIDENCE_HEAD = "# Evidence for the tag edits"
MARKDOWN_REPORT_HEAD = "# ONNX differentiability tags, checked by torch_prover"
HTML_REPORT_TITLE = "<title>torch_prover report</title>"
SCRIPT_HEAD = '"""Differentiability proof for ONNX '

PR_COMMENT_HEADS = ("## torch-prover: the differentiability tags this PR changes\n",
                    "PR gate: ")
"""PR mode's comment (gate/comment.py), Markdown and text, by their first line."""

_TEXT_REPORT = re.compile(r"op +status +reason *\n")
_JSON_PR_GATE = re.compile(r'\{\s*"kind":\s*"pr-gate"')
_JUNIT = re.compile(r"\A<\?xml[^>]*\?>\s*<testsuites\b[^>]*>\s*<testsuite\b[^>]*"
                    r"\bname=\"torch-prover[ \"]")
_JSON_REPORT = re.compile(r'\{\s*"kind":\s*"batch-report"')


class Holds(StrEnum):
    """What a command writes to an output file (its words name it in a refusal)."""

    REPORT = "a verify-all or merge report"
    SCRIPT = "a proof script torch-prover generated"
    PATCH = "a fix-tags patch"
    PR_TEXT = "a fix-tags PR text"
    PR_EVIDENCE = "a fix-tags evidence file"
    PR_COMMENT = "a PR-mode comment (verify-all --changed-from)"
    JUNIT = "a JUnit XML file"
    STEP_SUMMARY = "GitHub's step summary"   # appended to, never replaced: always ours to add to
    CASE_SCAFFOLD = "a new-case scaffold"     # a new file only: never replaced


def _is(head: str, holds: Holds) -> bool:
    if holds is Holds.STEP_SUMMARY:   # GitHub's file, which a step appends to
        return True
    if holds is Holds.CASE_SCAFFOLD:  # a catalogue module someone is writing
        return False
    if holds is Holds.JUNIT:
        return bool(_JUNIT.match(head))
    if holds is Holds.PR_COMMENT:
        return bool(_JSON_PR_GATE.match(head)) or head.startswith(PR_COMMENT_HEADS)
    if holds is Holds.REPORT:
        return bool(_JSON_REPORT.match(head) or _TEXT_REPORT.match(head)
                    or head.startswith(MARKDOWN_REPORT_HEAD + "\n")
                    or (head.startswith("<!DOCTYPE html>") and HTML_REPORT_TITLE in head))
    first = {Holds.SCRIPT: SCRIPT_HEAD, Holds.PATCH: PATCH_HEAD + "\n",
             Holds.PR_TEXT: PR_TEXT_HEAD + "\n", Holds.PR_EVIDENCE: PR_EVIDENCE_HEAD + "\n"}
    return head.startswith(first[holds])


def written_by_us(path: Path, holds: Holds) -> bool:
    """``path`` (an existing regular file) is empty or holds what torch-prover writes as
    ``holds``; a file that cannot be read is not provably ours."""
    try:
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError:
        return False
    return not head or _is(head.decode("utf-8", "replace"), holds)


def digest(path: Path) -> str | None:
    """sha256 of a file, or of a directory tree (every entry's relative path, and each
    regular file's bytes, in sorted order); None when it holds anything but directories and
    regular files (a symlink, a FIFO) or cannot be read: nothing a manifest could list."""
    import hashlib
    import os
    import stat as st
    h = hashlib.sha256()
    try:
        mode = os.lstat(path).st_mode
        if st.S_ISREG(mode):
            return hashlib.sha256(Path(path).read_bytes()).hexdigest()
        if not st.S_ISDIR(mode):
            return None
        stack = [Path(path)]
        while stack:
            d = stack.pop()
            for e in sorted(os.scandir(d), key=lambda e: e.name):
                rel = Path(e.path).relative_to(path).as_posix()
                mode = e.stat(follow_symlinks=False).st_mode
                if st.S_ISDIR(mode):
                    h.update(f"{rel}/\n".encode("utf-8", "surrogateescape"))
                    stack.append(Path(e.path))
                elif st.S_ISREG(mode):
                    h.update(f"{rel}\t{hashlib.sha256(Path(e.path).read_bytes()).hexdigest()}\n"
                             .encode("utf-8", "surrogateescape"))
                else:
                    return None
    except OSError:
        return None
    return h.hexdigest()


def listed(path: Path, manifest: dict[str, str] | None) -> bool:
    """Ownership by manifest, not by shape (docs/safety.md): ``path`` is ours to replace or
    remove only when the previous run's manifest (``{name: digest}``, written last, in the
    same commit) lists its name with the digest it has now. Shape proves nothing: ONNX's own
    backend-test data has node-tests' layout."""
    want = (manifest or {}).get(Path(path).name)
    return isinstance(want, str) and digest(path) == want
