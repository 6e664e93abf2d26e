"""``torch-prover merge``: join the JSON reports of ``verify-all --shard K/N`` into the
report (and exit code) of one unsharded run."""
from __future__ import annotations

import argparse

from ...ci import options as ci_options
from ..outputs import check_report_outputs, emit_batch

NAME = "merge"


def add_parser(sub) -> None:
    m = sub.add_parser("merge", help="join the JSON reports of verify-all --shard K/N into the "
                                     "report (and exit code) of one unsharded run, or the PR "
                                     "gate's reports of several domains into one verdict")
    m.add_argument("reports", nargs="+", metavar="REPORT", help=(
        "every shard's JSON report; or the JSON reports of verify-all --changed-from, one "
        "per domain (docs/Changelog.md, docs/Changelog-ml.md: docs/pr-gate.md)"))
    m.add_argument("--report", metavar="FILE", help="write the merged report here")
    m.add_argument("--format", choices=("text", "json", "markdown", "html"), default="text")
    ci_options.add_arguments(m)


def handle(args: argparse.Namespace) -> int:
    from ...batch.merge import merge
    from ...batch.summary import exit_code
    ci = ci_options.plan(args, args.argv)
    if _gate_reports(args.reports):
        return _merge_gate(args, ci)
    check_report_outputs(args.report, args.format, [("REPORT", r) for r in args.reports],
                         ci.outputs())
    rep = merge(args.reports)
    emit_batch(rep, args.format, args.report)
    ci_options.emit(ci, rep, args.format)
    return exit_code(rep)


def _gate_reports(paths: list[str]) -> bool:
    """Whether the first report is the PR gate's (``kind: pr-gate``); each is then read as
    one (gate/combine.py), the rest as shards."""
    import json

    from ...inputs import Bound, InputError, read_bytes
    try:
        doc = json.loads(read_bytes(paths[0], Bound.REPORT, "REPORT"))
    except (InputError, ValueError, RecursionError):
        return False   # the shards' reader says what is wrong with it, in one line
    return isinstance(doc, dict) and doc.get("kind") == "pr-gate"


def _merge_gate(args: argparse.Namespace, ci) -> int:
    """The PR gate's reports of several domains: one document, rendered as one run's
    (comment, annotations, step summary, JUnit); its exit code the worst of theirs."""
    import sys

    from ...errors import UsageError
    from ...gate import command as gate
    from ...gate.combine import combine, read
    from ...output.ownership import Holds
    from ... import preflight
    from ..outputs import terminal_width
    if args.format not in gate.FORMATS:
        raise UsageError(f"merge of PR gate reports with --format {args.format}: it writes "
                         f"{', '.join(gate.FORMATS)}")
    preflight.outputs_checked(
        ([preflight.Output("--report", args.report, Holds.PR_COMMENT)]
         if args.report is not None else []) + list(ci.outputs()),
        [("REPORT", r) for r in args.reports])
    doc = combine(read(args.reports))
    gate.emit(doc, args.format, args.report, terminal_width(), sys.stdout, sys.stderr)
    ci_options.emit(ci, doc, args.format)
    return doc["exit_code"]
