"""``torch-prover merge``: join the JSON reports of ``verify-all --shard K/N`` into the
report (and exit code) of one unsharded run."""
from __future__ import annotations

import argparse

from ...ci import options as ci_options
from ..outputs import check_report_outputs, emit_batch

NAME = "merge"


def add_parser(sub) -> None:
    m = sub.add_parser("merge", help="join the JSON reports of verify-all --shard K/N into the "
                                     "report (and exit code) of one unsharded run")
    m.add_argument("reports", nargs="+", metavar="REPORT", help="every shard's JSON report")
    m.add_argument("--report", metavar="FILE", help="write the merged report here")
    m.add_argument("--format", choices=("text", "json", "markdown", "html"), default="text")
    ci_options.add_arguments(m)


def handle(args: argparse.Namespace) -> int:
    from ...batch.merge import merge
    from ...batch.summary import exit_code
    ci = ci_options.plan(args, args.argv)
    check_report_outputs(args.report, args.format, [("REPORT", r) for r in args.reports],
                         ci.outputs())
    rep = merge(args.reports)
    emit_batch(rep, args.format, args.report)
    ci_options.emit(ci, rep, args.format)
    return exit_code(rep)
