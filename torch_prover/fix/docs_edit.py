"""The docs a tag patch changes: docs/Changelog.md and docs/Operators.md edited as ONNX's
``onnx/defs/gen_doc.py`` would regenerate them from the patched sources, without a build.

gen_doc writes a formal parameter as ``<dt><tt>NAME</tt> (TAGS) : TYPE</dt>``, TAGS being
``optional`` or ``variadic[, heterogeneous]`` then ``differentiable`` or
``non-differentiable`` (``generate_formal_parameter_tags``; no parentheses when there is no
word). Changelog.md has one section per schema version (``### <a name="Op-V">``), and
Operators.md one per op, at its latest version (``### <a name="Op">``). A tag edit changes
exactly that word on the line of each parameter it reaches (``patch.expected_tables``' users
of the call: every version a shared generator declares), in each version's Changelog
section and, where that version is the op's latest, its Operators.md section; nothing else
of either file depends on a tag. Before an edit the line must name the parameter and carry
the tag the sources carry (``DocsMismatch``: the docs are not of these sources).
"""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import UsageError
from ..inputs import Bound, InputError, read_text
from ..vocab import Tag
from .locate import SourceTree
from .patch import CheckFailed
from .plan import Edit

FILES = ("Changelog.md", "Operators.md")
"""The files gen_doc writes for the default domain (and ai.onnx.preview*), in docs/."""
WORDS = {Tag.DIFF: "differentiable", Tag.NONDIFF: "non-differentiable"}
_LINE = re.compile(r"<dt><tt>(?P<name>[^<]*)</tt>(?: \((?P<tags>[^)]*)\))? : (?P<type>.*)</dt>")
_SINCE = re.compile(r"available since version (\d+) of ")

Change = dict[tuple[str, int], tuple[str | None, Tag | None, Tag]]
"""(io, index) -> (parameter name, tag before, tag after) of one schema version."""


class DocsMismatch(CheckFailed):
    """The docs do not read as gen_doc's of the sources: a section or parameter line is
    missing, names another parameter, or carries another tag (exit 1, nothing written)."""


def tag_changes(tree: SourceTree, edits: tuple[Edit, ...]) -> dict[tuple[str, str, int], Change]:
    """(op, domain, version) -> its parameters' changes, of every schema each edit's call
    declares (``SourceTree.users``: a shared generator's every user)."""
    out: dict[tuple[str, str, int], Change] = {}
    for e in edits:
        for b, d in tree.users(e.site):
            out.setdefault((b.op, b.domain, b.version), {})[(d.io, d.index)] = (d.name, d.tag,
                                                                                e.tag)
    return out


def docs_dir(given: str | None, root: Path) -> Path:
    """``--docs DIR``, else the checkout's own ``docs/``; UsageError (one line, before any
    work) when either file is not there."""
    where = Path(given) if given else Path(root) / "docs"
    what = "--docs" if given else f"--onnx-src {root}: its docs/ ({where})"
    missing = [n for n in FILES if not (where / n).is_file()]
    if missing:
        raise UsageError(f"{what}: no {' or '.join(missing)}; --pr-dir writes each PR's docs "
                         "from ONNX's generated docs of the same commit: give them with "
                         "--docs DIR")
    return where


def read_docs(where: Path) -> dict[str, str]:
    """name -> text of ``FILES`` (bounded reads; UsageError on an unreadable one)."""
    out = {}
    for name in FILES:
        try:
            out[name] = read_text(where / name, Bound.DOCS)
        except InputError as exc:
            raise UsageError(f"--docs: {exc}") from None
    return out


def anchor(op: str, domain: str) -> str:
    """gen_doc's ``format_name_with_domain``."""
    return f"{domain}.{op}" if domain else op


def _section(lines: list[str], head: str) -> tuple[int, int] | None:
    """(first, end) line numbers of the section whose heading starts with ``head``."""
    start = next((i for i, line in enumerate(lines) if line.startswith(head)), None)
    if start is None:
        return None
    end = next((i for i in range(start + 1, len(lines))
                if lines[i].startswith(("### ", "## ", "# "))), len(lines))
    return start, end


def _params(lines: list[str], first: int, end: int, io: str) -> list[int]:
    """Line numbers of the ``<dt>`` lines under ``#### Inputs`` / ``#### Outputs``."""
    title = "#### Inputs" if io == "input" else "#### Outputs"
    at = next((i for i in range(first, end) if lines[i].startswith(title)), None)
    if at is None:
        return []
    stop = next((i for i in range(at + 1, end) if lines[i].startswith("#### ")), end)
    return [i for i in range(at + 1, stop) if lines[i].startswith("<dt><tt>")]


