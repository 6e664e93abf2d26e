"""Schema tags of every version of every op, read from ONNX's generated ``docs/Changelog.md``.

Why: Operators.md holds only the latest version of each op, so it cannot check a case
exported at an older opset, nor show a tag's history (ScatterElements' ``updates``
untagged at version 11, differentiable from 13). Changelog.md has every schema version
with the tags it carries; ``tags(op, opset)`` gives the version in force at ``opset``
-- the greatest version <= opset, as ``onnx.defs.get_schema(op, opset)`` does.

The file's outline, which this parser relies on and checks (anything else is a
``DocsError`` naming the file and line; an op section's body is markdown.OpSection's):

* ``## Operator Changelog`` and a preamble;
* per-domain parts: ``# ai.onnx (default)``, ``# ai.onnx.preview.training`` ...;
* in each, ``## Version N of the default ONNX operator set`` (``... of the
  'ai.onnx.preview' operator set``) sections listing the op versions introduced at N:
  ``### <a name="Clip-11"></a>**Clip-11**</a>`` (non-default domains prefix the name:
  ``ai.onnx.preview.training.Adam-1``; a deprecation adds `` (deprecated)``).

Each op heading's N must equal its ``## Version`` section's and its ``#### Version``
line's. A file cut inside a line is truncated (markdown.check_whole); one cut exactly at a
line break between two op sections cannot be told from a shorter Changelog (it has no
index of ops, unlike Operators.md).
"""
from __future__ import annotations

import re

from .markdown import (DocsError, DocsTags, MissingFromDocs, OpSection, norm_domain, strip_domain,
                       walk, check_whole)
from .schema import SchemaTags

__all__ = ["ChangelogMd", "is_changelog"]

_VERSION_SET_RE = re.compile(r"^## Version (\d+) of the (?:default ONNX|'([\w.]+)') operator set$")
_HEADING_RE = re.compile(r'^### <a name="([\w.]+)-(\d+)"></a>\*\*([\w.]+)-(\d+)\*\*'
                         r'( \(deprecated\))?</a>$')
_DOMAIN_RE = re.compile(r"^# ([\w.]+)(?: \(default\))?$")


def is_changelog(lines: list[str]) -> bool:
    """Changelog.md's content: a ``## Version N of the ... operator set`` section early on
    (the first is at line 12 in every Changelog.md since tags exist)."""
    return any(_VERSION_SET_RE.match(ln.rstrip()) for ln in lines[:40])


