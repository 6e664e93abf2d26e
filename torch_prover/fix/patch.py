"""The edits as a unified diff, and the check that the diff does exactly what was planned.

An edit sets (or adds) the differentiation-category argument of one call, in the file's own
clang-format layout: a call that fits in 120 columns stays on one line; one that does not
gets one argument per line, indented four past the line it starts on (how ONNX's sources
break ``.Input(`` calls); a call already broken keeps its layout and gains lines.
The check applies the diff with ``git apply`` to a copy of onnx/defs, re-reads every
schema's tags with the same reader and requires the tables to differ from the originals
by exactly the planned changes.
"""
from __future__ import annotations

import difflib
import shutil
import subprocess
from pathlib import Path

from ..errors import EXIT_FINDING, ProverError
from ..output.ownership import PATCH_HEAD
from ..output.scratch import scratch
from ..vocab import Tag
from .cpp_source import CppFile, Span
from .locate import (DEFAULTS, DEFS, TAG_ARG, TAG_TEXT, SourceTree, not_ours_to_read,
                     read_tree, tag_table)
from .plan import Edit

COLUMNS = 120
"""ONNX's .clang-format ColumnLimit."""


class CheckFailed(ProverError):
    """The diff does not apply, or changes something other than the planned tags: a finding
    about the sources (exit 1, nothing written), not bad usage."""

    exit_code = EXIT_FINDING
    prefix = "the patch failed its check, nothing written: "


def _replacement(f: CppFile, edit: Edit) -> tuple[int, int, str]:
    """(start, end, new text) of the characters of ``f.text`` the edit replaces."""
    open_k = edit.site.token + 1
    close_k = f.pairs[open_k]
    args = f.arguments(open_k)
    texts = [f.source(a) for a in args]
    new_tag = TAG_TEXT[edit.tag]
    if len(args) > TAG_ARG:
        texts[TAG_ARG] = new_tag
        added = []
    else:
        added = list(DEFAULTS[len(args) - 4:]) + [new_tag]
    text, toks = f.text, f.tokens
    if "\n" in text[toks[open_k].end:toks[close_k].start]:   # already one argument per line
        if len(args) > TAG_ARG:
            tag = args[TAG_ARG]
            return toks[tag.first].start, toks[tag.last].end, new_tag
        last = toks[args[-1].last].end
        line_start = text.rfind("\n", 0, toks[args[-1].first].start) + 1
        indent = text[line_start:toks[args[-1].first].start]
        indent = indent if not indent.strip() else " " * (len(indent) - len(indent.lstrip()))
        return last, last, "".join(f",\n{indent}{a}" for a in added)
    line_start = text.rfind("\n", 0, toks[edit.site.token].start) + 1
    line_end = text.find("\n", toks[close_k].end)
    line_end = len(text) if line_end < 0 else line_end
    head = text[line_start:toks[open_k].end]      # "        .Input("
    tail = text[toks[close_k].start:line_end]     # ")" and whatever follows on the line
    every = texts + added
    one_line = head + ", ".join(every) + tail
    if len(one_line) <= COLUMNS:
        return line_start, line_end, one_line
    indent = " " * (len(head) - len(head.lstrip()) + 4)
    return line_start, line_end, head + "\n" + ",\n".join(indent + a for a in every) + tail


def edited_texts(tree: SourceTree, edits: tuple[Edit, ...]) -> dict[str, tuple[str, str]]:
    """path -> (old text, new text) of every file the edits touch."""
    by_file: dict[str, list[Edit]] = {}
    for e in edits:
        by_file.setdefault(e.site.path, []).append(e)
    out = {}
    for path, mine in by_file.items():
        f = tree.files[path]
        text = f.text
        for start, end, new in sorted((_replacement(f, e) for e in mine), reverse=True):
            text = text[:start] + new + text[end:]
        out[path] = (f.text, text)
    return out