def retagged(line: str, tag: Tag) -> str:
    """``line`` with its differentiability word replaced by ``tag``'s, the other words kept."""
    m = _LINE.fullmatch(line)
    words = [w for w in (m["tags"] or "").split(", ") if w and w not in WORDS.values()]
    words.append(WORDS[tag])
    return f"<dt><tt>{m['name']}</tt> ({', '.join(words)}) : {m['type']}</dt>"


def _tag_of(line: str) -> Tag | None:
    words = (_LINE.fullmatch(line)["tags"] or "").split(", ")
    return next((t for t, w in WORDS.items() if w in words), None)


def _edit(lines: list[str], where: str, span: tuple[int, int], change: Change) -> None:
    for (io, index), (name, before, after) in sorted(change.items()):
        rows = _params(lines, *span, io)
        if index >= len(rows):
            raise DocsMismatch(f"{where}: no {io} {index} ({name}); the docs are not "
                               "gen_doc's of these sources")
        line = lines[rows[index]]
        m = _LINE.fullmatch(line)
        if m is None or (name is not None and m["name"] != name):
            raise DocsMismatch(f"{where}: {io} {index} is not `{name}` ({line[:80]!r}); the "
                               "docs are not gen_doc's of these sources")
        if _tag_of(line) != (before if before in WORDS else None):
            raise DocsMismatch(f"{where}: {io} {index} ({name}) reads "
                               f"{_tag_of(line) or 'no tag'}, the sources {before or 'no tag'}; "
                               "the docs are not gen_doc's of these sources")
        lines[rows[index]] = retagged(line, after)


def edited_docs(docs: dict[str, str], changes: dict[tuple[str, str, int], Change]
                ) -> dict[str, str]:
    """The two files with ``changes`` ((op, domain, version) -> its parameters' changes)
    applied as gen_doc writes them; DocsMismatch when a line is not where or what it must be."""
    log = docs["Changelog.md"].split("\n")
    ops = docs["Operators.md"].split("\n")
    for (op, domain, version), change in sorted(changes.items()):
        name = anchor(op, domain)
        span = _section(log, f'### <a name="{name}-{version}"></a>')
        if span is None:
            raise DocsMismatch(f"Changelog.md: no section {name}-{version}; the docs are not "
                               "gen_doc's of these sources")
        _edit(log, f"Changelog.md {name}-{version}", span, change)
        span = _operators_section(ops, name)
        if span is None:
            raise DocsMismatch(f"Operators.md: no section {name}; the docs are not gen_doc's "
                               "of these sources")
        latest = next((int(m[1]) for i in range(*span) if (m := _SINCE.search(ops[i]))), None)
        if latest == version:
            _edit(ops, f"Operators.md {name}", span, change)
    return {"Changelog.md": "\n".join(log), "Operators.md": "\n".join(ops)}


def _operators_section(lines: list[str], name: str) -> tuple[int, int] | None:
    """An op's Operators.md section: its heading may carry a support-level prefix
    (``### <sup>experimental</sup> <a name=...``), so the anchor is searched in the line."""
    mark = f'<a name="{name}"></a><a name="{name.lower()}">'
    start = next((i for i, line in enumerate(lines) if line.startswith("### ") and mark in line),
                 None)
    if start is None:
        return None
    end = next((i for i in range(start + 1, len(lines))
                if lines[i].startswith(("### ", "## ", "# "))), len(lines))
    return start, end


def line_diff(path: str, old: str, new: str, context: int = 3) -> str:
    """A ``git apply``-able diff of two texts with the same lines but some replaced (a
    retagged line is one line): hunks built directly, as difflib's matcher is slow on files
    of 40,000 lines."""
    a, b = old.split("\n"), new.split("\n")
    assert len(a) == len(b)
    changed = [i for i in range(len(a)) if a[i] != b[i]]
    if not changed:
        return ""
    groups: list[list[int]] = [[changed[0]]]
    for i in changed[1:]:
        (groups[-1] if i - groups[-1][-1] <= 2 * context else groups.append([i]) or groups[-1]
         ).append(i)
    last = len(a) - (1 if a[-1] == "" else 0)   # lines of the file (a final newline ends one)
    out = [f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"]
    for g in groups:
        lo, hi = max(0, g[0] - context), min(last, g[-1] + context + 1)
        out.append(f"@@ -{lo + 1},{hi - lo} +{lo + 1},{hi - lo} @@\n")
        for i in range(lo, hi):
            end = "\n" if i + 1 < len(a) else "\n\\ No newline at end of file\n"
            out += [f" {a[i]}{end}"] if a[i] == b[i] else [f"-{a[i]}{end}", f"+{b[i]}{end}"]
    return "".join(out)
