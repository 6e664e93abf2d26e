"""Command line: ``build_parser()`` and ``main(argv) -> int``; the console script only calls main.

Exit codes: 0 success; 1 a disagreement, an invalid case or a failed proof; 2 bad usage or
a broken case -- always with a one-line message that says what to do.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

from . import report
from .case import CaseError
from .script_process import DEFAULT_TIMEOUT as RUN_TIMEOUT

EXIT_OK, EXIT_FINDING, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad command-line input; message is shown as is, exit 2."""


def _proof_options(parser: argparse.ArgumentParser, formats: tuple[str, ...]) -> None:
    """The options every proving command shares, spelled the same everywhere."""
    parser.add_argument("--out", default="models", help="evidence directory (default: ./models)")
    parser.add_argument("--no-write", action="store_true", help="do not write evidence files")
    parser.add_argument("--no-numeric", action="store_true", help="skip the onnxruntime check")
    parser.add_argument("--tags-from", metavar="OPERATORS_MD",
                        help="read tags from an ONNX Operators.md instead of the installed onnx")
    parser.add_argument("--format", choices=formats, default="text")


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
    p.add_argument("--opset", type=int, help="export opset (default: the case's)")
    p.add_argument("--seed", type=int, help="first seed (the probe uses it and the next one)")
    _proof_options(p, ("text", "json", "markdown"))

    v = sub.add_parser("verify-all", help="prove every catalogue case and report all tags")
    v.add_argument("--ops", help="comma-separated ops (default: every op with a case)")
    v.add_argument("--jobs", type=int, default=max(1, min(2, os.cpu_count() or 1)),
                   help="parallel workers (default: 2)")
    v.add_argument("--report", metavar="FILE", help="write the report here (format: --format)")
    v.add_argument("--waivers", metavar="FILE", help="TOML file of known disagreements")
    _proof_options(v, ("text", "json", "markdown", "html"))
    v.add_argument("--no-cache", action="store_true", help="recompute every case")
    v.add_argument("--cache-dir", default=str(_default_cache_dir()), help="result cache")
    v.add_argument("--timeout", type=float, default=120.0, help="per-case timeout in seconds")

    c = sub.add_parser("coverage", help="list every ai.onnx op: covered by which cases, or why not")
    c.add_argument("--format", choices=("text", "json"), default="text")

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
    r.add_argument("--timeout", type=float, default=RUN_TIMEOUT,
                   help=f"seconds the script may run before it is killed (default: "
                        f"{RUN_TIMEOUT:g})")
    _proof_options(r, ("text", "json", "markdown"))

    s = sub.add_parser("script", help="write a standalone proof script for a catalogue case")
    s.add_argument("op")
    s.add_argument("--case", help="case name (default: the op's first case)")
    s.add_argument("-o", "--output", help="write to this file instead of stdout")

    t = sub.add_parser("tags", help="print an op's schema tags")
    t.add_argument("op")
    t.add_argument("--opset", type=int, help="schema in force at this opset (default: latest)")
    t.add_argument("--format", choices=("text", "json"), default="text")
    return parser


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "torch-prover"


def _load_docs(path: str | None):
    """The OperatorsMd for --tags-from, or None for the installed onnx."""
    if not path:
        return None
    from .operators_md import OperatorsMd, OperatorsMdError
    try:
        return OperatorsMd.from_file(path)
    except OperatorsMdError as exc:
        raise UsageError(f"--tags-from: {exc}") from None


def _tags_of(doc, path: str | None):
    """(tags function, label, fingerprint) of a loaded docs file, or of the installed onnx."""
    if doc is None:
        return None, "onnx.defs", ""
    import hashlib
    return doc.tags, doc.source, hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _tag_source(path: str | None):
    """(tags function, label, fingerprint) for --tags-from, or the installed onnx."""
    return _tags_of(_load_docs(path), path)


def _selected_cases(ops_arg: str | None):
    from .cases import all_cases, all_missing, cases_for
    from .tags import canonical_op
    if not ops_arg:
        return list(all_cases())
    chosen = []
    for name in [o.strip() for o in ops_arg.split(",") if o.strip()]:
        op = canonical_op(name)
        mine = cases_for(op)
        if not mine:
            category, reason = all_missing().get(op, ("not yet written", "no case yet"))
            raise UsageError(f"no case for op {op} ({category}: {reason})")
        chosen.extend(mine)
    return chosen


