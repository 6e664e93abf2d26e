"""Which proofs prove a changed schema version: the op's catalogue cases, and their variants.

A case proves the schema version in force at its own opset; any other version V of its op
is proved by the case's *variant* at an opset where V is in force (``batch/versions.py``:
``plan`` and ``route``, the machinery of ``verify-all --versions``), or has a typed gap
(below opset 7, outside the opsets the case declares, no exporter reaches it). So a
changed version is proved by exactly the cases and variants that reach it: a
``Selection`` of the opsets in which V is in force selects V alone (an op's versions are
in force over disjoint opset ranges). An op without a case is decided by its schema's
types where they decide (``engine/rules/by_type.py``), and otherwise cannot be proved: the
comment says how to add a case (``new-case``).

The proofs run in the installed onnx. With the PR's tags read from its docs
(``--tags-from``), a version the installed onnx lacks cannot be proved without the PR's
build (``Proving.unbuilt``: "not proved: build the PR's onnx", never guessed), and a
version both have is proved only at the opsets where it is in force in *both* (the PR's
docs may end it sooner, with a version the installed onnx lacks: ``Change.until``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from ..batch.versions import SchemaVersion, Selection, covers, plan, schema_versions
from ..case import Case
from .changes import Change, PrTags


@dataclass(frozen=True)
class Proving:
    """How one changed version is proved: the cases (own opset) and variants to run, the
    cases no route reaches it with (and why), or, for an op without a case, its by-type
    rows (shaped like a record's parameters) and whether it has no case at all."""

    change: Change
    cases: tuple[Case, ...] = ()
    gaps: tuple[tuple[str, str], ...] = ()       # (case name, why no variant proves it)
    by_type: tuple[dict[str, Any], ...] = ()     # an op without a case: decided by type
    no_case: bool = False
    unbuilt: bool = False     # the installed onnx lacks the version: build the PR's onnx


def _version(change: Change) -> SchemaVersion | None:
    """The installed onnx's ``change`` version, in force only where the PR's docs agree it
    is (up to ``change.until``); None when the installed onnx lacks it."""
    v = next((v for v in schema_versions(change.op) if v.version == change.version), None)
    if v is None or change.until is None or change.until >= v.last:
        return v
    return replace(v, last=change.until)


def proving(change: Change, cases: Sequence[Case], torchscript: bool = True,
            pr: PrTags | None = None) -> Proving:
    """The proofs of ``change``'s version among ``cases`` (its op's catalogue cases);
    ``torchscript=False``: with the dynamo exporter only (``verify.exporter_mode``: a
    TorchScript case takes its declared dynamo way, or is a gap); ``pr``: the PR's tags
    (the installed onnx's by default), which a by-type row judges."""
    from ..batch.verify import exporter_mode
    if change.params and all(p.pr is None for p in change.params):
        return Proving(change)          # only removals: nothing of the PR's to prove
    if pr is not None and pr.domain:
        return _domain_proving(change, cases, pr)
    v = _version(change)
    if v is None:
        return Proving(change, unbuilt=True)
    domain = [c for c in cases if c.domain == ""]
    if not domain:
        return Proving(change, by_type=_by_type(change, pr or PrTags()), no_case=True)
    _, mine, left_out = exporter_mode(torchscript, domain)
    own = [c for c in mine if covers(c, v)]
    planned = plan(mine, Selection("range", v.first, v.last), torchscript)
    return Proving(change, tuple(own) + tuple(p.case for p in planned if p.case is not None),
                   tuple((p.base.name, p.gap.value) for p in planned if p.gap is not None)
                   + tuple((name, "needs the TorchScript exporter (no dynamo way declared)")
                           for name in left_out))


def _domain_proving(change: Change, cases: Sequence[Case], pr: PrTags) -> Proving:
    """Another domain's change (ai.onnx.ml): proved by the domain's reference cases whose
    node runs that very version (``batch.domains.case_version``: they have no variants,
    each runs at its own version), else by type; a version the installed onnx lacks waits
    for the PR's build."""
    from ..batch.domains import case_version
    from .changes import installed
    if change.version not in installed(pr.domain).get(change.op, []):
        return Proving(change, unbuilt=True)
    mine = [c for c in cases if c.domain == pr.domain and c.op == change.op]
    own = tuple(c for c in mine if case_version(c) == change.version)
    if not own:
        return Proving(change, by_type=_by_type(change, pr), no_case=True,
                       gaps=tuple((c.name, f"runs {c.op}-{case_version(c)}") for c in mine))
    return Proving(change, own)


def _by_type(change: Change, pr: PrTags) -> tuple[dict[str, Any], ...]:
    from ..engine.rules.by_type import decide_op, row_record
    tags = pr.tags(change.op, change.version)
    return tuple(row_record(r) for r in (decide_op(tags) if tags is not None else ())
                 if r.decision is not None)


def select(changes: Sequence[Change],
           cases_of: Callable[[str], Sequence[Case]] | None = None,
           torchscript: bool = True, pr: PrTags | None = None) -> tuple[Proving, ...]:
    """One ``Proving`` per change; ``cases_of(op)`` is the catalogue's ``cases_for``."""
    if cases_of is None:
        from ..cases import cases_for as cases_of
    return tuple(proving(c, cases_of(c.op), torchscript, pr) for c in changes)


def to_run(provings: Sequence[Proving]) -> list[Case]:
    """Every case and variant to run, once each, in the order of the changes."""
    seen: dict[str, Case] = {}
    for p in provings:
        for c in p.cases:
            seen.setdefault(c.name, c)
    return list(seen.values())
