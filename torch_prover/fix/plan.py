"""From a verify-all report to the edits fix-tags may make, and why the others are not made.

Verdicts are grouped per formal parameter (op, domain, schema version, io, index); a group
is acted on when its cases agree on the tag they support. An edit inside a shared generator
changes every schema using it, so it is made only when each of those schemas' same
parameter has a decided verdict supporting the same tag -- otherwise it is withheld and
the report names the schema that lacks or contradicts it.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..errors import UsageError
from ..vocab import Tag, Verdict
from .locate import Block, CallSite, SourceTree, Unlocated
from .settled import settled_only

ACTED = (Verdict.DISAGREE, Verdict.PROPOSED)
DECIDED = (Verdict.AGREE, Verdict.DISAGREE, Verdict.PROPOSED)


class Withheld(Enum):
    """Why a located parameter gets no hunk."""
    CONFLICTING_CASES = "its cases support different tags"
    SHARED_WITHOUT_VERDICT = "a schema sharing the generator has no decided verdict"
    SHARED_CONTRADICTED = "a schema sharing the generator has a verdict for another tag"
    ALREADY_IN_SOURCES = "the sources already carry the tag"
    CONVENTION = "a named convention decides it, not the math (--include-conventions edits it)"
    ONNX_POINTS = ("ONNX's node tests contradict it: the edit says non-differentiable, ONNX's "
                   "points show a derivative")


@dataclass(frozen=True)
class CaseVerdict:
    """One case's verdict on the parameter, with what a reviewer needs to check it."""
    case: str
    verdict: Verdict
    supports: Tag | None
    autograd: tuple[str, str]   # (outcome, detail)
    numeric: tuple[str, str]
    rule: str                   # which verdict rule decided it: both witnesses, by type, ...
    reason: str
    convention: str | None = None   # the named convention that decided it (conventions.py)


@dataclass(frozen=True)
class Finding:
    """One formal parameter and every decided case verdict about it."""
    op: str
    domain: str
    version: int
    io: str
    index: int
    name: str
    tag: Tag
    cases: tuple[CaseVerdict, ...]

    @property
    def key(self) -> tuple[str, str, int, str, int]:
        return self.op, self.domain, self.version, self.io, self.index

    @property
    def supports(self) -> frozenset[Tag]:
        return frozenset(c.supports for c in self.cases)

    @property
    def verdict(self) -> Verdict | None:
        """DISAGREE or PROPOSED when some case says so (the group is acted on), else None."""
        found = {c.verdict for c in self.cases}
        return next((v for v in ACTED if v in found), None)

    @property
    def conventions(self) -> tuple[str, ...]:
        """The conventions its case verdicts name (empty: the math alone decides)."""
        return tuple(sorted({c.convention for c in self.cases if c.convention}))

    @property
    def label(self) -> str:
        return f"{self.op}-{self.version} {self.io} {self.index} ({self.name})"


@dataclass(frozen=True)
class Edit:
    """One call site set to one tag, and every parameter (of every schema) it changes."""
    site: CallSite
    tag: Tag
    findings: tuple[Finding, ...]                     # the verdicts acted on at this site
    users: tuple[tuple[str, int, str, int], ...]      # (op, version, io, index) it changes
    generator: str | None

    @property
    def shared(self) -> bool:
        return len({(op, version) for op, version, _, _ in self.users}) > 1


@dataclass(frozen=True)
class Plan:
    edits: tuple[Edit, ...]
    unlocated: tuple[tuple[Finding, Unlocated, str], ...]
    withheld: tuple[tuple[Finding, Withheld, str], ...]
    acted: tuple[Finding, ...]


BY_TYPE_RECORD = "by type"
"""The name of the record a schema version's case-less by-type cells are planned from."""


def report_records(rep: dict[str, Any]) -> list[dict[str, Any]]:
    """The records fix-tags plans from, of a report read back (``batch/report_io``: already
    validated and re-checked): its cases, of an all-versions report its variants,
    equivalence and case-less by-type cells (``version_records``), else its case-less ops'
    by-type rows (``by_type_records``) -- only what its versions table decides (no failed
    variant's, no cell the versions disagree on: ``settled.settled_only``). So every
    decided cell of the report is planned: edited, withheld with its reason, or found
    already right in the sources; none is silently absent."""
    section = rep.get("versions")
    extra = version_records(section) if isinstance(section, dict) else by_type_records(rep)
    return settled_only(list(rep["cases"]) + extra, section)


