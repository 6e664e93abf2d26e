"""``torch-prover script OP``: a catalogue case written as a standalone proof script
(pr/gen.py)."""
from __future__ import annotations

import argparse

from ... import preflight

NAME = "script"


def add_parser(sub) -> None:
    s = sub.add_parser("script", help="write a standalone proof script for a catalogue case")
    s.add_argument("op")
    s.add_argument("--case", help="case name (default: the op's first case)")
    s.add_argument("-o", "--output", help="write to this file instead of stdout")


def handle(args: argparse.Namespace) -> int:
    from ...pr.gen import cmd_script
    if args.output is not None:
        from ...output.ownership import Holds
        preflight.outputs_checked([preflight.Output("-o", args.output, Holds.SCRIPT)])
    return cmd_script(args)
