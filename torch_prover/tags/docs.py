"""``--tags-from FILE``: an Operators.md or a Changelog.md, told apart by content.

Why by content: a PR branch's file may be saved under any name (``Changelog-pr1234.md``),
and the two files need different readers (latest version only, or every version).
"""
from __future__ import annotations

from .changelog_md import ChangelogMd, is_changelog
from .markdown import DocsError, DocsTags, read_text
from .operators_md import MARKER, OperatorsMd, is_operators_md

__all__ = ["load", "load_text", "DocsError", "DocsTags"]


def load(path) -> DocsTags:
    """The tags of ONNX docs file ``path``; a DocsError (one line, file:line) otherwise."""
    return load_text(path, read_text(path))


def load_text(path, text: str) -> DocsTags:
    """The tags of docs ``text`` read from ``path`` (a report carries the text it was judged
    against: ``merge`` and ``fix-tags`` read no other file). Newlines as ``load`` reads
    them (universal newlines)."""
    p = str(path)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.splitlines()
    if is_changelog(lines):
        return _of_ai_onnx(ChangelogMd.from_text(p, text))
    if is_operators_md(lines):
        return _of_ai_onnx(OperatorsMd.from_text(p, text))
    raise DocsError(f"{p}:1: neither an Operators.md (a '{MARKER}' heading) nor a Changelog.md "
                    "(a '## Version N of the default ONNX operator set' heading) in its first "
                    "lines")


def _of_ai_onnx(doc: DocsTags) -> DocsTags:
    """``doc``, which must document ai.onnx ops: the tags under test are ai.onnx's. gen_doc
    writes ``Changelog-ml.md`` and ``Operators-ml.md`` (the ai.onnx.ml domain alone) beside
    the default domain's files, in the same outline; as a base every ai.onnx op would be
    "new", as a tag source every case would have no tags."""
    if not doc.ops(""):
        domains = ", ".join(doc.domains())
        raise DocsError(f"{doc.path}:1: documents no ai.onnx op (only {domains}): give the "
                        "docs of the default domain (docs/Changelog.md or docs/Operators.md, "
                        "not their -ml files)")
    return doc