def version_records(section: Any) -> list[dict[str, Any]]:
    """The records an all-versions report adds (``verify-all --versions``): each variant's
    proof record; for every schema version decided by equivalence (below opset 7) a record
    of its cells, named after the rule; and for every version a record of the cells its
    types decide with no case (NonMaxSuppression-10, And-1), so fix-tags treats every
    decided cell alike."""
    if not isinstance(section, dict):
        return []
    out = list(section.get("cases") or [])
    for o in section.get("ops") or []:
        for e in o.get("versions") or []:
            at = {"op": o["op"], "domain": o.get("domain", ""), "schema_version": e["version"]}
            if e.get("decided_by") == "equivalence":
                out.append({**at, "case": f"equivalence with {e['basis']}",
                            "parameters": [c for c in e["cells"] if c.get("basis")]})
            typed = [c for c in e.get("cells") or () if c.get("rule") == "by type"
                     and not c.get("cases")]
            if typed:
                out.append({**at, "case": BY_TYPE_RECORD, "parameters": typed})
    return out


def by_type_records(rep: dict[str, Any]) -> list[dict[str, Any]]:
    """A report without a versions section: the by-type rows of its case-less ops (``ops``,
    at the schema version in force), one record per op."""
    return [{"op": o["op"], "domain": "", "schema_version": o["schema_version"],
             "case": BY_TYPE_RECORD, "parameters": list(o["parameters"])}
            for o in rep.get("ops") or () if o.get("parameters")
            and isinstance(o.get("schema_version"), int)]


def findings(records: list[dict[str, Any]]) -> dict[tuple, Finding]:
    """Every parameter with at least one decided verdict, its case verdicts grouped."""
    groups: dict[tuple, list] = {}
    for rec in records:
        version = rec.get("schema_version")
        if not isinstance(version, int):
            continue    # an error record: no schema, no verdict
        for p in rec.get("parameters", []):
            try:
                verdict = Verdict(p["verdict"])
                supports = Tag(p["supports"]) if p.get("supports") else None
                key = (rec["op"], rec.get("domain", ""), version, p["io"], int(p["index"]))
                tag = Tag(p["tag"])
            except (KeyError, ValueError, TypeError) as exc:
                raise UsageError(f"report: {rec['op']} / {rec.get('case')}: a parameter "
                                 f"without a valid verdict ({exc})") from None
            if verdict not in DECIDED or supports is None:
                continue
            w = p.get("witnesses") or {}
            groups.setdefault(key, [p.get("name", ""), tag, []])[2].append(CaseVerdict(
                str(rec.get("case")), verdict, supports,
                *((w.get(s, {}).get("outcome", ""), w.get(s, {}).get("detail", ""))
                  for s in ("autograd", "numeric")), p.get("rule", ""), p.get("reason", ""),
                p.get("convention")))
    return {k: Finding(*k, name, tag, tuple(cs)) for k, (name, tag, cs) in groups.items()}


def reached_versions(records: list[dict[str, Any]]) -> dict[str, set[int]]:
    """Op -> the schema versions the report's cases ran against: says, of a schema without
    a verdict, whether its op was left out of the run or its cases never reach it."""
    out: dict[str, set[int]] = {}
    for rec in records:
        version = rec.get("schema_version")
        out.setdefault(rec["op"], set()).update([version] if isinstance(version, int) else [])
    return out


