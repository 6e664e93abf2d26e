"""``torch-prover new-case OP``: a catalogue case scaffold for an op, from its schema
(gate/scaffold.py)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..settings import cache_dir

NAME = "new-case"


def add_parser(sub) -> None:
    n = sub.add_parser("new-case", help="write a catalogue case scaffold for an op, from its "
                                        "schema (docs/pr-gate.md)")
    n.add_argument("op", help="ONNX op name, e.g. Shrink")
    n.add_argument("-o", "--output", help="write here, a new file (default: "
                                          "torch_prover/cases/<op>.py in a torch_prover "
                                          "checkout; - for stdout)")


def handle(args: argparse.Namespace) -> int:
    from ...gate.scaffold import command
    return command(args.op, args.output, Path.cwd(), sys.stdout,
                   [("the result cache", cache_dir(args))])
