"""What a PR changes: the base branch's tags (its generated docs) against the PR's.

The PR's tags are its committed ``docs/Changelog.md`` (``--tags-from``: every ONNX PR
commits its regenerated docs, so no build is needed to read them) or, without it, the
installed onnx, the PR's build (``onnx.defs``): ``PrTags`` is either. The base is the
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

A parameter of a new schema version whose name and tag are the base's in the version it
supersedes is *inherited* (``ParamChange.inherited``): the PR copied the tag forward, it did
not write it, so a refutation of it does not fail the gate (``judge.py``, docs/pr-gate.md).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

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
    inherited: str | None = None   # "Op-V": a new version's tag copied from the base's Op-V

    def label(self) -> str:
        return f"{self.io} {self.position} ({self.name})"


@dataclass(frozen=True)
class Change:
    """One schema version the PR changes, and the parameters whose tags it sets."""

    op: str
    version: int
    kind: ChangeKind
    params: tuple[ParamChange, ...]
    until: int | None = None  # the PR's last opset of this version (None: the PR's newest)

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
    pr_label: str = "the installed onnx"   # PrTags.label
    pr_path: str | None = None             # --tags-from: the PR's docs file


class PrTags:
    """The PR's ai.onnx tags: its committed Changelog.md (``docs``), or the installed onnx
    (``docs`` None, its build). A Changelog.md, not an Operators.md: the PR's every version
    is compared, and an Operators.md holds each op's latest only."""

    def __init__(self, docs: ChangelogMd | None = None, domain: str = ""):
        self.docs, self.domain = docs, domain   # domain: "" (ai.onnx) or "ai.onnx.ml"

    @property
    def label(self) -> str:
        import onnx
        return self.docs.source if self.docs is not None else \
            f"the installed onnx {onnx.__version__}"

    def ops(self) -> tuple[str, ...]:
        if self.docs is not None:
            return tuple(self.docs.ops(self.domain))
        return all_ops() if not self.domain else tuple(sorted(installed(self.domain)))

    def versions(self, op: str) -> list[int]:
        if self.docs is not None:
            return self.docs.history(op, self.domain)
        if self.domain:
            return installed(self.domain).get(op, [])
        from ..batch.versions import schema_versions
        return [v.version for v in schema_versions(op)]

    def tags(self, op: str, version: int) -> SchemaTags | None:
        """None: a documented version without inputs or outputs (a deprecated stub)."""
        return _base_tags(self.docs, op, version, self.domain) if self.docs is not None \
            else schema_tags(op, version, self.domain)


def installed(domain: str) -> dict[str, list[int]]:
    """Op -> the schema versions the installed onnx registers in ``domain`` (ascending)."""
    import onnx.defs
    out: dict[str, list[int]] = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain == domain:
            out.setdefault(s.name, []).append(s.since_version)
    return {op: sorted(vs) for op, vs in out.items()}


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


def _base_tags(base: DocsTags, op: str, version: int | None, domain: str = ""
               ) -> SchemaTags | None:
    """The base's tags of ``op`` at ``version`` (its latest when None); None when the base
    documents the version without inputs or outputs (a deprecated stub)."""
    try:
        return base.tags(op, version, domain)
    except MissingFromDocs:
        return None


def _empty(op: str, version: int) -> SchemaTags:
    return SchemaTags(op, "", version, (), ())


def inherit(params: tuple[ParamChange, ...], before: SchemaTags | None, label: str
            ) -> tuple[ParamChange, ...]:
    """A new version's ``params``, each marked inherited from ``label`` (the version it
    supersedes) where ``before`` (the base's tags of that version) has the same parameter
    (io, position, name) with the same tag: the PR copied it, it did not write it."""
    if before is None:
        return params
    out = []
    for p in params:
        f = before.formal(p.io, p.position)
        same = f is not None and p.pr is not None and (f.name, f.tag) == (p.name, p.pr)
        out.append(replace(p, inherited=label) if same else p)
    return tuple(out)


def base_versions(base: DocsTags, op: str, domain: str = "") -> list[int]:
    """The versions of ``op`` the base documents (an Operators.md: its latest only)."""
    if isinstance(base, ChangelogMd):
        return base.history(op, domain)
    return [int(base.section(op, None, domain).since_version)]


def diff(base: DocsTags, pr: PrTags | None = None) -> Diff:
    """Every change of the PR's tags of its domain (ai.onnx's of the installed onnx by
    default) against ``base``."""
    pr = pr or PrTags()
    dom = pr.domain
    every = isinstance(base, ChangelogMd)
    base_ops = set(base.ops(dom))
    changes: list[Change] = []
    removed: list[str] = []
    compared = 0
    for op in pr.ops():
        versions = pr.versions(op)
        until = {v: (nxt - 1) for v, nxt in zip(versions, versions[1:])}
        if op not in base_ops:
            changes += [Change(op, v, ChangeKind.NEW_OP,
                               param_changes(None, pr.tags(op, v) or _empty(op, v)),
                               until.get(v))
                        for v in versions]
            continue
        theirs = base_versions(base, op, dom)
        removed += [f"{op}-{v}" for v in theirs if v not in versions]
        for i, v in enumerate(versions):
            mine = pr.tags(op, v)
            if v in theirs:
                compared += 1
                b = _base_tags(base, op, v, dom)
                found = param_changes(b, mine) if b is not None and mine is not None else ()
                if found:
                    changes.append(Change(op, v, ChangeKind.TAGS, found, until.get(v)))
            elif every or v > max(theirs):
                prev = versions[i - 1] if i else None
                params = param_changes(None, mine or _empty(op, v))
                if prev in theirs:
                    params = inherit(params, _base_tags(base, op, prev, dom), f"{op}-{prev}")
                changes.append(Change(op, v, ChangeKind.NEW_VERSION, params, until.get(v)))
    removed += [f"{op}-{v}" for op in sorted(base_ops - set(pr.ops()))
                for v in base_versions(base, op, dom)]
    return Diff(base.path, base.kind, base.source, not every, compared, tuple(changes),
                tuple(removed), pr.label, pr.docs.path if pr.docs is not None else None)
