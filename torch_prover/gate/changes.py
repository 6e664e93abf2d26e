"""What a PR changes: the base branch's tags (its generated docs) against the installed onnx.

The installed onnx is the PR's build: ``onnx.defs`` holds the PR's schemas. The base is the
base branch's ``docs/Changelog.md`` (every schema version) or ``docs/Operators.md`` (each
op's latest version only), read by ``tags/docs.py`` as ``--tags-from`` reads them. Every
ai.onnx (op, schema version) of the PR is compared with the base, parameter by parameter
(io and position: a renamed parameter is a change too), and falls into one of three kinds
of change (``ChangeKind``) or none:

- a version both have whose tags differ: ``changed tags`` (only those parameters);
- a version the base lacks: ``new schema version`` (every parameter);
- an op the base lacks: ``new op`` (every version, every parameter).

An Operators.md base documents only each op's latest version, so a PR's older version is
compared with nothing: an edit to an older version's tags is not seen. Versions newer than
the base's latest are new. The diff says which base it had (``latest_only``) so the comment
can say what that implies. Versions and ops of the base that the PR lacks are listed
(``removed``): there is nothing of them to prove.
"""
from __future__ import annotations

from dataclasses import dataclass
from ..compat import StrEnum

from ..tags.changelog_md import ChangelogMd
from ..tags.markdown import DocsTags, MissingFromDocs
from ..tags.schema import Formal, SchemaTags, all_ops, schema_tags


class ChangeKind(StrEnum):
    TAGS = "changed tags"
    NEW_VERSION = "new schema version"
    NEW_OP = "new op"


@dataclass(frozen=True)
class ParamChange:
    """One formal parameter whose tag the PR sets: the base's tag (None: the base has no
    such parameter, as in a new version) and the PR's (None: the PR removed it)."""

    io: str
    position: int
    name: str                 # the PR's name (the base's when the PR has none)
    base: str | None
    pr: str | None
    base_name: str | None = None   # set when the base calls the parameter otherwise

    def label(self) -> str:
        return f"{self.io} {self.position} ({self.name})"


@dataclass(frozen=True)
class Change:
    """One schema version the PR changes, and the parameters whose tags it sets."""

    op: str
    version: int
    kind: ChangeKind
    params: tuple[ParamChange, ...]

    def label(self) -> str:
        return f"{self.op}-{self.version}"


@dataclass(frozen=True)
class Diff:
    base_path: str
    base_kind: str            # "Changelog.md" | "Operators.md"
    base_source: str          # DocsTags.source: the file's name and digest
    latest_only: bool         # an Operators.md: each op's latest version only
    compared: int             # (op, version) pairs of the PR compared with the base
    changes: tuple[Change, ...]
    removed: tuple[str, ...]  # "Op-V" in the base and not in the PR


def _formals(tags: SchemaTags, io: str) -> tuple[Formal, ...]:
    return tags.inputs if io == "input" else tags.outputs


def param_changes(base: SchemaTags | None, pr: SchemaTags) -> tuple[ParamChange, ...]:
    """The parameters of ``pr`` whose tag (or name, or presence) differs from ``base``'s
    (every one when ``base`` is None: a new version), by io and position."""
    out = []
    for io in ("input", "output"):
        theirs = _formals(base, io) if base is not None else ()
        ours = _formals(pr, io)
        for i in range(max(len(theirs), len(ours))):
            b = theirs[i] if i < len(theirs) else None
            p = ours[i] if i < len(ours) else None
            if b is not None and p is not None and (b.name, b.tag) == (p.name, p.tag):
                continue
            name = p.name if p is not None else b.name
            out.append(ParamChange(io, i, name, b.tag if b else None, p.tag if p else None,
                                   b.name if b is not None and p is not None
                                   and b.name != p.name else None))
    return tuple(out)


def _base_tags(base: DocsTags, op: str, version: int | None) -> SchemaTags | None:
    """The base's tags of ``op`` at ``version`` (its latest when None); None when the base
    documents the version without inputs or outputs (a deprecated stub)."""
    try:
        return base.tags(op, version)
    except MissingFromDocs:
        return None


def _pr_versions(op: str) -> list[int]:
    from ..batch.versions import schema_versions
    return [v.version for v in schema_versions(op)]


def diff(base: DocsTags) -> Diff:
    """Every change of the installed onnx's ai.onnx tags against ``base``."""
    every = isinstance(base, ChangelogMd)
    base_ops = set(base.ops(""))
    changes: list[Change] = []
    removed: list[str] = []
    compared = 0
    for op in all_ops():
        versions = _pr_versions(op)
        if op not in base_ops:
            changes += [Change(op, v, ChangeKind.NEW_OP, param_changes(None, schema_tags(op, v)))
                        for v in versions]
            continue
        theirs = base.history(op) if every else [int(base.section(op, None).since_version)]
        removed += [f"{op}-{v}" for v in theirs if v not in versions]
        for v in versions:
            pr = schema_tags(op, v)
            if v in theirs:
                compared += 1
                b = _base_tags(base, op, v)
                found = param_changes(b, pr) if b is not None else ()
                if found and b is not None:
                    changes.append(Change(op, v, ChangeKind.TAGS, found))
            elif every or v > max(theirs):
                changes.append(Change(op, v, ChangeKind.NEW_VERSION, param_changes(None, pr)))
    removed += [f"{op}-{v}" for op in sorted(base_ops - set(all_ops()))
                for v in (base.history(op) if every else [base.section(op, None).since_version])]
    return Diff(base.path, base.kind, base.source, not every, compared, tuple(changes),
                tuple(removed))
