"""Every ai.onnx schema version, and the case variant that proves each one.

A verdict is per (op, schema version, parameter): a tag copied forward from version to
version is checked in every version, against that version's own tags. A schema version
is in force over a range of opsets (from its ``since_version`` to the opset before the
next version); it is proved by each of the op's catalogue cases exported at an opset in
that range -- the *variant* ``<case>@<opset>`` -- so no case is copied by hand per
version. Which exporter reaches which opset is one decision here (``route``):

- opsets 18-25: the dynamo exporter natively (the catalogue's own route);
- opsets 7-17: the TorchScript exporter (it targets 7-20), except a case whose op is
  emitted by a custom translation (reference cases): only dynamo runs those, and its
  version conversion down from 18 fails for them, so they take the relabelled route
  (export at the case's own opset, moved to the variant's: ``engine/export.py``), as does
  any variant whose direct export fails or holds no node of its op;
- opsets 26-28: the raised route of ``engine/versions/next_opset`` (export at 25, then raise);
- below opset 7: no runtime executes these versions (onnxruntime starts at 7); they are
  decided per parameter by a recorded equivalence with the version in force at 7
  (``equivalence``), never silently copied.

A case may declare the opsets its module is valid for (``Case.opsets``); a version
outside them gets a typed gap, never a guess.
"""
from __future__ import annotations

import enum
import functools
from dataclasses import dataclass

import onnx.defs

from ..case import DYNAMO_MIN_OPSET, TORCHSCRIPT_MAX_OPSET, Case

MIN_RUNTIME_OPSET = 7
"""The oldest opset onnxruntime runs (and the TorchScript exporter produces)."""
EXPORTER_MAX = 25
"""Newest opset either exporter produces directly (case.DEFAULT_OPSET)."""


class Band(enum.Enum):
    """Where a schema version sits: what can prove it."""

    BELOW_RUNTIME = "below opset 7"      # in force only at opsets 1-6: equivalence
    EXPORTED = "opsets 7-25"            # reached by an exporter and onnxruntime
    RAISED = "opsets 26-28"             # above the exporters: the raised route


@dataclass(frozen=True)
class SchemaVersion:
    """One ai.onnx schema version and the opsets at which it is in force."""

    op: str
    version: int
    first: int      # == version (its since_version)
    last: int       # the opset before the next version, or the newest opset

    @property
    def band(self) -> Band:
        if self.last < MIN_RUNTIME_OPSET:
            return Band.BELOW_RUNTIME
        if self.first > EXPORTER_MAX:
            return Band.RAISED
        return Band.EXPORTED

    def label(self) -> str:
        return f"{self.op}-{self.version}"

    def in_force(self, opset: int) -> bool:
        return self.first <= opset <= self.last


def newest_opset() -> int:
    return onnx.defs.onnx_opset_version()


@functools.lru_cache(maxsize=1)
def _all_versions() -> dict[str, tuple[SchemaVersion, ...]]:
    by_op: dict[str, list[int]] = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain in ("", "ai.onnx"):
            by_op.setdefault(s.name, []).append(s.since_version)
    top = newest_opset()
    out = {}
    for op, since in by_op.items():
        since = sorted(set(since))
        out[op] = tuple(SchemaVersion(op, v, v, (since[i + 1] - 1) if i + 1 < len(since) else top)
                        for i, v in enumerate(since))
    return out


def schema_versions(op: str) -> tuple[SchemaVersion, ...]:
    """Every ai.onnx schema version of ``op``, oldest first (empty for another domain)."""
    return _all_versions().get(op, ())


def all_schema_versions() -> tuple[SchemaVersion, ...]:
    return tuple(v for op in sorted(_all_versions()) for v in _all_versions()[op])


def version_at(op: str, opset: int) -> SchemaVersion | None:
    return next((v for v in schema_versions(op) if v.in_force(opset)), None)


# ----------------------------------------------------------------------------- selection
@dataclass(frozen=True)
class Selection:
    """``--versions``: ``latest`` (each case at its own opset: the default), ``all``, or
    the versions in force somewhere in opsets ``lo..hi``."""

    kind: str            # "latest" | "all" | "range"
    lo: int = 1
    hi: int = 10**6

    @property
    def expands(self) -> bool:
        return self.kind != "latest"

    def wants(self, v: SchemaVersion) -> bool:
        return self.kind == "all" or (self.kind == "range" and v.first <= self.hi
                                      and v.last >= self.lo)

    def text(self) -> str:
        return self.kind if self.kind != "range" else f"{self.lo}..{self.hi}"


def parse_selection(text: str) -> Selection:
    """``latest``, ``all`` or ``A..B`` (opsets); ValueError with the reason otherwise."""
    text = text.strip()
    if text in ("latest", "all"):
        return Selection(text)
    lo, sep, hi = text.partition("..")
    from ..preflight import is_decimal
    if not sep or not is_decimal(lo.strip()) or not is_decimal(hi.strip()):
        raise ValueError(f"{text!r}: give latest, all, or an opset range A..B (e.g. 7..13)")
    a, b = int(lo), int(hi)
    if not 1 <= a <= b <= newest_opset():
        raise ValueError(f"{text!r}: the range must lie within 1..{newest_opset()} with A <= B")
    return Selection("range", a, b)


