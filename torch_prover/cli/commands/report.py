"""``torch-prover report``: a saved batch report (verify-all's or merge's JSON) rendered in
any format, without proving anything again."""
from __future__ import annotations

import argparse

from ..outputs import check_report_outputs, emit_batch

NAME = "report"


def add_parser(sub) -> None:
    o = sub.add_parser("report", help="render a saved batch report (verify-all's or merge's "
                                      "JSON) in any format, without proving anything again")
    o.add_argument("saved", metavar="REPORT.json", help="the JSON report of verify-all or "
                                                        "merge (--format json --report FILE)")
    o.add_argument("--report", metavar="FILE", help="write the rendering here (Markdown past "
                                                    "GitHub's limit: its details beside it)")
    o.add_argument("--format", choices=("text", "json", "markdown", "html"), default="text")


def handle(args: argparse.Namespace) -> int:
    """A saved batch report rendered again: the outputs checked, then the report read
    (``batch/report_io.load_report``, the one reader of a report: validated, its records
    re-checked, the report rebuilt from them), rendered as verify-all would have; the exit
    code is the report's own."""
    from ...batch.report_io import load_report
    from ...output.run_totals import exit_code
    check_report_outputs(args.report, args.format, [("REPORT.json", args.saved)])
    rep = load_report(args.saved, what="REPORT.json")
    emit_batch(rep, args.format, args.report)
    return exit_code(rep)
