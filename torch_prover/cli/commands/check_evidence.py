"""``torch-prover check-evidence DIR``: a tree of evidence directories re-run, each reported
as match, mismatch or cannot run (output/check_evidence.py)."""
from __future__ import annotations

import argparse

from ..outputs import terminal_width

NAME = "check-evidence"


def add_parser(sub) -> None:
    e = sub.add_parser("check-evidence", help="re-run a tree of evidence directories and "
                                              "report match / mismatch / cannot run for each")
    e.add_argument("dir", metavar="DIR", help="an evidence tree (e.g. models) or one case "
                                              "directory")
    e.add_argument("--format", choices=("text", "json"), default="text")


def handle(args: argparse.Namespace) -> int:
    from ...batch.report_io import evidence_record_problem
    from ...output.check_evidence import command
    from ...preflight import not_empty
    return command(not_empty(args.dir, "DIR"), args.format, terminal_width(), evidence_record_problem)
