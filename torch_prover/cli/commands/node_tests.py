"""``torch-prover node-tests``: an evidence tree copied into the layout ONNX's backend test
loader reads, and optionally run (ci/node_tests_cmd.py)."""
from __future__ import annotations

import argparse

from ..outputs import terminal_width

NAME = "node-tests"


def add_parser(sub) -> None:
    n = sub.add_parser("node-tests", help="copy an evidence tree into the layout ONNX's "
                                          "backend test loader reads (test_<case> "
                                          "directories), and optionally run it")
    n.add_argument("models", metavar="MODELS", help="an evidence tree (e.g. models)")
    n.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="where to write the tests (not inside MODELS, nor MODELS in it)")
    n.add_argument("--run", action="store_true", help="run every test written: onnxruntime's "
                                                      "backend, or onnx.reference's where "
                                                      "the record names it; exit 1 on a "
                                                      "failure")
    n.add_argument("--format", choices=("text", "json"), default="text")


def handle(args: argparse.Namespace) -> int:
    from ...ci.node_tests_cmd import command
    from ...preflight import not_empty
    return command(not_empty(args.models, "MODELS"), args.output, args.run, args.format, terminal_width())
