"""Schema tags read from ONNX's generated ``docs/Operators.md`` instead of onnx.defs.

Why: a PR that changes a differentiability tag changes ``onnx/defs/*.cc`` *and* the
generated docs. Reading the docs lets ``verify-all`` check a PR branch's tags without
building ONNX from that branch. The result is the same ``SchemaTags`` shape onnx.defs
gives, so ``prove_case(case, tags=doc.tags, tag_source=doc.source)`` works.

The file's outline, which this parser relies on and checks (anything else is a
``DocsError`` naming the file and line; an op section's body is markdown.OpSection's):

* a ``## Operator Schemas`` heading, then per-domain index tables (``### ai.onnx
  (default)``, ``### ai.onnx.preview.training`` ...) listing every op with a link to
  its latest ``Changelog.md#Op-N`` version;
* per-domain body sections (``## ai.onnx (default)``, ``## ai.onnx.ml`` ...), each op a
  ``### <a name="Op"></a>...**Op**`` heading (non-default domains prefix the name:
  ``ai.onnx.preview.training.Adam``).

Operators.md documents only the latest version of each op, so ``tags(op, opset)``
returns that version whatever ``opset`` is; ``since_version`` says which it is.
Changelog.md (changelog_md.py) has every version.
"""
from __future__ import annotations

import re

from .markdown import (DocsError, DocsTags, MissingFromDocs, OpSection, norm_domain, strip_domain,
                       walk, check_whole)

__all__ = ["OperatorsMd", "OperatorsMdError", "MissingFromDocs", "MARKER", "is_operators_md"]

OperatorsMdError = DocsError
"""The name callers knew before Changelog.md was read too: one error class for both."""

MARKER = "## Operator Schemas"
_HEADING_RE = re.compile(r'^### (?:<sub>\w+</sub> )?<a name="([^"]+)"></a>.*\*\*([^*]+)\*\*(.*)$')
_INDEX_ROW_RE = re.compile(r'^\|(?:<sub>\w+</sub> )?<a href="#([^"]+)">[^<]*</a>[^|]*\|'
                           r'<a href="Changelog(?:-ml)?\.md#[^"]*-(\d+)">')


def is_operators_md(lines: list[str]) -> bool:
    """The heading gen_doc writes at the top of Operators.md."""
    return any(ln.strip() == MARKER for ln in lines[:20])


class _Parser:
    """One pass over the unfenced lines: index tables, then domain and op sections."""

    def __init__(self, path: str, text: str):
        self.path, self.text, self.lines = path, text, text.splitlines()
        self.sections: dict[tuple[str, str], OpSection] = {}
        self.index: dict[tuple[str, str], tuple[int, int]] = {}  # -> (line, latest version)
        self.body_domain: str | None = None   # None while still in the index tables
        self.index_domain = ""
        self.sec: OpSection | None = None

    def fail(self, line: int, why: str) -> DocsError:
        return DocsError(f"{self.path}:{line}: {why}")

    def parse(self) -> dict[tuple[str, str], OpSection]:
        if not is_operators_md(self.lines):
            raise self.fail(1, f"not an Operators.md: no '{MARKER}' heading in the first 20 lines")
        walk(self.path, self.lines, self._step, lambda: self.sec)
        self._end(len(self.lines))
        check_whole(self.path, self.text)
        self._check_complete()
        return self.sections

    def _step(self, no: int, line: str) -> None:
        if line.startswith("## ") and line != MARKER:
            self._end(no)
            self.body_domain = norm_domain(line[3:].split(" (")[0].strip())
        elif line.startswith("### "):
            if self.body_domain is None:
                self.index_domain = norm_domain(line[4:].split(" (")[0].strip())
                return
            self._end(no)
            self.sec = self._section(no, line, self.body_domain)
        elif self.body_domain is None:
            m = _INDEX_ROW_RE.match(line)
            if m:
                name = strip_domain(m.group(1), self.index_domain)
                self.index[(self.index_domain, name)] = (no, int(m.group(2)))
        elif self.sec is not None:
            self.sec.feed(no, line)
        elif line.startswith("#"):
            raise self.fail(no, f"unexpected heading {line[:60]!r} before the first op of its "
                                "domain")

    def _end(self, no: int) -> None:
        sec, self.sec = self.sec, None
        if sec is not None:
            sec.finish(no)
            if sec.since_version is None:   # "No versioning maintained for experimental ops."
                sec.since_version = self.index.get((sec.domain, sec.name), (0, 1))[1]

    def _section(self, no: int, line: str, domain: str) -> OpSection:
        m = _HEADING_RE.match(line)
        if not m:
            raise self.fail(no, f"unreadable op heading {line[:80]!r}")
        name = strip_domain(m.group(2).strip(), domain)
        if (domain, name) in self.sections:
            raise self.fail(no, f"{name}: documented twice (first at line "
                                f"{self.sections[(domain, name)].line})")
        sec = OpSection(self.path, domain, name, no, deprecated="(deprecated)" in m.group(3))
        self.sections[(domain, name)] = sec
        return sec

    def _check_complete(self) -> None:
        """Truncation shows as an index entry without a section, or a section cut short."""
        if not self.sections:
            raise self.fail(len(self.lines), "not an Operators.md: no operator sections")
        for key, (no, _) in sorted(self.index.items(), key=lambda kv: kv[1][0]):
            if key not in self.sections:
                raise self.fail(no, f"{key[1]}: listed in the index but has no section "
                                    f"(the file ends at line {len(self.lines)}: truncated?)")


class OperatorsMd(DocsTags):
    """The tags documented in one Operators.md file (parsed once, eagerly): the latest
    version of each op, whatever the opset asked for."""

    kind, a_kind = "Operators.md", "an Operators.md"

    @classmethod
    def from_text(cls, path: str, text: str) -> "OperatorsMd":
        sections = _Parser(path, text).parse()
        return cls(path, {key: [sec] for key, sec in sections.items()}, text)