class _Progress:
    """A one-line progress bar on a terminal; silent otherwise."""

    def __init__(self, stream=sys.stderr):
        self.stream = stream
        self.on = stream.isatty()

    def __call__(self, done: int, total: int, label: str) -> None:
        if not self.on:
            return
        width = 30
        filled = int(width * done / max(total, 1))
        self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} "
                          f"{label[:40]:<40}")
        if done == total:
            self.stream.write("\n")
        self.stream.flush()


def _cmd_verify_all(args: argparse.Namespace) -> int:
    from .batch import BatchOptions, run_batch
    from .coverage import coverage
    from .evidence import prune, write_index, write_text
    from . import waivers as waivers_mod
    cases = _selected_cases(args.ops)
    waivers = []
    if args.waivers:
        try:
            waivers = waivers_mod.load(args.waivers)
        except waivers_mod.WaiverError as exc:
            raise UsageError(str(exc)) from None
    doc = _load_docs(args.tags_from)
    tags, label, fingerprint = _tags_of(doc, args.tags_from)
    out = None if args.no_write else Path(args.out)
    opts = BatchOptions(jobs=args.jobs, timeout=args.timeout, numeric=not args.no_numeric,
                        out=out, cache_dir=None if args.no_cache else Path(args.cache_dir),
                        tags=tags, tag_source=label, tag_fingerprint=fingerprint,
                        progress=_Progress())
    result = run_batch(cases, opts)
    waived, stale = waivers_mod.apply(waivers, result.records)
    missing = {}
    if doc is not None:
        for op in sorted({c.op for c in cases}):
            params = doc.missing_parameters(op)
            if params:
                missing[op] = params
    rep = report.batch_report(result.records, coverage(), result.wall_time_s, waived, stale,
                              result.cache_hits, label, missing, args.tags_from)
    if out is not None and not args.ops:
        for gone in prune(out, {(c.op, c.name) for c in cases}):
            print(f"removed evidence of a case that no longer exists: {gone}", file=sys.stderr)
        write_index(out, rep)
    if args.format == "json":
        text = report.to_json(rep)
    elif args.format == "markdown":
        text = report.batch_markdown(rep)
    elif args.format == "html":
        from .html_report import render_html
        text = render_html(rep)
    else:
        text = report.batch_text(rep)
    if args.report:
        write_text(Path(args.report), text)
        sys.stdout.write(report.batch_text(rep))
        print(f"report written to {args.report}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    s = rep["summary"]
    return EXIT_FINDING if (s["unwaived_disagreements"] or s["failed_cases"]
                            or s["invalid_cases"] or s["unexpected_inconclusive"]) else EXIT_OK


def _cmd_coverage(args: argparse.Namespace) -> int:
    from .coverage import coverage, coverage_text
    entries = coverage()
    if args.format == "json":
        sys.stdout.write(report.to_json({"format": 1, "ops": entries}))
    else:
        sys.stdout.write(coverage_text(entries))
    return EXIT_OK


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
    tags, label, _ = _tag_source(args.tags_from)
    records, worst = [], EXIT_OK
    for case in cases:
        proved = case.replace(**changes) if changes else case
        proof = prove_case(proved, numeric=not args.no_numeric, tags=tags, tag_source=label)
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
            from .script_gen import script_for
            sys.stdout.write(report.proof_markdown(rec, script=script_for(proved)))
    if args.format == "json":
        sys.stdout.write(report.to_json(records[0] if not args.all else
                                        {"format": 1, "cases": records}))
    return worst


def _cmd_run(args: argparse.Namespace) -> int:
    from .script_runner import cmd_run
    return cmd_run(args)


def _cmd_script(args: argparse.Namespace) -> int:
    from .script_gen import cmd_script
    return cmd_script(args)


COMMANDS = {"prove": _cmd_prove, "tags": _cmd_tags, "verify-all": _cmd_verify_all,
            "coverage": _cmd_coverage, "run": _cmd_run, "script": _cmd_script}


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
    """Console entry point. Exits without interpreter teardown: collecting the exporter's
    and torch's heaps at exit takes ~2 s, a third of a one-op proof, and nothing of ours
    needs it (files are written atomically and closed, workers are joined)."""
    code = main(sys.argv[1:])
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, OSError):  # `torch-prover ... | head`: the reader left
            pass
    os._exit(code)
