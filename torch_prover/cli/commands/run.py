"""``torch-prover run SCRIPT``: run a classic proof script unmodified and prove what it
exports (pr/runner.py); its outputs checked here, before the script runs."""
from __future__ import annotations

import argparse

from ... import preflight
from ...pr.process import DEFAULT_TIMEOUT as RUN_TIMEOUT
from ..options import proof_options, quiet_option

NAME = "run"


def add_parser(sub) -> None:
    r = sub.add_parser(
        "run", help="run a classic proof script unmodified and prove what it exports",
        description="Run a classic 'Method 1' proof script unmodified and prove the model it "
                    "exports. WARNING: this executes the script with your privileges, like "
                    "`python SCRIPT.py`: run only scripts you would run yourself. It runs in a "
                    "child process (its own process group, killed at --timeout); the proof is "
                    "made in torch-prover's process from what the script exported (the ONNX "
                    "model, its inputs, its module saved as a graph), so the script cannot "
                    "change the verdicts.")
    r.add_argument("script", help="path of the proof script (the style of ONNX's Method 1)")
    r.add_argument("--op", help="target ONNX op (default: inferred from the exported graph)")
    r.add_argument("--all-ops", action="store_true",
                   help="also prove every other computing node of the script's graph")
    r.add_argument("--node", type=int, metavar="N",
                   help="when the target op has several nodes, prove node N (its index in the "
                        "graph) only (default: each one)")
    r.add_argument("--timeout", type=float, default=RUN_TIMEOUT,
                   help=f"seconds the script may run before it is killed (default: "
                        f"{RUN_TIMEOUT:g})")
    proof_options(r, ("text", "json", "markdown"), checkout_default=False)
    quiet_option(r)


def handle(args: argparse.Namespace) -> int:
    from ...pr.runner import cmd_run
    if args.out is not None:   # run writes evidence only with --out (it has no --no-write)
        preflight.outputs_checked([preflight.Output("--out", args.out, None)],
                                  [("SCRIPT", args.script), ("--tags-from", args.tags_from)])
    return cmd_run(args)