# ----------------------------------------------------------------------------- routes
class Gap(enum.Enum):
    """Why a (case, schema version) pair has no proof: typed, shown with the version."""

    BELOW_RUNTIME = "in force only below opset 7, where no runtime executes it"
    CASE_OPSETS = "outside the opsets the case declares its module valid for"
    NOT_EXPORTABLE = "no exporter reaches it for this case"


@dataclass(frozen=True)
class Route:
    opset: int
    exporter: str


def case_opsets(case: Case) -> tuple[int, int]:
    return case.opsets or (MIN_RUNTIME_OPSET, newest_opset())


def route(case: Case, v: SchemaVersion, torchscript: bool = True) -> Route | Gap:
    """The opset and exporter at which ``case`` proves version ``v``: the newest opset in
    force for ``v`` that the case's module is valid for and an exporter reaches.
    ``torchscript=False`` (``--no-torchscript``): the dynamo exporter everywhere, below
    opset 18 by relabelling its export down (``engine/versions/adapters.py``)."""
    if v.band is Band.BELOW_RUNTIME:
        return Gap.BELOW_RUNTIME
    lo, hi = case_opsets(case)
    first, last = max(v.first, lo, MIN_RUNTIME_OPSET), min(v.last, hi)
    if first > last:
        return Gap.CASE_OPSETS
    if first <= EXPORTER_MAX:   # where onnxruntime runs the model, not the raised route
        last = min(last, EXPORTER_MAX)
    if not torchscript:
        pass
    elif case.exporter == "torchscript" and first <= TORCHSCRIPT_MAX_OPSET:
        last = min(last, TORCHSCRIPT_MAX_OPSET)
    elif last < DYNAMO_MIN_OPSET and not case.translation:
        last = min(last, TORCHSCRIPT_MAX_OPSET)
    if _deprecated(v):   # onnx.checker refuses a deprecated op past its first opsets
        last = max(first, min(last, DYNAMO_MIN_OPSET)) if case.exporter == "dynamo" else first
    return Route(last, exporter_for(case, last, torchscript))


def _deprecated(v: SchemaVersion) -> bool:
    return bool(onnx.defs.get_schema(v.op, v.first, "").deprecated)


def exporter_for(case: Case, opset: int, torchscript: bool = True) -> str:
    """Which exporter a variant of ``case`` at ``opset`` uses. A case that chose the
    TorchScript exporter keeps it (the dynamo exporter writes its op otherwise: Softplus as
    a Where around it, clamp with tensor bounds as Max/Min); above 20 its own export is
    relabelled (export.py). A dynamo case uses dynamo from 18 and TorchScript below, but
    a custom translation runs in the dynamo exporter only (below 18: relabelled)."""
    if case.exporter == "torchscript":   # above 20: relabelled from its own export (export.py)
        return "torchscript"
    if opset >= DYNAMO_MIN_OPSET or case.translation or not torchscript:
        return "dynamo"
    return "torchscript"


def at_opset(case: Case, opset: int, torchscript: bool = True) -> Case:
    """``case`` at ``opset``: itself at its own opset, else the variant an all-versions run
    proves there (``prove --opset``: the same name, evidence directory and verdicts)."""
    if opset == case.export_opset:
        return case
    return variant(case, Route(opset, exporter_for(case, opset, torchscript)))


def variant(case: Case, r: Route) -> Case:
    """``case`` exported at ``r``: a case of its own (``<case>@<opset>``), its evidence and
    cache entry apart from the case's own. Where it is relabelled from a dynamo export, that
    export is at opset 18, the dynamo exporter's oldest (the fewest schema changes to adapt
    across), unless a custom translation pins the case's own opset."""
    origin = (case.exporter, case.export_opset)
    if (r.exporter == "dynamo" and r.opset < DYNAMO_MIN_OPSET and case.exporter == "dynamo"
            and not case.translation and case.export_opset >= DYNAMO_MIN_OPSET):
        origin = ("dynamo", DYNAMO_MIN_OPSET)
    return case.replace(name=f"{case.name}@{r.opset}", opset=r.opset, exporter=r.exporter,
                        variant_of=case.name, origin=origin)


def covers(case: Case, v: SchemaVersion) -> bool:
    """``case`` at its own opset already proves ``v``."""
    return v.in_force(case.export_opset)


@dataclass(frozen=True)
class Planned:
    """One (case, version) pair: the case that proves it (the case itself or a variant), or
    the gap."""

    version: SchemaVersion
    base: Case
    case: Case | None
    gap: Gap | None = None


def plan(cases: tuple[Case, ...] | list[Case], selection: Selection,
         torchscript: bool = True) -> list[Planned]:
    """Every (case, version) pair the selection asks for, in catalogue order then version
    order; the cases' own (latest) proofs are not repeated. ``torchscript=False``: the
    cases are already their dynamo ways (``engine/exporters.dynamo_only``)."""
    out: list[Planned] = []
    for case in cases:
        for v in schema_versions(case.op) if case.domain == "" else ():
            if covers(case, v) or not selection.wants(v):
                continue
            r = route(case, v, torchscript)
            if isinstance(r, Gap):
                out.append(Planned(v, case, None, r))
            else:
                out.append(Planned(v, case, variant(case, r)))
    return out
