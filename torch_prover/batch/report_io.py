"""A report read back: ``load_report(path, expect_kind)``, the one reader of a JSON document
torch-prover wrote (``fix-tags --report``; ``merge`` reads its shards with the same steps).

Nothing in a report is taken on its word (docs/safety.md). In order, each step a one-line
usage error (exit 2) naming the file and what is wrong, before any work:

1. the file: a regular file, at most ``inputs.Bound.REPORT``, UTF-8 JSON without NaN or Infinity;
2. its shape: the schema its kind ships with (``output/json_schema.py``);
3. for a verify-all report, its provenance (``batch/provenance.py``): made by this
   torch-prover, with this onnx, and tags that are what it says;
4. its records: exactly the cases and variants its request deals it (``--ops``,
   ``--versions``, ``--shard``: ``verify.select`` and ``versions.plan``, as ``prepare``
   computes them), none twice, none missing, none renamed; and each re-checked by
   ``engine/recheck.record_problem``, the one re-check the cache uses too;
5. the report returned is rebuilt from those records by ``verify.build_report``, the
   function a run calls: its summary, op statuses, by-type rows and versions table are
   re-derived, never read.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any, Sequence

from .. import preflight
from ..errors import UsageError
from ..inputs import Bound, read_bytes
from ..vocab import DocKind


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def read_document(path: str, what: str, kind: DocKind) -> dict[str, Any]:
    """The JSON document at ``path``, checked against ``kind``'s shipped schema (steps 1-2)."""
    from ..output.json_schema import first_problem
    preflight.readable_file(path, what)
    where = f"{what} {path}"
    raw = read_bytes(path, Bound.REPORT, what)
    try:
        doc = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise UsageError(f"{where}: not UTF-8 text, so not JSON torch-prover wrote") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{where}:{exc.lineno}: not JSON ({exc.msg})") from None
    except ValueError as exc:
        raise UsageError(f"{where}: not JSON torch-prover wrote ({exc})") from None
    except RecursionError:
        raise UsageError(f"{where}: nested too deeply to be a {kind} document") from None
    if not isinstance(doc, dict) or doc.get("kind") != kind:
        found = doc.get("kind") if isinstance(doc, dict) else None
        raise UsageError(f"{where}: not a {kind} document (kind {found!r}); give the JSON "
                         "report of `torch-prover verify-all --format json --report FILE`")
    problem = first_problem(doc, kind)
    if problem is not None:
        raise UsageError(f"{where}: {problem}; not a {kind} torch-prover wrote")
    if kind == DocKind.BATCH_REPORT:
        from .provenance import this_tool_problem
        why = this_tool_problem(doc["provenance"])
        if why:
            raise UsageError(f"{where}: {why}")
    return doc


@dataclass(frozen=True)
class Slice:
    """One verify-all report read (steps 1-3): the whole run's, or one shard's."""

    path: str
    doc: dict[str, Any]

    @property
    def provenance(self) -> dict[str, Any]:
        return self.doc["provenance"]

    @property
    def shard(self) -> tuple[int, int] | None:
        s = self.doc.get("shard")
        return (s["index"], s["count"]) if s is not None else None


