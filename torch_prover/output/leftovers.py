"""The temporaries an older torch-prover left beside a single-file output, swept when it
next writes that output (docs/safety.md, "What torch-prover writes and deletes").

Before outputs were committed through a scratch directory (``output/commit.py``), a file
was written as ``.NAME.torch-prover-XXXXXXXX`` beside ``NAME`` (``tempfile.mkstemp``'s
eight characters from ``[a-z0-9_]``) and renamed; a ``kill -9`` before the rename left the
temporary for good. Such a file is removed only when all of these prove it is one:

- its name is exactly that pattern for the ``NAME`` being written;
- it is a regular file (not a symlink) owned by this user;
- what it holds is what torch-prover writes as ``NAME``: empty (killed before its first
  write), or beginning as that output begins (``begins_as``: a report's title, a patch's
  first line, a node-tests manifest's kind...).

Anything else -- a file of that name holding your text, a directory, a symlink -- is left
alone. The names carry no process, so a temporary of an older torch-prover running at
this very moment could be taken; that version is gone from this tree, and its rename
would then fail loudly, not silently.
"""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Callable

from ..inputs import Bound, InputError, read_bytes
from .ownership import (HTML_REPORT_TITLE, MARKDOWN_REPORT_HEAD, PATCH_HEAD,
                        PR_COMMENT_HEADS, PR_EVIDENCE_HEAD, PR_TEXT_HEAD, SCRIPT_HEAD, Holds)

HEAD_CHARS = 4096
"""How much of a temporary is looked at: every output's mark is in its first lines."""

_TEXT_REPORT = re.compile(r"op +status +reason *\n")
_JUNIT = re.compile(r"\A<\?xml[^>]*\?>\s*<testsuites\b[^>]*>\s*<testsuite\b[^>]*"
                    r"\bname=\"torch-prover[ \"]")

Recognised = Callable[[str], bool]
"""Whether a temporary's first characters are what torch-prover writes as that file."""


def json_document(first_key: str, value: str) -> Recognised:
    """A JSON document as ``evidence.dumps`` writes it, whose first field is ``first_key``
    with the string ``value`` (``"kind": "node-tests"``) or the number ``value``."""
    shown = f'"{value}"' if not value.isdigit() else value
    pattern = re.compile(rf'\A\{{\s*"{re.escape(first_key)}":\s*{re.escape(shown)}[,\s]')
    return lambda head: bool(pattern.match(head))


def begins_as(head: str, holds: Holds) -> bool:
    """``head`` begins as torch-prover writes an output holding ``holds``."""
    if holds is Holds.JUNIT:
        return bool(_JUNIT.match(head))
    if holds is Holds.PR_COMMENT:
        return json_document("kind", "pr-gate")(head) or head.startswith(PR_COMMENT_HEADS)
    if holds is Holds.REPORT:
        return bool(json_document("kind", "batch-report")(head)
                    or _TEXT_REPORT.match(head)
                    or head.startswith(MARKDOWN_REPORT_HEAD + "\n")
                    or (head.startswith("<!DOCTYPE html>") and HTML_REPORT_TITLE in head))
    first = {Holds.SCRIPT: SCRIPT_HEAD, Holds.PATCH: PATCH_HEAD + "\n",
             Holds.PR_TEXT: PR_TEXT_HEAD + "\n", Holds.PR_EVIDENCE: PR_EVIDENCE_HEAD + "\n"}
    return holds in first and head.startswith(first[holds])


def temporary_name(name: str) -> re.Pattern[str]:
    """The names an older torch-prover gave the temporary of ``name``."""
    return re.compile(rf"\A\.{re.escape(name)}\.torch-prover-[a-z0-9_]{{8}}\Z")


def sweep_output(path: str | os.PathLike, holds: Holds) -> list[Path]:
    """``sweep`` for an output the output rule guards (``preflight.outputs_checked``)."""
    return sweep(path, lambda head: begins_as(head, holds))


def sweep(path: str | os.PathLike, recognised: Recognised) -> list[Path]:
    """Remove the provable leftovers of ``path`` (the module docstring), those whose first
    characters are ``recognised``; returns them."""
    path = Path(path)
    pattern, uid, removed = temporary_name(path.name), os.getuid(), []
    try:
        entries = [e for e in os.scandir(path.parent) if pattern.match(e.name)]
    except OSError:   # no directory yet, or one we cannot list: nothing of ours in it
        return []
    for e in entries:
        try:
            st = os.lstat(e.path)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != uid:
                continue
            head = read_bytes(e.path, Bound.REPORT, follow=False, head=HEAD_CHARS)
        except (OSError, InputError):
            continue
        if head and not recognised(head.decode("utf-8", "replace")):
            continue
        try:
            os.unlink(e.path)
        except OSError:
            continue
        removed.append(Path(e.path))
    return removed
