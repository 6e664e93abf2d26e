"""``torch-prover verify-all``: prove every catalogue case (or the schema versions asked) and
report all tags; with ``--changed-from BASE``, PR mode: the PR gate (gate/command.py)."""
from __future__ import annotations

import argparse
import os
import sys

from ...ci import options as ci_options
from ...output.inert import one_line
from ..options import proof_options, quiet_option
from ..outputs import emit_batch, terminal_width
from ..settings import default_out, node_tests_src

NAME = "verify-all"


def add_parser(sub) -> None:
    v = sub.add_parser("verify-all", help="prove every catalogue case and report all tags")
    v.add_argument("--ops", help="comma-separated ops (default: every op with a case)")
    v.add_argument("--jobs", type=int, help="parallel workers (default: 2, or [tool.torch-prover] "
                                            "jobs in pyproject.toml)")
    v.add_argument("--report", metavar="FILE", help="write the report here (format: --format)")
    v.add_argument("--waivers", metavar="FILE", help="TOML file of known disagreements")
    proof_options(v, ("text", "json", "markdown", "html"))
    v.add_argument("--no-cache", action="store_true", help="recompute every case")
    quiet_option(v)
    v.add_argument("--cache-dir", help="result cache (default: ~/.cache/torch-prover, or "
                                       "[tool.torch-prover] cache-dir in pyproject.toml)")
    v.add_argument("--timeout", type=float, default=120.0, help="per-case timeout in seconds")
    v.add_argument("--versions", default="latest", metavar="latest|all|A..B", help=(
        "schema versions to prove: latest (each case at its own opset, the default), all "
        "(every ai.onnx schema version), or those in force in opsets A..B"))
    v.add_argument("--shard", metavar="K/N", help="prove the K-th of N slices of the run (by "
                                                 "op); `torch-prover merge` joins the JSON "
                                                 "reports")
    ci_options.add_arguments(v)
    v.add_argument("--changed-from", metavar="BASE", help=(
        "PR mode: prove only the tags the PR changes against the base branch's "
        "docs/Changelog.md or docs/Operators.md -- the PR's tags from its docs/Changelog.md "
        "with --tags-from (no build), else the installed onnx's (the PR's build) -- and "
        "print a PR comment (docs/pr-gate.md); exit 1 when the evidence refutes a tag the "
        "PR writes"))
    v.add_argument("--no-torchscript", action="store_true", help=(
        "prove with the dynamo exporter only (below opset 18: its export relabelled down "
        "with adapters); the default where torch has no TorchScript exporter"))
    v.add_argument("--case-free", action="store_true", help=(
        "decide as if the catalogue had no case: from ONNX's node tests (the numeric witness "
        "at their points) and function bodies only; proves no case, writes no evidence"))
    v.add_argument("--onnx-points", type=int, default=4, metavar="N", help=(
        "measure every decided parameter also at ONNX's own node tests: at most N tests per "
        "schema version (default 4; 0: none); with --onnx-src, the checkout's committed "
        "onnx/backend/test/data/node (docs/verdicts.md, \"ONNX's points\")"))
    v.add_argument("--domain", default="ai.onnx", metavar="DOMAIN", help=(
        "the domain to prove: ai.onnx (the catalogue, the default), or ai.onnx.ml, "
        "ai.onnx.preview.training or ai.onnx.preview (their reference cases, each at its "
        "own schema version)"))


def handle(args: argparse.Namespace) -> int:
    if args.changed_from is None:
        _tests_ahead(args)   # before torch's imports: the other core is idle through them
    try:
        return _handle(args)
    finally:
        from ...batch import points_early
        points_early.stop()


def _tests_ahead(args: argparse.Namespace) -> None:
    """Start building ONNX's tests of the run's likely ops (batch/points_early.py) when the
    run will measure ONNX's points beside its batch (``points_early.beside_batch``, the
    predicate batch/verify.py asks of the request this command line becomes): it writes
    nothing until the selection is checked."""
    from ...batch import points_early
    if not points_early.beside_batch(
            numeric=not args.no_numeric, onnx_points=args.onnx_points,
            default_domain=args.domain == "ai.onnx", jobs=args.jobs, case_free=args.case_free,
            onnx_src=node_tests_src(args), cache_dir=None if args.no_cache else args.cache_dir):
        return
    points_early.start(args.cache_dir, args.ops)


def _handle(args: argparse.Namespace) -> int:
    from ...batch import timeline, verify
    from ...batch.progress import Progress
    if args.changed_from is not None:
        if args.domain != "ai.onnx":
            from ...errors import UsageError
            raise UsageError("--changed-from gates ai.onnx's tags; give no --domain with it")
        return _pr_gate(args)
    note = default_out(args)
    ci = ci_options.plan(args, args.argv)
    request = verify.Request(
        ops=args.ops, jobs=args.jobs, timeout=args.timeout, numeric=not args.no_numeric,
        out=None if args.no_write else args.out,
        cache_dir=None if args.no_cache else args.cache_dir, tags_from=args.tags_from,
        waivers=args.waivers, versions=args.versions, shard=args.shard, report=args.report,
        outputs=tuple(ci.outputs()), report_format=args.format, progress=None if args.quiet else Progress(),
        torchscript=False if args.no_torchscript else None,
        onnx_points=args.onnx_points, case_free=args.case_free, onnx_src=node_tests_src(args),
        domain=args.domain)
    timeline.mark("verify-all: prepare")
    prepared = verify.prepare(request)
    timeline.mark("verify-all: prepared")
    if note:
        print(note, file=sys.stderr)
    outcome = verify.run(prepared)
    for gone in outcome.removed:
        print(f"removed evidence of a case that no longer exists or no longer exports: {gone}", file=sys.stderr)
    for warning in outcome.warnings:
        print(f"warning: {one_line(warning)}", file=sys.stderr)   # output/inert.py
    emit_batch(outcome.report, args.format, args.report)
    ci_options.emit(ci, outcome.report, args.format)
    timeline.mark("verify-all: report written")
    return outcome.exit_code


def _pr_gate(args: argparse.Namespace) -> int:
    """``verify-all --changed-from BASE``: the PR gate (gate/command.py)."""
    from ...batch.progress import Progress
    from ...gate import command as gate
    gate.refuse_combinations(args.ops, args.versions, args.shard, args.format)
    note = default_out(args)
    ci = ci_options.plan(args, args.argv)
    prepared = gate.prepare(gate.Request(
        changed_from=args.changed_from, jobs=args.jobs, timeout=args.timeout,
        numeric=not args.no_numeric, out=None if args.no_write else args.out,
        cache_dir=None if args.no_cache else args.cache_dir, waivers=args.waivers,
        report=args.report, progress=None if args.quiet else Progress(), outputs=tuple(ci.outputs()),
        torchscript=False if args.no_torchscript else None, tags_from=args.tags_from,
        case_free=args.case_free, onnx_points=args.onnx_points,
        onnx_src=args.onnx_src,   # its tests, committed or generated: never the installed
        base_commit=os.environ.get(gate.BASE_COMMIT) or None))
    if note:
        print(note, file=sys.stderr)
    doc, warnings = gate.run(prepared)
    for warning in warnings:
        print(f"warning: {one_line(warning)}", file=sys.stderr)   # output/inert.py
    gate.emit(doc, args.format, args.report, terminal_width(), sys.stdout, sys.stderr)
    ci_options.emit(ci, doc, args.format)
    return doc["exit_code"]

