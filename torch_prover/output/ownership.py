"""Whether an existing file is one torch-prover wrote: the third part of the output rule
(docs/safety.md; ``preflight.outputs_checked``): an output path is never a file this
command did not create.

Ownership by manifest, not by shape. A file's first bytes prove nothing -- your notes can
begin with a report's title -- so every single-file output (a report in any format, its
details file, ``--junit``, ``script -o``, fix-tags' patch, PR text and evidence file, PR
mode's comment) is listed, when it is written, in its directory's manifest
(``.torch-prover-outputs.json``: each name with what it holds and the sha256 of its bytes),
committed in the same commit as the file (``output/commit.py``). An existing file is ours
to replace only when that manifest lists it as holding what this command writes there,
with the digest it has now; an empty file holds nothing to lose, so it may be replaced too.
Anything else -- your notes, a report you edited, a file an older torch-prover wrote
before the manifest -- is refused. node-tests' tree is owned the same way, by its own
manifest (``node-tests.json``: ``listed``).

The first lines each output begins with (``PATCH_HEAD``...) are still defined here, for
their writers and for ``output/leftovers.py``, which recognises an older torch-prover's
half-written temporaries by them.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from ..compat import StrEnum

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

OUTPUTS = ".torch-prover-outputs.json"
"""The manifest of the single-file outputs torch-prover wrote in a directory."""
OUTPUTS_FORMAT = 1


class Holds(StrEnum):
    """What a command writes to an output file (its words name it in a refusal)."""

    REPORT = "a verify-all or merge report"
    SCRIPT = "a proof script"
    PATCH = "a fix-tags patch"
    PR_TEXT = "a fix-tags PR text"
    PR_EVIDENCE = "a fix-tags evidence file"
    PR_COMMENT = "a PR-mode comment (verify-all --changed-from)"
    JUNIT = "a JUnit XML file"
    STEP_SUMMARY = "GitHub's step summary"   # appended to, never replaced: always ours to add to
    CASE_SCAFFOLD = "a new-case scaffold"     # a new file only: never replaced

    @property
    def key(self) -> str:
        """Its word in the manifest (``pr-text``): stable, unlike the words above."""
        return self.name.lower().replace("_", "-")

    @property
    def listed(self) -> bool:
        """Written whole and listed in the manifest (the step summary is appended to, the
        scaffold only ever created)."""
        return self not in (Holds.STEP_SUMMARY, Holds.CASE_SCAFFOLD)


def read_outputs(directory: Path) -> dict[str, dict[str, str]] | None:
    """The manifest of ``directory``, ``{name: {"holds": key, "sha256": digest}}``: empty
    when there is none, None when ``OUTPUTS`` there is not one torch-prover wrote (not a
    regular file, not JSON, not its shipped schema's ``outputs`` document)."""
    from ..inputs import Bound, InputError, read_bytes
    from .json_schema import first_problem
    path = Path(directory) / OUTPUTS
    if not os.path.lexists(path):
        return {}
    try:
        doc = json.loads(read_bytes(path, Bound.RECORD, follow=False).decode("utf-8"))
    except (InputError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or doc.get("kind") != "outputs" or first_problem(doc, "outputs"):
        return None
    return doc["files"]


def outputs_text(files: dict[str, dict[str, str]]) -> str:
    """The manifest's text for ``files`` (``read_outputs``' shape)."""
    doc = {"kind": "outputs", "format": OUTPUTS_FORMAT,
           "files": {n: files[n] for n in sorted(files)}}
    return json.dumps(doc, indent=2) + "\n"


def entry(holds: Holds, written: Path) -> dict[str, Any]:
    """The manifest's entry of a file holding ``holds``, as ``written`` (its staged bytes)."""
    return {"holds": holds.key, "sha256": digest(written)}


def written_by_us(path: Path, holds: Holds) -> bool:
    """``path`` (an existing file) is empty, or its directory's manifest lists it as holding
    ``holds`` with the digest it has now (the module docstring)."""
    if holds is Holds.STEP_SUMMARY:   # GitHub's file, which a step appends to
        return True
    if holds is Holds.CASE_SCAFFOLD:  # a catalogue module someone is writing
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    if st.st_size == 0:
        return True
    listed_as = (read_outputs(Path(path).parent) or {}).get(Path(path).name)
    return isinstance(listed_as, dict) and listed_as == entry(holds, Path(path))


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
