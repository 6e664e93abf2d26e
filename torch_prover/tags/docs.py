"""``--tags-from FILE``: an Operators.md or a Changelog.md, told apart by content.

Why by content: a PR branch's file may be saved under any name (``Changelog-pr1234.md``),
and the two files need different readers (latest version only, or every version).
"""
from __future__ import annotations

from .changelog_md import ChangelogMd, is_changelog
from .markdown import DocsError, DocsTags, read_text
from .operators_md import MARKER, OperatorsMd, is_operators_md

__all__ = ["load", "load_text", "DocsError", "DocsTags"]


def load(path, domain: str | None = "") -> DocsTags:
    """The tags of ONNX docs file ``path``, which must document ops of ``domain`` ("" is
    ai.onnx; None: any domain, the caller says which it takes); a DocsError (one line,
    file:line) otherwise."""
    return load_text(path, read_text(path), domain)


def load_text(path, text: str, domain: str | None = "") -> DocsTags:
    """The tags of docs ``text`` read from ``path`` (a report carries the text it was judged
    against: ``merge`` and ``fix-tags`` read no other file). Newlines as ``load`` reads
    them (universal newlines)."""
    p = str(path)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.splitlines()
    if is_changelog(lines):
        return of_domain(ChangelogMd.from_text(p, text), domain)
    if is_operators_md(lines):
        return of_domain(OperatorsMd.from_text(p, text), domain)
    raise DocsError(f"{p}:1: neither an Operators.md (a '{MARKER}' heading) nor a Changelog.md "
                    "(a '## Version N of the default ONNX operator set' heading) in its first "
                    "lines")


def of_domain(doc: DocsTags, domain: str | None = "") -> DocsTags:
    """``doc``, which must document ops of ``domain`` (None: of some domain). gen_doc writes
    ``Changelog-ml.md`` and ``Operators-ml.md`` (the ai.onnx.ml domain alone) beside the
    default domain's files, in the same outline; taken for the other, as a base every op
    would be "new", as a tag source every case would have no tags."""
    if domain is None:
        if not doc.domains():
            raise DocsError(f"{doc.path}:1: documents no op")
        return doc
    if not doc.ops(domain):
        domains = ", ".join(d or "ai.onnx" for d in doc.domains()) or "none"
        if domain == "":
            raise DocsError(f"{doc.path}:1: documents no ai.onnx op (only {domains}): give "
                            "the docs of the default domain (docs/Changelog.md or "
                            "docs/Operators.md, not their -ml files)")
        raise DocsError(f"{doc.path}:1: documents no {domain} op (only {domains}): give "
                        f"the docs of {domain} (docs/Changelog-ml.md)")
    return doc
