"""verify-all as one library call: ``prepare(request)`` then ``run(prepared) -> report``.

The batch is the layer that grows (versions, shards, conventions), so it lives here and
not in the CLI: ``cli.py`` parses arguments, calls ``prepare`` (every check that can fail
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
    report: str | None = None         # where the caller will write the report: checked here
    progress: Callable[[int, int, str], None] | None = None


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
    return chosen, frozenset(case_less)


def _load_waivers(path: str | None) -> tuple[Any, ...]:
    if not path:
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


def _own_trees(out: Path | None, cases: Sequence[Case], request: Request
               ) -> list[tuple[str, Path | str | None]]:
    """What the run writes as a whole: each op directory of the evidence, the index files
    of a full run, the cache."""
    trees: list[tuple[str, Path | str | None]] = [("--cache-dir", request.cache_dir)]
    if out is not None:
        trees += [("--out", out / op) for op in sorted({c.op for c in cases})]
        if request.ops is None:
            trees += [("--out", out / "index.json"), ("--out", out / "README.md")]
    return trees


def prepare(request: Request) -> Prepared:
    """Every check that needs no proof, in the order a user fixes them; raises UsageError."""
    from ..output.coverage import coverage
    preflight.positive_int(request.jobs, "--jobs")
    preflight.positive_seconds(request.timeout, "--timeout")
    entries = coverage()
    cases, case_less_selected = _selected_cases(request.ops, entries)
    waivers = _load_waivers(request.waivers)
    out = None
    if request.out is not None:
        out = preflight.writable_dir(request.out, "--out")
        preflight.evidence_dirs(out, [(c.op, c.name) for c in cases])
    cache_warning = None
    if request.cache_dir is not None:
        cache_warning = preflight.cache_dir(request.cache_dir)
    if request.report is not None:
        preflight.writable_file(request.report, "--report")
    preflight.outputs_apart(
        [("--report", request.report)] if request.report is not None else [],
        [("--tags-from", request.tags_from), ("--waivers", request.waivers)],
        _own_trees(out, cases, request))
    doc = preflight.load_docs(request.tags_from)
    return Prepared(request, tuple(cases), case_less_selected, tuple(entries), waivers, doc,
                    out, (cache_warning,) if cache_warning else ())


def _missing_from_docs(prepared: Prepared, case_less_ops: Sequence[dict[str, Any]]
                       ) -> dict[str, list[str]]:
    """Parameters the ``--tags-from`` file lacks, at each case's opset (a Changelog.md has
    every version); a case-less op at its latest version."""
    doc = prepared.doc
    if doc is None:
        return {}
    missing: dict[str, list[str]] = {}
    wanted = [(c.op, c.domain, c.export_opset) for c in prepared.cases]
    wanted += [(e["op"], "", None) for e in case_less_ops]
    for op, domain, opset in sorted(wanted, key=lambda w: w[0]):
        for param in doc.missing_parameters(op, domain, opset):
            if param not in missing.setdefault(op, []):
                missing[op].append(param)
    return {op: params for op, params in missing.items() if params}


def run(prepared: Prepared) -> Outcome:
    """Prove the prepared cases, decide the case-less ops by type, apply the waivers, and,
    for a full run with evidence, prune vanished cases and regenerate the index."""
    from ..output.evidence import prune, write_index
    from . import waivers as waivers_mod
    from .pool import BatchOptions, run_batch
    from .summary import batch_report, case_less, exit_code
    req = prepared.request
    tags, label, fingerprint = preflight.tags_of(prepared.doc, req.tags_from)
    opts = BatchOptions(jobs=req.jobs, timeout=req.timeout, numeric=req.numeric,
                        out=prepared.out,
                        cache_dir=Path(req.cache_dir) if req.cache_dir is not None else None,
                        tags=tags, tag_source=label, tag_fingerprint=fingerprint,
                        progress=req.progress)
    result = run_batch(prepared.cases, opts) if prepared.cases else None
    case_less_ops = case_less(list(prepared.entries), prepared.case_less_selected, tags)
    records = result.records if result else []
    waived, stale = waivers_mod.apply(list(prepared.waivers), records + case_less_ops)
    rep = batch_report(records, list(prepared.entries), result.wall_time_s if result else 0.0,
                       waived, stale, result.cache_hits if result else 0, label,
                       _missing_from_docs(prepared, case_less_ops), req.tags_from,
                       case_less_ops)
    warnings = list(prepared.warnings) + list(result.warnings if result else ())
    removed: list[str] = []
    if prepared.out is not None and req.ops is None:
        removed = [str(g) for g in prune(prepared.out, {(c.op, c.name) for c in prepared.cases})]
        warnings += write_index(prepared.out, rep)
    return Outcome(rep, tuple(warnings), tuple(removed), exit_code(rep))


def verify_all(request: Request) -> Outcome:
    """``prepare`` then ``run``: the library's one call for a whole verify-all."""
    return run(prepare(request))
