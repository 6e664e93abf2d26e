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
  the installed onnx lacks versions the base documents at opsets it closed without them,
  though the base is newer than it (``Absence.OTHER_LINE``): not a release of the base's
  line, so its runtime semantics are not the PR's.

Every other version the base documents and the installed onnx lacks is normal and only
named (``absences``): newer than the installed onnx (``AHEAD``: main is ahead of the pinned
release from the day it merges a new opset's op), or absent from an onnx newer than the
base (``REVERTED``: added and reverted before any release, as Scatter-13 and Upsample-13
in ONNX's docs of mid-2020). A PR that changes such a version has it "not proved: build the
PR's onnx" (``select.py``); everything else is proved as usual. The PR's *own* new versions
the installed onnx lacks are "not proved: build the PR's onnx" too.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..compat import StrEnum
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


class Absence(StrEnum):
    """Why the installed onnx lacks a schema version the base documents."""
    AHEAD = "newer than the installed onnx"
    REVERTED = "reverted before release (absent from the installed onnx, newer than the base)"
    OTHER_LINE = "absent from the installed onnx at an opset it has, though the base is newer"


@dataclass(frozen=True)
class Absent:
    """A version ("Op-V") the base documents and the installed onnx lacks, and why."""
    label: str
    why: Absence


def absences(base: DocsTags) -> tuple[Absent, ...]:
    """The base's ai.onnx versions the installed onnx does not have, each classified by
    opsets alone: past the installed onnx's newest opset, or at it (added after its
    release), it is ``AHEAD``; in a base older than the installed onnx (its newest opset
    below the installed one's) it was ``REVERTED`` before the release; otherwise the
    installed onnx closed that opset without a version the newer base has: ``OTHER_LINE``."""
    import onnx.defs
    from ..batch.versions import schema_versions
    installed = onnx.defs.onnx_opset_version()
    lacking = []
    for op in base.ops(""):
        have = {v.version for v in schema_versions(op)}
        lacking += [(op, v) for v in base_versions(base, op) if v not in have]
    newest = max((v for op in base.ops("") for v in base_versions(base, op)), default=0)
    out = []
    for op, v in lacking:
        why = (Absence.AHEAD if v >= installed else
               Absence.REVERTED if newest < installed else Absence.OTHER_LINE)
        out.append(Absent(f"{op}-{v}", why))
    return tuple(sorted(out, key=lambda a: (_opset(a.label), a.label)))


def problems(found: Diff, lacking: Iterable[Absent] = ()) -> list[str]:
    """What says the base and the PR's tags are not one PR apart (empty: they may be);
    ``lacking``: the base's versions the installed onnx lacks (``--tags-from`` only), of
    which only ``OTHER_LINE`` ones are a problem."""
    new = sorted((f"{c.op}-{c.version}" for c in found.changes
                  if c.kind is ChangeKind.NEW_VERSION), key=lambda v: (_opset(v), v))
    gone = sorted(found.removed, key=lambda v: (_opset(v), v))
    other = [a.label for a in lacking if a.why is Absence.OTHER_LINE]
    out = []
    where = _several(new, many_ops=False)
    if where:
        out.append(f"{len(new)} schema versions only the PR's tags have, {where}: "
                   f"{_named(new)}")
    where = _several(gone, many_ops=True)
    if where:
        out.append(f"{len(gone)} schema versions only the base has, {where}: {_named(gone)}")
    if other:
        import onnx.defs
        out.append(f"the installed onnx (opset {onnx.defs.onnx_opset_version()}) lacks "
                   f"{len(other)} schema versions the newer base documents at opsets it "
                   f"has, so it is not a release of the base's line: {_named(other)}")
    return out


def check(found: Diff, lacking: Iterable[Absent] = ()) -> None:
    """UsageError (one line, exit 2) naming every problem; nothing when there is none."""
    found_problems = problems(found, lacking)
    if found_problems:
        raise UsageError(
            f"--changed-from {found.base_path}: the base and the PR's tags "
            f"({found.pr_label}) are not one pull request apart: "
            + "; ".join(found_problems)
            + ". Give the base of this PR (docs/Changelog.md at its merge base) and the "
              "onnx of its line")
