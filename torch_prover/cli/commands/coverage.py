"""``torch-prover coverage``: every ai.onnx op, covered by which cases or why not; with OP,
that op's cases and how to prove each; with ``--versions``, the per-version plan."""
from __future__ import annotations

import argparse
import sys

from ...errors import EXIT_OK, UsageError
from ...output import documents, report
from ..outputs import terminal_width
from ..settings import cache_dir

NAME = "coverage"


def add_parser(sub) -> None:
    c = sub.add_parser("coverage", help="list every ai.onnx op: covered by which cases, or why "
                                        "not; with OP, that op's cases and how to prove each")
    c.add_argument("ops", nargs="*", metavar="OP",
                   help="only these ops (several, or comma-separated): each case with its "
                        "`torch-prover prove` command, or why the op has no case")
    c.add_argument("--format", choices=("text", "json"), default="text")
    c.add_argument("--versions", metavar="latest|all|A..B", help=(
        "also show, per schema version, which case variant would prove it (exporter, "
        "opset), or how it is decided without one"))
    c.add_argument("--no-torchscript", action="store_true", help=(
        "with --versions: the plan of verify-all --no-torchscript"))
    c.add_argument("--domain", default="ai.onnx", metavar="DOMAIN", help=(
        "ai.onnx (the default), or another domain onnx registers (ai.onnx.ml, "
        "ai.onnx.preview.training, ai.onnx.preview): each op's cases and how each schema "
        "version is decided, from the shipped table"))


def handle(args: argparse.Namespace) -> int:
    from ...batch.coverage_case_free import entries_with_case_free
    from ...output.coverage import coverage, coverage_text, op_text, summary, summary_line
    from ...tags.schema import canonical_op
    if args.no_torchscript and args.versions is None:   # it changes the per-version plan only
        raise UsageError("--no-torchscript shows the plan of verify-all --no-torchscript per "
                         "schema version: give it with --versions (e.g. --versions all)")
    if args.domain != "ai.onnx":
        return _other_domain(args)
    entries = coverage()
    if args.ops:  # "coverage Reshape Softmax" or "coverage Reshape,Softmax"; unknown: exit 2
        names = [n.strip() for arg in args.ops for n in arg.split(",") if n.strip()]
        if not names:
            raise UsageError("no op named; `torch-prover coverage` lists every op")
        wanted = list(dict.fromkeys(canonical_op(n) for n in names))
        by_op = {e["op"]: e for e in entries}  # every op canonical_op accepts has an entry
        entries = [by_op[op] for op in wanted]
    if args.versions is not None:   # every schema version and how it would be decided
        from ...batch.versions_plan import coverage_versions_output
        text, notes = coverage_versions_output(entries, args.versions, args.format, False
                                               if args.no_torchscript else None, cache_dir(args))
        sys.stdout.write(text)
        for note in notes:
            print(note, file=sys.stderr)
        return EXIT_OK
    entries, notes = entries_with_case_free(entries, cache_dir(args))   # no case: ONNX's tests
    for note in notes:
        print(note, file=sys.stderr)
    if args.format == "json":
        sys.stdout.write(report.to_json(documents.coverage_doc(
            summary(entries), entries, summary_line(entries))))
    elif args.ops:
        sys.stdout.write(op_text(entries, terminal_width()))
    else:
        sys.stdout.write(coverage_text(entries, terminal_width()))
    return EXIT_OK


def _other_domain(args: argparse.Namespace) -> int:
    """``--domain`` other than ai.onnx: its ops (batch/domains.py), those named if any."""
    import json

    from ...batch import domains
    if args.versions is not None or args.no_torchscript:
        raise UsageError("--versions plans ai.onnx's schema versions; --domain "
                         f"{args.domain} lists every version of its ops already")
    entries = domains.coverage_entries(args.domain)
    if not entries:
        raise UsageError(f"--domain {args.domain}: the table has no op of that domain")
    names = [n.strip() for arg in args.ops for n in arg.split(",") if n.strip()]
    unknown = sorted(set(names) - {e["op"] for e in entries})
    if unknown:
        raise UsageError(f"no op {unknown[0]} in domain {args.domain}")
    entries = [e for e in entries if not names or e["op"] in names]
    sys.stdout.write(json.dumps(entries, indent=2) + "\n" if args.format == "json"
                     else domains.coverage_text(entries))
    return EXIT_OK
