"""Is the onnx under test the one the PR means? Differences no single PR makes.

PR mode compares a base with the PR's tags and blames the PR for every difference. That is
only right when the two are one PR apart. A base from another onnx line (a release's docs
against main's build, main's docs against an older wheel) differs in ways no PR makes,
and proving those differences would blame the PR for a whole release. So, before any
proof, the run stops (one line, exit 2, the versions on each side named) when:

- the PR has schema versions of ops the base has at *several* opsets: a PR that bumps ops
  adds their versions at one opset, the one it opens (a new op is left out: its versions
  are all new to the base, whatever line it is on);
- the base has versions the PR lacks at several opsets, or in many ops: no PR removes a
  release's versions;
- with ``--tags-from`` (the PR's tags from its docs, the proofs run in the installed onnx),
  the installed onnx lacks versions the base has: it is older than the base, so its
  runtime semantics are not the PR's. The PR's *own* new versions the installed onnx
  lacks are not a mismatch: they are "not proved: build the PR's onnx" (``select.py``).
"""
from __future__ import annotations

from typing import Iterable

from ..errors import UsageError
from ..tags.markdown import DocsTags
from .changes import ChangeKind, Diff, base_versions

MANY_OPS = 5
"""More ops than this losing versions is a release's worth of difference, not a PR's."""
SHOWN = 6
"""Versions named in the one-line message; the rest are counted."""


def _opset(label: str) -> int:
    return int(label.rsplit("-", 1)[1])


def _named(labels: list[str]) -> str:
    shown = ", ".join(labels[:SHOWN])
    more = len(labels) - SHOWN
    return shown + (f" (+{more} more)" if more > 0 else "")


def _several(labels: list[str], many_ops: bool) -> str:
    """``labels`` ("Op-V") span several opsets (or, with ``many_ops``, more than
    ``MANY_OPS`` ops): their opsets, else ''. Versions a PR adds are judged by opsets
    alone: one PR may bump many ops at the opset it opens (a new type for 17 ops)."""
    opsets = sorted({_opset(v) for v in labels})
    ops = {v.rsplit("-", 1)[0] for v in labels}
    if len(opsets) > 1 or (many_ops and len(ops) > MANY_OPS):
        return f"at opset{'s' if len(opsets) > 1 else ''} {', '.join(map(str, opsets))}"
    return ""


def installed_lacks(base: DocsTags) -> list[str]:
    """The base's ai.onnx versions ("Op-V") the installed onnx does not have."""
    from ..batch.versions import schema_versions
    out = []
    for op in base.ops(""):
        have = {v.version for v in schema_versions(op)}
        out += [f"{op}-{v}" for v in base_versions(base, op) if v not in have]
    return out


def problems(found: Diff, lacking: Iterable[str] = ()) -> list[str]:
    """What says the base and the PR's tags are not one PR apart (empty: they may be);
    ``lacking``: the base's versions the installed onnx lacks (``--tags-from`` only)."""
    new = sorted((f"{c.op}-{c.version}" for c in found.changes
                  if c.kind is ChangeKind.NEW_VERSION), key=lambda v: (_opset(v), v))
    gone = sorted(found.removed, key=lambda v: (_opset(v), v))
    lacking = sorted(lacking, key=lambda v: (_opset(v), v))
    out = []
    where = _several(new, many_ops=False)
    if where:
        out.append(f"{len(new)} schema versions only the PR's tags have, {where}: "
                   f"{_named(new)}")
    where = _several(gone, many_ops=True)
    if where:
        out.append(f"{len(gone)} schema versions only the base has, {where}: {_named(gone)}")
    if lacking:
        out.append(f"the installed onnx lacks {len(lacking)} schema versions the base has "
                   f"(it is older than the base): {_named(lacking)}")
    return out


def check(found: Diff, lacking: Iterable[str] = ()) -> None:
    """UsageError (one line, exit 2) naming every problem; nothing when there is none."""
    found_problems = problems(found, lacking)
    if found_problems:
        raise UsageError(
            f"--changed-from {found.base_path}: the base and the PR's tags "
            f"({found.pr_label}) are not one pull request apart: "
            + "; ".join(found_problems)
            + ". Give the base of this PR (docs/Changelog.md at its merge base) and the "
              "onnx of its line")
