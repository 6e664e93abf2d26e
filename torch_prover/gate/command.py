"""``verify-all --changed-from BASE``: check everything, prove the changes, print the comment.

``prepare`` makes every check that needs no proof -- the flags PR mode cannot combine
with, ``--jobs``/``--timeout``, the base docs file (read as ``--tags-from`` reads one),
the PR's docs (``--tags-from``: its committed Changelog.md, so the PR needs no build), the
waivers, every output location against every input and the tool's trees -- then computes
the diff, refuses a base and PR that no single PR sets apart (``mismatch.py``), and
computes the proofs it needs and checks the evidence directories those would write. ``run`` proves them in verify-all's worker pool (same cache, same evidence)
and builds the ``pr-gate`` document. Nothing else of verify-all's full run happens: no
other case, no index files, no pruning (a partial run must not rewrite ``models/``).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .. import preflight
from ..case import Case
from ..errors import UsageError
from ..output.inert import one_line
from . import mismatch
from .changes import Diff, PrTags, diff
from .select import Proving, select, to_run

FORMATS = ("text", "json", "markdown")

BASE_COMMIT = "TORCH_PROVER_BASE_COMMIT"
"""The environment variable that names the base by its commit (the workflow sets it to the
PR's merge base): the comment names that commit, not the path of the base's docs file."""

WRITTEN = {"markdown": "PR comment", "json": "PR gate report (JSON)", "text": "PR gate report"}


@dataclass(frozen=True)
class Request:
    """What PR mode is asked to do (verify-all's flags that apply to it, as data)."""

    changed_from: str
    jobs: int = 2
    timeout: float = 120.0
    numeric: bool = True
    out: str | None = None
    cache_dir: str | None = None
    waivers: str | None = None
    report: str | None = None
    progress: Callable[[int, int, str], None] | None = None
    outputs: tuple[Any, ...] = ()   # preflight.Output: other files written (--junit, the step summary)
    torchscript: bool | None = None  # False: --no-torchscript; None: if torch has it
    tags_from: str | None = None     # the PR's docs/Changelog.md; None: the installed onnx
    case_free: bool = False          # judge every changed version from ONNX's node tests
    onnx_points: int = 4             # ONNX node tests measured per version (--case-free)
    onnx_src: str | None = None      # the PR's checkout: its node tests, committed or generated
    base_commit: str | None = None   # the base's commit, how the comment names the base


@dataclass(frozen=True)
class Prepared:
    request: Request
    diff: Diff
    provings: tuple[Proving, ...]
    todo: tuple[Case, ...]
    waivers: tuple[Any, ...]
    out: Path | None
    warnings: tuple[str, ...]
    started: float
    pr_docs: Any = None       # the PR's ChangelogMd (--tags-from), None: the installed onnx
    absent: tuple[mismatch.Absent, ...] = ()   # the base's versions the installed onnx lacks
    domain: str = ""          # "" (ai.onnx) or ai.onnx.ml: the domain the base documents


def refuse_combinations(ops: str | None, versions: str, shard: str | None,
                        fmt: str) -> None:
    """The verify-all flags PR mode decides itself, or cannot honour: one line, exit 2."""
    given = [(ops, "--ops", "the ops are the ones the PR changes"),
             (versions != "latest" or None, "--versions",
              "the schema versions are the ones the PR changes"),
             (shard, "--shard", "a PR's changes are proved in one run")]
    for value, flag, why in given:
        if value:
            raise UsageError(f"--changed-from with {flag}: {why}; drop {flag}")
    if fmt not in FORMATS:
        raise UsageError(f"--changed-from with --format {fmt}: PR mode writes "
                         f"{', '.join(FORMATS)}")


ML = "ai.onnx.ml"
"""The other domain PR mode judges: gen_doc writes its tags to docs/Changelog-ml.md."""


def _load_base(path: str):
    """(the base's docs, the domain they document): ai.onnx's (docs/Changelog.md or
    Operators.md) or ai.onnx.ml's (Changelog-ml.md: that domain's changes are judged)."""
    from ..tags.docs import DocsError, load, of_domain
    preflight.readable_file(path, "--changed-from")
    try:
        base = load(path, None)
        domain = ML if not base.ops("") and base.ops(ML) else ""
        return of_domain(base, domain), domain
    except DocsError as exc:
        raise UsageError(f"--changed-from: {exc}") from None


def _load_pr(path: str | None, domain: str = ""):
    """The PR's committed docs (``--tags-from``) of the base's domain: a Changelog.md (or
    Changelog-ml.md), every version of it compared (an Operators.md holds each op's latest
    only); None without the flag."""
    from ..tags.changelog_md import ChangelogMd
    docs = preflight.load_docs(path, domain)
    if docs is not None and not isinstance(docs, ChangelogMd):
        raise UsageError(f"--tags-from {path}: with --changed-from give the PR's "
                         "docs/Changelog.md (every schema version); an Operators.md holds "
                         "each op's latest version only")
    return docs


def prepare(req: Request) -> Prepared:
    """Every check before any proof, in the order a user fixes them; raises UsageError."""
    from ..batch.verify import load_waivers
    started = time.perf_counter()
    preflight.positive_int(req.jobs, "--jobs")
    preflight.positive_seconds(req.timeout, "--timeout")
    if req.case_free and (not req.numeric or req.onnx_points < 1):
        raise UsageError("--case-free decides from ONNX's node tests: it needs the numeric "
                         "witness and --onnx-points of at least 1")
    if req.base_commit is not None and not re.fullmatch(r"[0-9a-f]{7,40}", req.base_commit):
        raise UsageError(f"{BASE_COMMIT}={one_line(req.base_commit)!s}: not a commit (7 to 40 "
                         "lowercase hex digits, as `git merge-base` prints)")
    base, domain = _load_base(req.changed_from)
    pr_docs = _load_pr(req.tags_from, domain)
    waivers = load_waivers(req.waivers)
    out = preflight.writable_dir(req.out, "--out") if req.out is not None else None
    preflight.dirs_apart([("--out", out), ("--cache-dir", req.cache_dir)])
    warning = preflight.cache_dir(req.cache_dir) if req.cache_dir is not None else None
    pr = PrTags(pr_docs, domain)
    found = diff(base, pr)
    absent = mismatch.absences(base) if pr_docs is not None and not domain else ()
    mismatch.check(found, absent)
    from ..batch.verify import exporter_mode, own_trees
    torchscript = exporter_mode(req.torchscript, ())[0]
    provings = select(found.changes, _domain_cases if domain else None, torchscript, pr)
    if req.onnx_src is not None and _wants_points(req, provings, pr_docs, domain):
        from ..batch.onnx_points import origin_of
        origin_of(req.onnx_src)   # the checkout's tests, committed or generated, or a refusal
    todo = to_run(provings) if not req.case_free else []
    if out is not None:
        preflight.evidence_dirs(out, [(c.op, c.name) for c in todo])
    from ..output.ownership import Holds
    preflight.outputs_checked(
        ([preflight.Output("--report", req.report, Holds.PR_COMMENT)]
         if req.report is not None else []) + list(req.outputs)
        + ([preflight.Output("--out", out, None)] if out is not None else []),
        [("--changed-from", req.changed_from), ("--tags-from", req.tags_from),
         ("--waivers", req.waivers)], own_trees(out, todo, req.cache_dir, full=False))
    return Prepared(req, found, provings, tuple(todo), waivers, out,
                    (warning,) if warning else (), started, pr_docs,
                    tuple(a for a in absent if a.why is not mismatch.Absence.OTHER_LINE),
                    domain)


def _domain_cases(op: str) -> list[Case]:
    """The reference cases of ``op`` in the other domains (``cases/other_domains.py``)."""
    from ..cases.other_domains import DOMAIN_CASES
    return [c for c in DOMAIN_CASES if c.op == op]


def _wants_points(req: Request, provings, pr_docs: Any = None, domain: str = "") -> bool:
    """Whether ONNX's node tests judge anything: ``--case-free``, a changed version no
    case reaches (``case_free.needs_fallback``), or an op the installed onnx lacks whose
    tests the PR's generators and reference implementation give (``_new_ops``). Never for
    ai.onnx.ml: ONNX's points are ai.onnx's (``batch/domains.py``)."""
    from .case_free import needs_fallback
    if domain:
        return False
    return (req.case_free and any(not p.unbuilt for p in provings)) or (
        req.numeric and req.onnx_points > 0 and any(needs_fallback(p) for p in provings)
    ) or bool(_new_ops(req, provings, pr_docs))


def _new_ops(req: Request, provings, pr_docs: Any) -> dict[str, Any]:
    """The changed ops the installed onnx lacks altogether (op -> the PR's tags of its newest
    changed version), when the points come from the PR's generators: their tests are
    measured with the PR's reference implementation (engine/onnx_points/generators.py)."""
    if (req.onnx_src is None or pr_docs is None or not req.numeric or req.onnx_points < 1
            or preflight.has_node_tests(req.onnx_src)):
        return {}
    from ..tags.schema import all_ops
    have = set(all_ops())
    out: dict[str, Any] = {}
    for p in provings:
        op = p.change.op
        t = PrTags(pr_docs).tags(op, p.change.version) if p.unbuilt and op not in have else None
        if t is not None and (op not in out or t.since_version > out[op].since_version):
            out[op] = t
    return out


def run(prepared: Prepared) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Prove what changed; the ``pr-gate`` document and the warnings for stderr."""
    import onnx

    from ..batch import waivers as waivers_mod
    from ..batch.one_case import BatchOptions
    from ..batch.pool import run_batch
    from .document import build
    from .case_free import fallback, needs_fallback, rejudge
    from .judge import also_found, judge
    req = prepared.request
    result = None
    if prepared.todo:
        tags, label, fingerprint = preflight.tags_of(prepared.pr_docs, req.tags_from)
        result = run_batch(list(prepared.todo), BatchOptions(
            jobs=req.jobs, timeout=req.timeout, numeric=req.numeric, out=prepared.out,
            cache_dir=Path(req.cache_dir) if req.cache_dir is not None else None,
            tags=tags, tag_source=label, tag_fingerprint=fingerprint,
            progress=req.progress))
    records = result.records if result else []
    by_name = {r["case"]: r for r in records}
    pseudo = [{"op": p.change.op, "case": None, "parameters": list(p.by_type)}
              for p in prepared.provings if p.by_type]
    waived, _stale = waivers_mod.apply(list(prepared.waivers), records + pseudo)
    judged = [judge(p, by_name, waived, req.tags_from) for p in prepared.provings]
    # gate/case_free.py: ONNX's node tests judge every changed version (--case-free), or
    # else the versions no case reaches (a new op), where they decide
    points = None
    if _wants_points(req, prepared.provings, prepared.pr_docs, prepared.domain):
        from ..batch.onnx_points import measured
        asked = [p for p in prepared.provings
                 if (req.case_free and not p.unbuilt) or needs_fallback(p)]
        points = measured(req.onnx_src, req.cache_dir, req.onnx_points, True,   # what changed
                          {(p.change.op, p.change.version) for p in asked},
                          {p.change.op for p in asked},
                          _new_ops(req, prepared.provings, prepared.pr_docs))
        judged = (rejudge if req.case_free else fallback)(prepared.provings, judged, points,
                                                          PrTags(prepared.pr_docs,
                                                                 prepared.domain))
    doc = build(prepared.diff, prepared.provings, judged, records,
                also_found(prepared.provings, by_name), onnx_version=onnx.__version__,
                wall_time_s=time.perf_counter() - prepared.started,
                cache_hits=result.cache_hits if result else 0, base_commit=req.base_commit,
                absent=prepared.absent, points=points, domain=prepared.domain)
    warnings = prepared.warnings + tuple(result.warnings if result else ())
    return doc, warnings


def render(doc: dict[str, Any], fmt: str, width: int | None) -> str:
    from ..output.report import to_json
    from .comment import markdown, text
    if fmt == "json":
        return to_json(doc)
    return markdown(doc) if fmt == "markdown" else text(doc, width)


def emit(doc: dict[str, Any], fmt: str, report: str | None, width: int | None,
         stdout, stderr) -> None:
    """The rendering to ``--report`` (stdout then shows the text; JSON stays JSON), or to
    stdout."""
    from ..output.evidence import write_text
    from ..output.ownership import Holds
    rendered = render(doc, fmt, width)
    if report:
        write_text(Path(report), rendered, Holds.PR_COMMENT)
        stdout.write(rendered if fmt == "json" else render(doc, "text", width))
        print(f"{WRITTEN[fmt]} written to {one_line(report)}", file=stderr)
    else:
        stdout.write(rendered)