def plan(tree: SourceTree, found: dict[tuple, Finding], ops: set[str] | None = None,
         only: Verdict | None = None, reached: dict[str, set[int]] | None = None,
         include_conventions: bool = False) -> Plan:
    """The edits. A parameter a convention decides is withheld (``Withheld.CONVENTION``)
    unless ``include_conventions``: the math alone does not support the change."""
    acted = [f for f in found.values() if f.verdict is not None
             and (ops is None or f.op in ops) and (only is None or f.verdict is only)]
    acted.sort(key=lambda f: f.key)
    unlocated, withheld, by_site = [], [], {}
    for f in acted:
        if f.conventions and not include_conventions:
            withheld.append((f, Withheld.CONVENTION, f"convention: {', '.join(f.conventions)}"))
            continue
        if len(f.supports) > 1:
            sides = "; ".join(f"{c.case}: {c.supports}" for c in f.cases)
            withheld.append((f, Withheld.CONFLICTING_CASES, sides))
            continue
        block = tree.block(f.op, f.domain, f.version)
        if block is None:
            unlocated.append((f, Unlocated.NO_BLOCK, f"no ONNX_OPERATOR_SET_SCHEMA({f.op}, "
                                                     f"{f.version}) block in onnx/defs"))
            continue
        decl, problem, detail = block.find(f.io, f.index)
        if decl is None:
            unlocated.append((f, problem, detail))
            continue
        if decl.name is not None and decl.name != f.name:
            unlocated.append((f, Unlocated.NAME_MISMATCH, f"{decl.site.path}:{decl.site.line} "
                                                          f"declares {decl.name!r}"))
            continue
        (tag,) = f.supports
        if decl.tag is tag:   # the report's tags came from elsewhere (a stale docs file)
            withheld.append((f, Withheld.ALREADY_IN_SOURCES,
                             f"{decl.site.path}:{decl.site.line} already says {tag}; the "
                             f"report compared with {f.tag}, so its tags did not come from "
                             f"these sources"))
            continue
        why = _shared_problem(tree, found, block, decl.site, f, tag, reached,
                              include_conventions)
        if why is not None:
            withheld.append((f, *why))
            continue
        by_site.setdefault(decl.site, (decl.generator, []))[1].append((f, tag))
    edits = []
    for site, (generator, pairs) in by_site.items():
        tags = {tag for _, tag in pairs}
        fs = [f for f, _ in pairs]
        if len(tags) > 1:   # node inputs of one variadic parameter that disagree
            sides = "; ".join(f"{f.io} {f.index}: {tag}" for f, tag in pairs)
            withheld += [(f, Withheld.CONFLICTING_CASES, f"one variadic parameter: {sides}")
                         for f in fs]
            continue
        (tag,) = tags
        users = tuple(sorted((b.op, b.version, d.io, d.index) for b, d in tree.users(site)))
        edits.append(Edit(site, tag, tuple(fs), users, generator))
    return Plan(tuple(sorted(edits, key=lambda e: (e.site.path, e.site.token))),
                tuple(unlocated), tuple(withheld), tuple(acted))


def _shared_problem(tree: SourceTree, found: dict[tuple, Finding], block: Block,
                    site: CallSite, f: Finding, tag: Tag,
                    reached: dict[str, set[int]] | None,
                    include_conventions: bool = False) -> tuple[Withheld, str] | None:
    """None when every other schema the call declares a parameter of has a decided verdict
    supporting ``tag`` for it; else why not, naming the first that does not and, given
    ``reached``, whether its op was not run or its cases never reach that version."""
    for other, decl in tree.users(site):
        if other is block:
            continue
        label = f"{other.op}-{other.version} {decl.io} {decl.index}"
        theirs = found.get((other.op, other.domain, other.version, decl.io, decl.index))
        shared = f"{site.path}:{site.line} also declares {label}"
        if theirs is None:
            return Withheld.SHARED_WITHOUT_VERDICT, f"{shared}, which has no decided verdict" \
                + _why_no_verdict(other.op, other.version, reached)
        if theirs.conventions and not include_conventions:
            return Withheld.CONVENTION, (f"{shared}, which a convention decides "
                                         f"({', '.join(theirs.conventions)})")
        if theirs.supports != {tag}:
            sides = ", ".join(sorted(theirs.supports))
            return Withheld.SHARED_CONTRADICTED, f"{shared}, whose verdicts support {sides}"
    return None


def _why_no_verdict(op: str, version: int, reached: dict[str, set[int]] | None) -> str:
    if reached is None:
        return ""
    if op not in reached:
        return f" ({op} is not in this report: add it to verify-all's --ops)"
    if version not in reached[op]:
        seen = ", ".join(f"{op}-{v}" for v in sorted(reached[op])) or "no schema"
        return (f" (no case reaches {op}-{version}: the report's {op} cases ran against "
                f"{seen}; a case at an opset where {op}-{version} is in force would decide it)")
    return ""