class _Run:
    """What the run a provenance describes asked for, re-derived here: its tag source, its
    waivers and, per shard, its cases, variants and case-less ops."""

    def __init__(self, prov: dict[str, Any], what: str, where: str):
        from . import waivers as waivers_mod
        from .verify import selection_of
        self.prov, self.what, self.where = prov, what, where
        req = prov["request"]
        self.ops = ",".join(req["ops"]) if req["ops"] is not None else None
        self.torchscript: bool = req["torchscript"]
        self.domain: str | None = req.get("domain")   # verify-all --domain; None: ai.onnx
        self.left_out: tuple[str, ...] = ()
        self.selection_text = req["versions"]
        try:
            self.selection = selection_of(req["versions"])
            self.tags, self.doc = _tags_of(prov["tags"], self.domain or "")
            self.waivers = [waivers_mod.Waiver.from_dict(w) for w in prov["waivers"]]
            from ..cases import all_cases
            cases_of: dict[str, list[str]] = {}
            for c in all_cases():
                cases_of.setdefault(c.op, []).append(c.name)
            waivers_mod.check(self.waivers, cases_of)
        except (UsageError, waivers_mod.WaiverError) as exc:
            raise UsageError(f"{where}: its request cannot be re-made here ({exc})") from None
        from ..output.coverage import coverage
        self.entries = coverage()

    def dealt(self, shard: tuple[int, int] | None):
        """(cases, variants, case-less ops selected) of the run, or of one shard of it."""
        from .versions import plan
        from .verify import exporter_mode, select
        try:
            if self.domain is not None:   # another domain's cases (batch/domains.py)
                from .domains import cases_of
                cases, case_less_selected = cases_of(self.domain, self.ops), frozenset()
            else:
                cases, case_less_selected = select(self.ops, shard, self.entries)
        except UsageError as exc:
            raise UsageError(f"{self.where}: its --ops cannot be re-made here ({exc})") from None
        torchscript, cases, self.left_out = exporter_mode(self.torchscript, cases)
        if torchscript != self.torchscript:
            raise UsageError(f"{self.where}: made with the TorchScript exporter, which this "
                             "torch lacks: re-check it where it was made, or rerun verify-all")
        planned = plan(cases, self.selection, torchscript) if self.selection.expands else []
        return cases, [p.case for p in planned if p.case is not None], case_less_selected

    def recheck(self, where: str, listed: Sequence[Any], cases: Sequence[Any],
                field: str) -> dict[str, dict[str, Any]]:
        """The records ``listed`` under ``field``, held to exactly ``cases`` (in run order)
        and each re-checked; by case name."""
        from ..engine.prove import default_tags
        from ..engine.recheck import RunFacts, record_problem
        names = [r["case"] for r in listed]
        want = [c.name for c in cases]
        if names != want:
            raise UsageError(f"{where}: {_name_difference(field, names, want)}; not the "
                             "records of the run its provenance describes")
        run = RunFacts(numeric=self.prov["request"]["numeric"],
                       tag_source=self.prov["tags"]["source"], versions=self.prov["versions"])
        for rec, case in zip(listed, cases):
            why = record_problem(rec, case, self.tags or default_tags, run)
            if why:
                raise UsageError(f"{where}: {field} {case.name}: {why}; not what a proof "
                                 "says (an edited or forged record): rerun verify-all")
        return dict(zip(names, listed))


def _tags_of(tags: dict[str, Any], domain: str = ""):
    """(TagSource or None for the installed onnx, the docs) from a provenance's tags, docs
    of ``domain``'s ops ("": ai.onnx)."""
    if tags["text"] is None:
        return None, None
    from ..tags.docs import DocsError, load_text
    try:
        doc = load_text(tags["path"], tags["text"], domain)
    except DocsError as exc:
        raise UsageError(f"its --tags-from text does not read as ONNX docs ({exc})") from None
    return doc.tags, doc


def _name_difference(field: str, names: list[str], want: list[str]) -> str:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            return f"{field} {n} appears twice"
        seen.add(n)
    extra = [n for n in names if n not in set(want)]
    if extra:
        return f"{field} {extra[0]} is not one the run deals this report"
    missing = [n for n in want if n not in seen]
    if missing:
        return f"{field} {missing[0]} is missing ({len(missing)} of {len(want)})"
    return f"{field} are out of the run's order"


def check_slices(slices: Sequence[Slice], what: str) -> _Run:
    """The slices' provenances are one (the shards of one run); the request re-derived.
    ``what``: the command or option reading them, for the messages."""
    where = what if len(slices) > 1 else f"{what} {slices[0].path}"
    from .provenance import differing_field
    first = slices[0]
    for s in slices[1:]:
        field = differing_field(first.provenance, s.provenance)
        if field is not None:
            raise UsageError(f"{where}: {first.path} and {s.path} differ in their provenance "
                             f"({field}); merge the shards of one run")
    return _Run(first.provenance, what, where)


def rebuild(slices: Sequence[Slice], run: _Run, shard: tuple[int, int] | None
            ) -> dict[str, Any]:
    """The report of ``run`` (of its shard ``shard``; None: the whole run) from the
    slices' re-checked records: ``build_report``'s, as a run gives it (step 4-5)."""
    from .summary import case_less
    from .verify import Parts, build_report, missing_from_docs
    cases, variants, case_less_selected = run.dealt(shard)
    records: dict[str, dict[str, Any]] = {}
    for s in slices:
        mine = run.dealt(s.shard) if s.shard != shard else (cases, variants, None)
        where = f"{run.what} {s.path}"
        records.update(run.recheck(where, s.doc["cases"], mine[0], "case"))
        records.update(run.recheck(where, s.doc.get("versions", {}).get("cases", []),
                                   mine[1], "variant"))
    case_less_ops = case_less(list(run.entries), case_less_selected, run.tags)
    for s in slices:
        if s.shard is not None and s.shard != shard:
            theirs = case_less(list(run.entries), run.dealt(s.shard)[2], run.tags)
            if s.doc["shard"]["case_less"] != theirs:
                raise UsageError(f"{run.what} {s.path}: its by-type rows are not what its "
                                 "tags give; rerun verify-all")
    parts = Parts(
        records=[records[c.name] for c in cases], variants=[records[c.name] for c in variants],
        case_less=case_less_ops, waivers=run.waivers, label=run.prov["tags"]["source"],
        tags_path=run.prov["tags"]["path"],
        missing=missing_from_docs(run.doc, cases, case_less_ops),
        # what the run states of itself, no record holds: not carried (run_totals.RUN_ONLY)
        wall_time_s=None, cache_hits=None, selection=run.selection_text,
        shard=shard, provenance=run.prov, torchscript=run.torchscript, left_out=run.left_out)
    rep = build_report(parts, run.tags)
    from .onnx_points import carry
    carry(rep, [s.doc.get("onnx_points") for s in slices])
    return rep