def unified_diff(texts: dict[str, tuple[str, str]]) -> str:
    """A ``git apply``-able diff, paths relative to the repository root."""
    chunks = []
    for path in sorted(texts):
        old, new = texts[path]
        lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                     f"a/{path}", f"b/{path}", n=3)
        body = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                       for line in lines)
        chunks.append(f"diff --git a/{path} b/{path}\n{body}")
    # a first line saying whose patch it is: a rerun replaces this file, and no other
    # (output/ownership.py); git apply and patch skip what precedes the first diff
    return f"{PATCH_HEAD}\n\n" + "".join(chunks) if chunks else ""


def expected_tables(tree: SourceTree, edits: tuple[Edit, ...]) -> dict:
    """Every block's tag table as it must read after the edits."""
    tables = {(b.op, b.domain, b.version): tag_table(b) for b in tree.blocks}
    for e in edits:
        for b, d in tree.users(e.site):
            tables[(b.op, b.domain, b.version)][(d.io, d.index)] = (d.name, e.tag)
    return tables


def check(tree: SourceTree, edits: tuple[Edit, ...], diff: str,
          docs: tuple[dict[str, str], dict[str, str]] | None = None) -> None:
    """Apply ``diff`` to a copy of onnx/defs and compare every tag table; CheckFailed if off.
    ``docs``: (the docs/ files before, as they must read after): the diff also carries them,
    and they are copied beside onnx/defs and compared byte for byte after it applies."""
    if not diff:
        return
    with scratch("fix") as tmp:   # a copy a kill -9 leaves is removed by the next run
        copy = Path(tmp) / "src"
        shutil.copytree(tree.root / DEFS, copy / DEFS, ignore=not_ours_to_read)
        for name, text in (docs[0] if docs else {}).items():
            (copy / "docs").mkdir(exist_ok=True)
            (copy / "docs" / name).write_text(text, encoding="utf-8", newline="")
        (Path(tmp) / "fix.patch").write_text(diff, encoding="utf-8")
        for cmd in (["git", "init", "-q"], ["git", "apply", "--check", "../fix.patch"],
                    ["git", "apply", "../fix.patch"]):
            run = subprocess.run(cmd, cwd=copy, capture_output=True, text=True)
            if run.returncode:
                first = (run.stderr.strip().splitlines() or ["no message"])[0]
                raise CheckFailed(f"`{' '.join(cmd)}` failed on a copy of the sources: {first}")
        for name, text in (docs[1] if docs else {}).items():
            with open(copy / "docs" / name, encoding="utf-8", newline="") as f:
                same = f.read() == text
            if not same:
                raise CheckFailed(f"docs/{name} after the patch is not the docs planned")
        after = read_tree(copy)
        new_errors = [e for e in after.errors if e not in tree.errors]
        if new_errors:   # the files the original could not read are skipped in both
            raise CheckFailed(f"the patched sources no longer parse: {new_errors[0]}")
        got = {(b.op, b.domain, b.version): tag_table(b) for b in after.blocks}
        want = expected_tables(tree, edits)
        if set(got) != set(want):
            diff_keys = sorted(set(got) ^ set(want))[:3]
            raise CheckFailed(f"the patched sources have other schema blocks: {diff_keys}")
        for key in sorted(want):
            if got[key] != want[key]:
                changed = sorted(k for k in set(got[key]) | set(want[key])
                                 if got[key].get(k) != want[key].get(k))
                op, _, version = key
                io, index = changed[0]
                raise CheckFailed(f"{op}-{version} {io} {index} reads "
                                  f"{_shown(got[key].get(changed[0]))} after the patch, "
                                  f"expected {_shown(want[key].get(changed[0]))}")


def _shown(entry: tuple[str | None, Tag | None] | None) -> str:
    if entry is None:
        return "no declaration"
    return f"{entry[0] or '(name is an expression)'}: {entry[1] or 'an expression'}"


def arg_span(f: CppFile, edit: Edit, i: int) -> Span:
    """Argument ``i`` of the call the edit is about (used by tests and the PR text)."""
    return f.arguments(edit.site.token + 1)[i]
