"""Command line: ``build_parser()`` and ``main(argv) -> int``; the console script only calls main.

Exit codes: 0 success; 1 a disagreement, an invalid case or a failed proof; 2 bad usage or
a broken case -- always with a one-line message that says what to do.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from . import report
from .case import CaseError

EXIT_OK, EXIT_FINDING, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad command-line input; message is shown as is, exit 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="torch-prover",
        description="Prove ONNX operator differentiability tags with PyTorch autograd "
                    "(ONNX's 'Method 1'), checked by graph mapping and finite differences.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("prove", help="prove one op's tags from its catalogue case")
    p.add_argument("op", help="ONNX op name, e.g. Reshape")
    p.add_argument("--case", help="case name (default: the op's first case)")
    p.add_argument("--all", action="store_true", help="prove every case of the op")
    p.add_argument("--out", default="models", help="evidence directory (default: ./models)")
    p.add_argument("--no-write", action="store_true", help="do not write evidence files")
    p.add_argument("--opset", type=int, help="export opset (default: the case's)")
    p.add_argument("--seed", type=int, help="first seed (the probe uses it and the next one)")
    p.add_argument("--no-numeric", action="store_true", help="skip the onnxruntime check")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")

    t = sub.add_parser("tags", help="print an op's schema tags")
    t.add_argument("op")
    t.add_argument("--opset", type=int, help="schema in force at this opset (default: latest)")
    t.add_argument("--format", choices=("text", "json"), default="text")
    return parser


def _cmd_tags(args: argparse.Namespace) -> int:
    from .tags import canonical_op, schema_tags
    op = canonical_op(args.op)
    tags = schema_tags(op, args.opset)
    if args.format == "json":
        sys.stdout.write(report.to_json(report.tags_json(tags)))
    else:
        sys.stdout.write(report.tags_text(tags, schema_tags(op)))
    return EXIT_OK


def _cmd_prove(args: argparse.Namespace) -> int:
    from .cases import cases_for, find_case
    from .evidence import write_proof
    from .prove import prove_case
    from .tags import canonical_op
    op = canonical_op(args.op)
    if args.all:
        cases = cases_for(op)
        if not cases:
            raise CaseError(f"no case for op {op} in the catalogue; "
                            "`torch-prover coverage` lists what exists")
    else:
        cases = [find_case(op, args.case)]
    changes = {}
    if args.opset is not None:
        changes["opset"] = args.opset
    if args.seed is not None:
        changes["seeds"] = (args.seed, args.seed + 1)
    records, worst = [], EXIT_OK
    for case in cases:
        proof = prove_case(case.replace(**changes) if changes else case,
                           numeric=not args.no_numeric)
        rec = proof.record()
        records.append(rec)
        if not args.no_write:
            where = write_proof(Path(args.out), proof)
            if args.format == "text":
                print(f"evidence written to {where}", file=sys.stderr)
        if proof.failures:
            worst = EXIT_FINDING
        if args.format == "text":
            sys.stdout.write(report.proof_text(rec))
        elif args.format == "markdown":
            sys.stdout.write(report.proof_markdown(rec))
    if args.format == "json":
        sys.stdout.write(report.to_json(records[0] if not args.all else
                                        {"format": 1, "cases": records}))
    return worst


COMMANDS = {"prove": _cmd_prove, "tags": _cmd_tags}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed usage
        return EXIT_OK if exc.code == 0 else EXIT_USAGE
    if not args.command:
        parser.print_help()
        return EXIT_USAGE
    from .tags import UnknownOpError
    try:
        return COMMANDS[args.command](args)
    except (UsageError, UnknownOpError) as exc:
        print(f"torch-prover {args.command}: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return EXIT_USAGE
    except CaseError as exc:
        print(f"torch-prover {args.command}: broken case: {exc}", file=sys.stderr)
        if args.debug:
            raise
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug of ours: one line, traceback only with --debug
        if args.debug:
            raise
        print(f"torch-prover {args.command}: internal error: {type(exc).__name__}: {exc} "
              "(rerun with --debug for the traceback)", file=sys.stderr)
        return EXIT_USAGE


def run() -> None:
    sys.exit(main(sys.argv[1:]))