def load_report(path: str, expect_kind: DocKind = DocKind.BATCH_REPORT,
                what: str = "--report") -> dict[str, Any]:
    """The document at ``path`` as torch-prover would write it: read and validated (steps
    1-3); a verify-all report is returned rebuilt from its re-checked records (4-5), a
    shard's as that shard's report. UsageError (one line, exit 2) on anything else."""
    doc = read_document(path, what, expect_kind)
    if expect_kind != DocKind.BATCH_REPORT:
        return doc
    piece = Slice(path, doc)
    rebuilt = rebuild([piece], check_slices([piece], what), piece.shard)
    said = contradiction(doc, rebuilt)
    if said:
        raise UsageError(f"{what} {path}: {said}; an edited report: rerun verify-all")
    return rebuilt


STATED = ("status", "exit_code", "summary/cases", "summary/parameters",
          "summary/unwaived_disagreements", "summary/declared_disagreements",
          "summary/failed_cases", "summary/invalid_cases", "summary/unexpected_inconclusive",
          "summary/by_type", "versions/summary/failing", "versions/summary/undeclared_failures",
          "versions/summary/by_band")
"""What a report states about its records (the fields its renderings and its exit code
rest on), compared with what the records give."""


def contradiction(doc: dict[str, Any], rebuilt: dict[str, Any]) -> str | None:
    """Where a report's own statements differ from the report its re-checked records
    rebuild (``STATED``): a forged count or status is refused, never silently corrected."""
    def at(d: Any, path: str) -> Any:
        for k in path.split("/"):
            d = d.get(k) if isinstance(d, dict) else None
        return d
    for path in STATED:
        stated, derived = at(doc, path), at(rebuilt, path)
        if stated != derived:
            return f"{path} says {json.dumps(stated)[:80]}, its records give " \
                   f"{json.dumps(derived)[:80]}"
    return None


def evidence_record_problem(rec: dict[str, Any], model: Any = None) -> str | None:
    """``check-evidence``'s and ``node-tests``' re-check of a ``proof.json`` and its
    ``model.onnx`` (None for a failed case): why it is not what a proof of its case says --
    its ``test_data`` re-derived from its numeric check and the model
    (``engine/test_data.problem``), then the same ``record_problem`` every read record goes
    through -- or a note starting with ``check_evidence.NOT_RECHECKED`` when this
    torch-prover cannot re-derive its verdicts (a case no longer in the catalogue; tags from
    a docs file or another onnx, which the record does not carry). A record of no catalogue
    case (a ``run`` script's) is re-checked with no declarations, unless it holds some (a
    case since removed)."""
    from ..cases import find_case
    from ..engine import test_data
    from ..engine.prove import default_tags
    from ..engine.recheck import RunFacts, record_problem
    from ..errors import CaseError
    from ..output.check_evidence import NOT_RECHECKED
    from .versions import at_opset
    try:
        case = find_case(rec["op"], rec.get("variant_of") or rec["case"])
        if rec.get("variant_of"):
            case = at_opset(case, int(rec["opset"]))
    except (CaseError, KeyError, TypeError, ValueError):
        case = None
    if model is not None:
        why = test_data.problem(rec, model, case.fixed_draw if case is not None else "")
        if why:
            return why
    mine = _installed_onnx()
    if rec.get("tags_from") != "onnx.defs":
        return f"{NOT_RECHECKED}tags from {rec.get('tags_from')}, which the record does not hold"
    if not isinstance(rec.get("versions"), dict) or rec["versions"].get("onnx") != mine:
        return f"{NOT_RECHECKED}made with another onnx than this one ({mine})"
    if case is None:
        params = rec.get("parameters") if isinstance(rec.get("parameters"), list) else []
        if any(isinstance(p, dict) and (p.get("expected") or p.get("rule") == "convention")
               for p in params):
            return f"{NOT_RECHECKED}it declares verdicts, and no case {rec.get('case')!r} " \
                   f"of {rec.get('op')} in this catalogue does"
    return record_problem(rec, case, default_tags, RunFacts(tag_source="onnx.defs"))


@functools.lru_cache(maxsize=1)
def _installed_onnx() -> str:
    """The installed onnx's version (package metadata is read once, not per record)."""
    from ..engine.prove import versions
    return versions()["onnx"]