class _Parser:
    """One pass over the unfenced lines: domain parts, version sections, op sections."""

    def __init__(self, path: str, text: str):
        self.path, self.text, self.lines = path, text, text.splitlines()
        self.versions: dict[tuple[str, str], list[OpSection]] = {}
        self.heading_version = 0   # N of the open op section's heading
        self.domain: str | None = None
        self.opset: int | None = None
        self.sec: OpSection | None = None

    def fail(self, line: int, why: str) -> DocsError:
        return DocsError(f"{self.path}:{line}: {why}")

    def parse(self) -> dict[tuple[str, str], list[OpSection]]:
        if not is_changelog(self.lines):
            raise self.fail(1, "not a Changelog.md: no '## Version N of the ... operator set' "
                               "heading in the first 40 lines")
        walk(self.path, self.lines, self._step, lambda: self.sec)
        self._end(len(self.lines))
        if not self.versions:
            raise self.fail(len(self.lines), "not a Changelog.md: no op sections")
        check_whole(self.path, self.text)
        return self.versions

    def _step(self, no: int, line: str) -> None:
        if line.startswith("# "):
            self._end(no)
            m = _DOMAIN_RE.match(line)
            if not m:
                raise self.fail(no, f"unreadable domain heading {line[:60]!r}")
            self.domain, self.opset = norm_domain(m.group(1)), None
        elif line.startswith("## ") and self.domain is not None:
            self._end(no)
            self.opset = self._opset(no, line, self.domain)
        elif line.startswith("### "):
            self._end(no)
            if self.opset is None or self.domain is None:
                raise self.fail(no, f"op heading outside a '## Version N' section {line[:60]!r}")
            self.sec = self._section(no, line, self.domain, self.opset)
        elif self.sec is not None:
            self.sec.feed(no, line)
        elif line.startswith("#") and self.domain is not None:
            raise self.fail(no, f"unexpected heading {line[:60]!r}")

    def _opset(self, no: int, line: str, domain: str) -> int:
        m = _VERSION_SET_RE.match(line)
        if not m:
            raise self.fail(no, f"unreadable version heading {line[:60]!r}")
        if norm_domain(m.group(2) or "") != domain:
            raise self.fail(no, f"version heading of domain {m.group(2) or 'ai.onnx'!r} inside "
                                f"the part of domain {domain or 'ai.onnx'!r}")
        return int(m.group(1))

    def _section(self, no: int, line: str, domain: str, opset: int) -> OpSection:
        m = _HEADING_RE.match(line)
        if not m or m.group(1, 2) != m.group(3, 4):
            raise self.fail(no, f"unreadable op heading {line[:80]!r} (expected "
                                '### <a name="Op-N"></a>**Op-N**</a>)')
        name, version = strip_domain(m.group(1), domain), int(m.group(2))
        if version != opset:
            raise self.fail(no, f"{name}: version {version} under '## Version {opset}'")
        history = self.versions.setdefault((domain, name), [])
        if history and history[-1].since_version >= version:
            raise self.fail(no, f"{name}: version {version} after version "
                                f"{history[-1].since_version} (line {history[-1].line})")
        sec = OpSection(self.path, domain, name, no, deprecated=bool(m.group(5)))
        self.heading_version = version
        history.append(sec)
        return sec

    def _end(self, no: int) -> None:
        sec, self.sec = self.sec, None
        if sec is None:
            return
        sec.finish(no)
        heading = self.heading_version
        if sec.since_version is None:   # "No versioning maintained for experimental ops."
            sec.since_version = heading
        elif sec.since_version != heading:
            raise sec.fail(sec.line, f"heading says version {heading}, its '#### Version' "
                                     f"says {sec.since_version}")


class ChangelogMd(DocsTags):
    """Every documented version of every op; ``tags(op, opset)`` is the one in force."""

    kind, a_kind = "Changelog.md", "a Changelog.md"

    @classmethod
    def from_text(cls, path: str, text: str) -> "ChangelogMd":
        return cls(path, _Parser(path, text).parse(), text)

    def history(self, op: str, domain: str = "") -> list[int]:
        """The documented versions of ``op``, oldest first."""
        return [int(s.since_version) for s in self._sections(op, domain)]

    def section(self, op: str, opset: int | None, domain: str = "") -> OpSection:
        """The greatest version <= ``opset`` (the latest when None)."""
        secs = self._sections(op, domain)
        if opset is None:
            return secs[-1]
        in_force = [s for s in secs if int(s.since_version) <= opset]
        if not in_force:
            raise MissingFromDocs(f"{op!r} has no version at or below opset {opset} in "
                                  f"{self.source} (its first is {op}-{secs[0].since_version})")
        return in_force[-1]

    def tags(self, op: str, opset: int | None = None, domain: str = "") -> SchemaTags:
        """The tags in force at ``opset``. An op whose last version is deprecated (gen_doc
        writes it without inputs and outputs: Scatter-11, Upsample-10) keeps every older
        version's tags (``tags("Scatter", 10)`` is Scatter-9's), and its latest (``opset``
        None) is that deprecated version with no formal parameters: its number stands as
        the latest, as onnx.defs says, and no tag of it is documented to differ from an
        older one's. At an opset where the stub is in force there are no tags
        (MissingFromDocs): a node exported there has nothing to be compared with."""
        sec = self.section(op, opset, domain)
        if opset is None and sec.stub:
            return SchemaTags(sec.name, sec.domain, int(sec.since_version), (), (),
                              source=self.source)
        return sec.tags(self.source)
