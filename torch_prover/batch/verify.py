"""verify-all as one library call: ``prepare(request)`` then ``run(prepared) -> report``.

The batch is the layer that grows (versions, shards, conventions), so it lives here and
not in the CLI: ``cli/`` parses arguments, calls ``prepare`` (every check that can fail
without work: the selection, the waivers, the docs file, the output locations), then
``run``, and renders the report it returns. ``fix-tags`` without ``--report`` calls the
same two functions, so the two commands cannot prove different things.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from .. import preflight
from ..case import Case
from ..errors import UsageError
from . import domains, points_early
from .shards import parse_shard, shard_ops


@dataclass(frozen=True)
class Request:
    """What a verify-all run is asked to do (the CLI's flags, as data)."""

    ops: str | None = None            # comma-separated --ops; None: every op
    jobs: int = 2
    timeout: float = 120.0
    numeric: bool = True
    out: str | None = "models"        # None: write no evidence
    cache_dir: str | None = None      # None: no cache
    tags_from: str | None = None
    waivers: str | None = None
    versions: str = "latest"          # latest | all | A..B (opsets): see batch/versions.py
    shard: str | None = None          # "K/N": this run proves the K-th of N slices (by op)
    report: str | None = None         # where the caller will write the report: checked here
    outputs: tuple[Any, ...] = ()     # preflight.Output: more files the caller writes (--junit)
    report_format: str = "json"       # its format: a Markdown report's details file is checked too
    progress: Callable[[int, int, str], None] | None = None
    torchscript: bool | None = None   # False: --no-torchscript; None: if torch has it
    onnx_points: int = 4              # ONNX node tests measured per schema version (0: none;
                                      # batch/onnx_points.py: PER_VERSION)
    onnx_src: str | None = None       # an ONNX checkout whose committed node tests give them
    case_free: bool = False           # decide from ONNX's node tests alone (batch/case_free.py)
    domain: str = "ai.onnx"           # another: its reference cases only (batch/domains.py)


@dataclass(frozen=True)
class Prepared:
    """A request checked before any work: the cases, the case-less ops to decide by type,
    the loaded waivers and docs, and the output directory (``None``: none written)."""

    request: Request
    cases: tuple[Case, ...]
    case_less_selected: frozenset[str] | None   # None: every case-less op
    entries: tuple[dict[str, Any], ...]          # coverage() of every ai.onnx op
    waivers: tuple[Any, ...]
    doc: Any
    out: Path | None
    warnings: tuple[str, ...] = ()               # found before any work (a read-only cache)
    selection: Any = None                        # versions.Selection
    planned: tuple[Any, ...] = ()                # versions.Planned: variants and gaps
    shard: tuple[int, int] | None = None
    torchscript: bool = True                     # whether the TorchScript exporter is used
    left_out: tuple[str, ...] = ()               # TorchScript cases with no dynamo way

    @property
    def variants(self) -> tuple[Case, ...]:
        return tuple(p.case for p in self.planned if p.case is not None)


@dataclass(frozen=True)
class Outcome:
    """The report every rendering reads, and what the run has to say on stderr."""

    report: dict[str, Any]
    warnings: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()     # evidence of cases that no longer exist
    exit_code: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def _selected_cases(ops_arg: str | None, entries: Sequence[dict[str, Any]]
                    ) -> tuple[list[Case], frozenset[str] | None]:
    """(cases, case-less ops to decide by type: None = all). An op named in ``--ops`` must
    have a case or a parameter its schema's types decide (``coverage``'s ``by_type``)."""
    from ..cases import all_cases, cases_for
    if ops_arg is None:
        return list(all_cases()), None
    chosen, case_less = [], set()
    by_op = {e["op"]: e for e in entries}
    for op in preflight.op_names(ops_arg, "--ops"):
        mine = cases_for(op)
        if not mine:
            e = by_op.get(op, {})
            if not e.get("by_type"):
                raise UsageError(f"--ops: no case for op {op}, and its types decide nothing "
                                 f"({e.get('reason_category') or 'not yet written'}: "
                                 f"{e.get('reason') or 'no case yet'})")
            case_less.add(op)
        chosen.extend(mine)
    order = {c.name: i for i, c in enumerate(all_cases())}   # catalogue order, as merge has it
    return sorted(chosen, key=lambda c: order[c.name]), frozenset(case_less)


def select(ops_arg: str | None, shard: tuple[int, int] | None,
           entries: Sequence[dict[str, Any]]) -> tuple[list[Case], frozenset[str] | None]:
    """(cases, case-less ops to decide by type: None = all) of a run asked for ``--ops``
    and ``--shard``: what ``prepare`` proves, and what ``merge`` and ``fix-tags`` hold a
    report's records to (``batch/report_io.py``)."""
    cases, case_less_selected = _selected_cases(ops_arg, entries)
    if shard is not None:
        every = sorted({c.op for c in cases} | (
            set(case_less_selected) if case_less_selected is not None else
            {e["op"] for e in entries if e["status"] != "covered" and e.get("by_type")}))
        mine = shard_ops(every, shard)
        cases = [c for c in cases if c.op in mine]
        case_less_selected = frozenset(mine - {c.op for c in cases})
    return cases, case_less_selected


def load_waivers(path: str | None) -> tuple[Any, ...]:
    """``--waivers``: the file's waivers, checked against the catalogue (UsageError), or ()
    (none given: ``--waivers ''`` is an empty path, refused)."""
    if path is None:
        return ()
    from ..cases import all_cases
    from . import waivers as waivers_mod
    preflight.readable_file(path, "--waivers")
    try:
        waivers = waivers_mod.load(path)
        cases_of: dict[str, list[str]] = {}
        for c in all_cases():
            cases_of.setdefault(c.op, []).append(c.name)
        waivers_mod.check(waivers, cases_of)
    except waivers_mod.WaiverError as exc:
        raise UsageError(str(exc)) from None
    return tuple(waivers)


def selection_of(text: str):
    from .versions import parse_selection
    try:
        return parse_selection(text)
    except ValueError as exc:
        raise UsageError(f"--versions {exc}") from None


def own_trees(out: Path | None, cases: Sequence[Case], cache_dir: str | Path | None,
              full: bool) -> list[tuple[str, Path | str | None]]:
    """What a run of ``cases`` writes as a whole (``preflight.outputs_checked``'s trees):
    the cache, each op directory of the evidence, and the index files of a ``full`` run
    (verify-all without --ops; PR mode proves a selection)."""
    trees: list[tuple[str, Path | str | None]] = [("--cache-dir", cache_dir)]
    if out is not None:
        trees += [("--out", out / op) for op in sorted({c.op for c in cases})]
        if full:
            trees += [("--out", out / "index.json"), ("--out", out / "README.md"),
                      ("--out", out / "versions.json")]
    return trees


def prepare(request: Request) -> Prepared:
    """Every check that needs no proof, in the order a user fixes them; raises UsageError."""
    from ..output.coverage import coverage
    from .versions import plan
    preflight.positive_int(request.jobs, "--jobs")
    preflight.positive_seconds(request.timeout, "--timeout")
    if request.onnx_points < 0:
        raise UsageError(f"--onnx-points {request.onnx_points}: give a count (0: none)")
    if request.onnx_src is not None and not preflight.has_node_tests(request.onnx_src):
        raise UsageError(f"--onnx-src {request.onnx_src}: no onnx/backend/test/data/node "
                         "there (ONNX's points come from the checkout's committed node tests)")
    selection = selection_of(request.versions)
    shard = parse_shard(request.shard)
    entries = coverage()
    if domains.checked(request.domain) != domains.DEFAULT:   # its cases, at their versions
        cases, case_less_selected = domains.cases_of(
            request.domain, request.ops, versions=request.versions, shard=request.shard,
            case_free=request.case_free), frozenset()
    elif request.case_free:   # no case is proved, no evidence written (batch/case_free.py)
        from .case_free import checked
        request = checked(request)
        cases, case_less_selected = [], frozenset()
    else:
        cases, case_less_selected = select(request.ops, shard, entries)
    torchscript, cases, left_out = exporter_mode(request.torchscript, cases)
    planned = tuple(plan(cases, selection, torchscript)) if selection.expands else ()
    waivers = load_waivers(request.waivers)
    out = None
    if request.out is not None:
        out = preflight.writable_dir(request.out, "--out")
        preflight.evidence_dirs(out, [(c.op, c.name) for c in cases]
                                + [(p.case.op, p.case.name) for p in planned if p.case])
    preflight.dirs_apart([("--out", out), ("--cache-dir", request.cache_dir)])
    cache_warning = None
    if request.cache_dir is not None:
        cache_warning = preflight.cache_dir(request.cache_dir)
    outputs = [preflight.Output("--out", out, None)] if out is not None else []
    outputs += preflight.report_files(request.report, request.report_format)
    outputs += list(request.outputs)
    preflight.outputs_checked(
        outputs, [("--tags-from", request.tags_from), ("--waivers", request.waivers)],
        own_trees(out, cases, request.cache_dir, request.ops is None))
    doc = preflight.load_docs(request.tags_from, "" if request.domain == domains.DEFAULT
                              else request.domain)   # another domain's: its -ml docs
    return Prepared(request, tuple(cases), case_less_selected, tuple(entries), waivers, doc,
                    out, (cache_warning,) if cache_warning else (), selection, planned,
                    shard, torchscript, left_out)


def exporter_mode(asked: bool | None, cases: Sequence[Case]
                  ) -> tuple[bool, list[Case], tuple[str, ...]]:
    """(whether the TorchScript exporter is used, the cases as proved, the TorchScript
    cases left out for want of a dynamo way). ``asked`` None: use it if torch has it."""
    from ..engine.exporters import dynamo_only, torchscript_available
    torchscript = torchscript_available() if asked is None else (
        asked and torchscript_available())
    if torchscript:
        return True, list(cases), ()
    ways = [(c, dynamo_only(c)) for c in cases]
    return (False, [d for _, d in ways if d is not None],
            tuple(c.name for c, d in ways if d is None))


def missing_from_docs(doc: Any, cases: Sequence[Case], case_less_ops: Sequence[dict[str, Any]]
                      ) -> dict[str, list[str]]:
    """Parameters the ``--tags-from`` file lacks, at each case's opset (a Changelog.md has
    every version); a case-less op at its latest version."""
    if doc is None:
        return {}
    missing: dict[str, list[str]] = {}
    wanted = [(c.op, c.domain, c.export_opset) for c in cases]
    wanted += [(e["op"], "", None) for e in case_less_ops]
    for op, domain, opset in sorted(wanted, key=lambda w: w[0]):
        for param in doc.missing_parameters(op, domain, opset):
            if param not in missing.setdefault(op, []):
                missing[op].append(param)
    return {op: params for op, params in missing.items() if params}


def run(prepared: Prepared) -> Outcome:
    """Prove the prepared cases (and, with ``--versions``, their variants), decide the
    case-less ops by type, apply the waivers, and, for a full run with evidence, prune
    vanished cases and regenerate the index."""
    from ..output.evidence import prune
    from ..output.index_files import write_index, write_versions
    from . import provenance
    from .one_case import BatchOptions
    from .pool import run_batch
    from .summary import case_less
    req = prepared.request
    tags, label, fingerprint = preflight.tags_of(prepared.doc, req.tags_from)
    prov = provenance.of_run(
        None if req.ops is None else preflight.op_names(req.ops, "--ops")
        if req.domain == domains.DEFAULT else [c.op for c in prepared.cases], req.versions,
        req.numeric, req.timeout, prepared.waivers, label, req.tags_from,
        prepared.torchscript, None if req.domain == domains.DEFAULT else req.domain)
    opts = BatchOptions(jobs=req.jobs, timeout=req.timeout, numeric=req.numeric, out=prepared.out,
                        cache_dir=Path(req.cache_dir) if req.cache_dir is not None else None,
                        tags=tags, tag_source=label, tag_fingerprint=fingerprint, progress=req.progress)
    todo = prepared.cases + prepared.variants
    beside = None
    if todo and points_early.beside_batch(numeric=req.numeric, onnx_points=req.onnx_points,
            default_domain=req.domain == domains.DEFAULT, jobs=req.jobs,
            case_free=req.case_free, onnx_src=req.onnx_src, cache_dir=req.cache_dir):
        from .onnx_points import collecting   # ONNX's points, beside the batch
        beside = collecting(Path(req.cache_dir), todo, req.onnx_points)
    result = run_batch(todo, opts, beside) if todo else None
    points_early.stop(result.beside if result else None)   # tests built ahead: done, or unused
    case_less_ops = case_less(list(prepared.entries), prepared.case_less_selected, tags)
    records = result.records if result else []
    parts = Parts(
        records=records[:len(prepared.cases)], variants=records[len(prepared.cases):],
        case_less=case_less_ops, waivers=prepared.waivers, label=label,
        tags_path=req.tags_from,
        missing=missing_from_docs(prepared.doc, prepared.cases, case_less_ops),
        wall_time_s=result.wall_time_s if result else 0.0,
        cache_hits=result.cache_hits if result else 0, selection=req.versions,
        shard=prepared.shard, provenance=prov, torchscript=prepared.torchscript,
        left_out=prepared.left_out)
    rep = build_report(parts, tags)
    warnings = list(prepared.warnings) + list(result.warnings if result else ())
    removed: list[str] = []
    if prepared.out is not None and req.ops is None and prepared.shard is None \
            and req.domain == domains.DEFAULT:   # another domain's run prunes nothing
        removed = [str(g) for g in prune(prepared.out, _evidence_kept(records))]
        warnings += write_index(prepared.out, rep)
        if prepared.selection.kind == "all":
            warnings += write_versions(prepared.out, rep["versions"])
    if req.numeric and req.onnx_points > 0 and req.domain == domains.DEFAULT:
        warnings += _onnx_points(rep, req, prepared.selection, tags,
                                 result.beside if result else None)
    from .summary import exit_code
    return Outcome(rep, tuple(warnings), tuple(removed), exit_code(rep))


def _onnx_points(rep: dict, req: Request, selection: Any, tags: Any, ahead=None) -> list[str]:
    """The third numeric witness (``batch/onnx_points.py``) after the evidence is written, or
    with ``--case-free`` the verdicts it and the function bodies give alone."""
    from ..preflight import op_names
    from . import onnx_points
    ops = op_names(req.ops, "--ops") if req.ops is not None else None
    if req.case_free:   # imported only here: a warm default run reads one file, no more
        from . import case_free
        run = onnx_points.measured(req.onnx_src, req.cache_dir, req.onnx_points, True, ops=ops)
        rep["case_free"] = case_free.section(run, selection, req.ops, tags)
    else:   # only the versions the run's cells are of: their ops' tests alone are collected
        keys = {(c.op, c.version) for c in onnx_points.cells_of(rep)}
        run = onnx_points.measured(req.onnx_src, req.cache_dir, req.onnx_points, False, keys,
                                   ahead=ahead)
        onnx_points.annotate(rep, run)
    return list(run.warnings)


def _evidence_kept(records: Sequence[dict[str, Any]] = ()) -> set[tuple[str, str]]:
    """Every case directory the catalogue can write -- each case, and each variant an
    all-versions run proves -- whatever this run selected: a default run never prunes the
    committed evidence of other schema versions. Less the cases this run found to have no
    model at all (a case error: the export, the checker, an adapter's refusal -- the same
    every time, unlike a crash or a timeout): an older proof's evidence there would claim
    what the run no longer finds (hardmax_axis0@10, refused since no adapter brings
    Hardmax-13's axis to Hardmax-1). The other domains' cases are kept too: verify-all does
    not prove them (cases/other_domains.py)."""
    from ..cases import all_cases
    from ..vocab import DocKind
    from .one_case import Failure
    from .versions import Selection, plan
    from ..cases.other_domains import DOMAIN_CASES   # written by scripts/domain_evidence.py
    cases = list(all_cases())
    gone = {(r["op"], r["case"]) for r in records
            if r.get("kind") == DocKind.FAILED_CASE and r.get("failure") == Failure.CASE}
    return ({(c.op, c.name) for c in cases} | {(c.op, c.name) for c in DOMAIN_CASES}
            | {(p.case.op, p.case.name) for p in plan(cases, Selection("all")) if p.case}) - gone


@dataclass(frozen=True)
class Parts:
    """What a report is made of: the same for a run and for ``merge`` of shard reports, so
    the two give the same report (``build_report`` is the one function for both)."""

    records: Sequence[dict[str, Any]]
    variants: Sequence[dict[str, Any]]
    case_less: Sequence[dict[str, Any]]
    waivers: Sequence[Any]
    label: str
    tags_path: str | None
    missing: dict[str, list[str]]
    wall_time_s: float | None   # None: rebuilt from saved records (run_totals.RUN_ONLY)
    cache_hits: int | None
    selection: str = "latest"
    shard: tuple[int, int] | None = None
    provenance: dict[str, Any] | None = None   # batch/provenance.py: of_run
    torchscript: bool = True
    left_out: Sequence[str] = ()


def build_report(parts: Parts, tags: Any = None) -> dict[str, Any]:
    """The verify-all report from its parts: the cases' report (``summary.batch_report``),
    and with ``--versions`` the per-version table (``version_table``); a shard's report
    carries what ``merge`` needs to rebuild the whole."""
    from ..output.coverage import coverage
    from . import waivers as waivers_mod
    from .summary import batch_report
    records, variants = list(parts.records), list(parts.variants)
    waived, stale = waivers_mod.apply(list(parts.waivers),
                                      records + variants + list(parts.case_less))
    rep = batch_report(records, coverage(), parts.wall_time_s, waived, stale,
                       parts.cache_hits, parts.label, parts.missing, parts.tags_path,
                       list(parts.case_less))
    selection = selection_of(parts.selection)
    if selection.expands:
        from ..output.documents import head
        from ..vocab import DocKind
        from .summary import exit_code
        rep["versions"] = _versions_section(records, variants, parts.case_less, selection,
                                            waived, tags, parts.torchscript)
        vs = rep["versions"]["summary"]
        rep.update(head(DocKind.BATCH_REPORT, exit_code(rep), (
            f"{rep['reason']}; schema versions: {vs['failing']} failing cells (undeclared, "
            f"unwaived), {len(vs['failed_variants'])} failed variants "
            f"({vs['undeclared_failures']} not declared by their cases)")))
    if parts.provenance is not None:
        rep["provenance"] = parts.provenance
    rep["exporters"] = {"torchscript": parts.torchscript, "left_out": list(parts.left_out)}
    if parts.shard is not None:
        rep["shard"] = {"index": parts.shard[0], "count": parts.shard[1],
                        "case_less": list(parts.case_less),
                        "waivers": [w.as_dict() for w in parts.waivers],
                        "selection": parts.selection}
    return rep


def _versions_section(records: list[dict], variants: list[dict], case_less: Sequence[dict],
                      selection: Any, waived: dict, tags: Any,
                      torchscript: bool = True) -> dict[str, Any]:
    from ..cases import all_cases
    from .version_table import table
    from .versions import plan
    from .waivers import waiver_key
    ran = {r["op"] for r in records} | {c["op"] for c in case_less}
    _, cases, _ = exporter_mode(torchscript, [c for c in all_cases() if c.op in ran])
    planned = plan(cases, selection, torchscript)
    gaps = [p for p in planned if p.gap is not None]
    targets = {p.case.name: p.version.version for p in planned if p.case}
    section = table(records + variants, gaps, selection, ran, tags,
                    is_waived=lambda r, p: waiver_key(r, p) in waived, targets=targets,
                    declarations=_declarations(cases, records, tags),
                    case_less={c["op"] for c in case_less})
    section["cases"] = variants
    return section


def _declarations(cases: Sequence[Case], records: Sequence[dict], tags: Any):
    """What the catalogue declares of each case, for the versions table: the versions its
    variants fail at (``fails_at``), the parameters (io, name) it does not exercise
    (``unexercised``, keyed by index at its own opset), and those its own proof exercised."""
    from ..engine.prove import default_tags
    from ..tags.schema import UnknownOpError
    from .version_table import Declarations
    tags = tags or default_tags
    unexercised, exercised = {}, {}
    own = {r.get("case"): r for r in records}
    for c in cases:
        try:
            t = tags(c.op, c.export_opset, c.domain)
        except UnknownOpError:
            continue
        names, extra = set(), set()
        for key in c.unexercised:
            io, _, i = key.partition(" ")
            f = t.formal(io, int(i))
            if f is not None and f.option == "variadic" and int(i) > f.position:
                extra.add((io, f.name, int(i)))   # one more element of a variadic formal
            elif f is not None:
                names.add((io, f.name))
        unexercised[c.name] = frozenset(names | extra)
        rec = own.get(c.name)
        if rec is not None and rec.get("parameters"):
            exercised[c.name] = frozenset(
                (p["io"], p["name"]) for p in rec["parameters"]
                if p.get("evidence") != "absent" and (p["io"], p["name"]) not in names
                and (p["io"], p["name"], p["index"]) not in extra)
    return Declarations({c.name: dict(c.fails_at) for c in cases if c.fails_at},
                        unexercised, exercised)


def verify_all(request: Request) -> Outcome:
    """``prepare`` then ``run``: the library's one call for a whole verify-all."""
    return run(prepare(request))
