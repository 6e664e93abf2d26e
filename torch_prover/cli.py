"""Command line: ``build_parser()`` and ``main(argv) -> int``; the console script only calls main.

Exit codes: 0 success; 1 a disagreement, an invalid case or a failed proof; 2 bad usage, a
broken case or an output that cannot be written -- always with a one-line message that
says what to do, and for bad usage before any work is done (preflight.py).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

from . import preflight
from .errors import EXIT_FINDING, EXIT_OK, EXIT_USAGE, CaseError, OutputError, UsageError
from .pr.process import DEFAULT_TIMEOUT as RUN_TIMEOUT

__all__ = ["build_parser", "main", "run", "UsageError", "EXIT_OK", "EXIT_FINDING", "EXIT_USAGE"]


def _proof_options(parser: argparse.ArgumentParser, formats: tuple[str, ...],
                   out: str | None = "models") -> None:
    """The options every proving command shares, spelled the same everywhere."""
    parser.add_argument("--out", default=out, help=(
        "evidence directory (default: ./models)" if out else
        "write the evidence here (default: none is written, so running a script inside "
        "another checkout leaves no stray ./models)"))
    parser.add_argument("--no-write", action="store_true", help="do not write evidence files")
    parser.add_argument("--no-numeric", action="store_true", help="skip the onnxruntime check")
    parser.add_argument("--tags-from", metavar="DOCS_MD", help=(
        "read tags from ONNX's docs instead of the installed onnx: an Operators.md (each op's "
        "latest version) or a Changelog.md (the version in force at the case's opset)"))
    parser.add_argument("--format", choices=formats, default="text")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors, like every other error of the tool (the usage it
    would print runs to five lines for verify-all; ``--help`` still shows it)."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (`{self.prog} --help` shows the "
                              "usage)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
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

    c = sub.add_parser("coverage", help="list every ai.onnx op: covered by which cases, or why "
                                        "not; with OP, that op's cases and how to prove each")
    c.add_argument("ops", nargs="*", metavar="OP",
                   help="only these ops (several, or comma-separated): each case with its "
                        "`torch-prover prove` command, or why the op has no case")
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
    _proof_options(r, ("text", "json", "markdown"), out=None)

    s = sub.add_parser("script", help="write a standalone proof script for a catalogue case")
    s.add_argument("op")
    s.add_argument("--case", help="case name (default: the op's first case)")
    s.add_argument("-o", "--output", help="write to this file instead of stdout")

    x = sub.add_parser("fix-tags", help="turn disagreements and proposals into a checked patch "
                                        "against ONNX's C++ sources, with its PR text")
    x.add_argument("--onnx-src", required=True, metavar="DIR", help="root of an ONNX checkout")
    x.add_argument("--report", metavar="FILE", help="verify-all's JSON report (default: run "
                                                    "verify-all on the catalogue, cache used)")
    x.add_argument("-o", "--output", default="fix.patch",
                   help="the patch (default: fix.patch); the PR text goes beside it (fix.md)")
    x.add_argument("--ops", help="only these ops' verdicts (comma-separated)")
    x.add_argument("--only", choices=("disagree", "proposed"), help="only these verdicts")
    x.add_argument("--jobs", type=int, default=2, help="workers when running verify-all")

    t = sub.add_parser("tags", help="print an op's schema tags")
    t.add_argument("op")
    t.add_argument("--opset", type=int, help="schema in force at this opset (default: latest)")
    t.add_argument("--format", choices=("text", "json"), default="text")
    return parser


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "torch-prover"


def _check_outputs(args: argparse.Namespace, cases) -> Path | None:
    """Every place the command will write, checked before any work; returns --out."""
    out = None
    if not args.no_write:
        out = preflight.writable_dir(args.out, "--out")
        preflight.evidence_dirs(out, [(c.op, c.name) for c in cases])
    if getattr(args, "cache_dir", None) and not args.no_cache:
        preflight.writable_dir(args.cache_dir, "--cache-dir")
    return out


def _terminal_width() -> int:
    """Width for text output on stdout: the terminal's, 100 when not a TTY (COLUMNS wins)."""
    import shutil
    return shutil.get_terminal_size((100, 24)).columns


def _cmd_verify_all(args: argparse.Namespace) -> int:
    from .output import report
    from .batch import verify
    from .batch.progress import Progress
    from .output.evidence import write_text
    request = verify.Request(
        ops=args.ops, jobs=args.jobs, timeout=args.timeout, numeric=not args.no_numeric,
        out=None if args.no_write else args.out,
        cache_dir=None if args.no_cache else args.cache_dir, tags_from=args.tags_from,
        waivers=args.waivers, report=args.report, progress=Progress())
    prepared = verify.prepare(request)
    outcome = verify.run(prepared)
    for gone in outcome.removed:
        print(f"removed evidence of a case that no longer exists: {gone}", file=sys.stderr)
    for warning in outcome.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    rep = outcome.report
    if args.format == "json":
        text = report.to_json(rep)
    elif args.format == "markdown":
        text = report.batch_markdown(rep)
    elif args.format == "html":
        from .output.html_report import render_html
        text = render_html(rep)
    else:
        text = report.batch_text(rep, _terminal_width())
    if args.report is not None:
        write_text(Path(args.report), text)
        sys.stdout.write(report.batch_text(rep, _terminal_width()))
        print(f"report written to {args.report}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return outcome.exit_code


def _cmd_coverage(args: argparse.Namespace) -> int:
    from .output import report
    from .output.coverage import coverage, coverage_text, op_text, summary
    from .tags.schema import canonical_op
    entries = coverage()
    if args.ops:  # "coverage Reshape Softmax" or "coverage Reshape,Softmax"; unknown: exit 2
        names = [n.strip() for arg in args.ops for n in arg.split(",") if n.strip()]
        if not names:
            raise UsageError("no op named; `torch-prover coverage` lists every op")
        wanted = list(dict.fromkeys(canonical_op(n) for n in names))
        by_op = {e["op"]: e for e in entries}  # every op canonical_op accepts has an entry
        entries = [by_op[op] for op in wanted]
    if args.format == "json":
        sys.stdout.write(report.to_json({"format": 1, "summary": summary(entries), "ops": entries}))
    elif args.ops:
        sys.stdout.write(op_text(entries, _terminal_width()))
    else:
        sys.stdout.write(coverage_text(entries, _terminal_width()))
    return EXIT_OK


def _cmd_tags(args: argparse.Namespace) -> int:
    from .output import report
    from .tags.schema import canonical_op, schema_tags
    op = canonical_op(args.op)
    tags = schema_tags(op, preflight.schema_opset(args.opset))
    if args.format == "json":
        sys.stdout.write(report.to_json(report.tags_json(tags)))
    else:
        sys.stdout.write(report.tags_text(tags, schema_tags(op), _terminal_width()))
    return EXIT_OK


def _where_to_look(op: str) -> str:
    """The hint after "no such case": an op without a case whose types decide it is
    checked by verify-all, not prove."""
    from .cases import cases_for
    from .output.coverage import coverage
    if not cases_for(op) and any(e["op"] == op and e.get("by_type") for e in coverage()):
        return (f"its tags are decided by type: `torch-prover coverage {op}` shows them, "
                f"`torch-prover verify-all --ops {op}` checks them")
    return "`torch-prover coverage` lists what exists"


def _cmd_prove(args: argparse.Namespace) -> int:
    from .output import report
    from .cases import cases_for, find_case
    from .output.evidence import write_proof
    from .engine.prove import prove_case
    from .tags.schema import canonical_op
    op = canonical_op(args.op)
    if args.all and args.case is not None:
        raise UsageError(f"--all proves every case of {op}; --case names one: give one of them")
    if args.all:
        cases = cases_for(op)
        if not cases:
            raise UsageError(f"no case for op {op} in the catalogue; {_where_to_look(op)}")
    else:
        try:
            cases = [find_case(op, args.case)]
        except CaseError as exc:   # a name that is not in the catalogue: usage, not a bug
            raise UsageError(f"{exc}; {_where_to_look(op)}") from None
        others = len(cases_for(op)) - 1
        if args.case is None and others:
            print(f"note: {op} has {others + 1} cases; proving the first ({cases[0].name}); "
                  f"--all proves every one, --case NAME another", file=sys.stderr)
    preflight.seed(args.seed)
    for case in cases:
        preflight.opset_for(case, args.opset)
    _check_outputs(args, cases)
    changes = {}
    if args.opset is not None:
        changes["opset"] = args.opset
    if args.seed is not None:
        changes["seeds"] = (args.seed, args.seed + 1)
    tags, label, _ = preflight.tag_source(args.tags_from)
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
            sys.stdout.write(report.proof_text(rec, _terminal_width()))
        elif args.format == "markdown":
            from .pr.gen import script_for
            sys.stdout.write(report.proof_markdown(rec, script=script_for(proved)))
    if args.format == "json":
        sys.stdout.write(report.to_json(records[0] if not args.all else
                                        {"format": 1, "cases": records}))
    return worst


def _cmd_run(args: argparse.Namespace) -> int:
    from .pr.runner import cmd_run
    if args.out is not None and not args.no_write:
        preflight.writable_dir(args.out, "--out")
        preflight.outputs_apart([("--out", args.out)],
                                [("SCRIPT", args.script), ("--tags-from", args.tags_from)])
    return cmd_run(args)


def _cmd_script(args: argparse.Namespace) -> int:
    from .pr.gen import cmd_script
    if args.output is not None:
        preflight.writable_file(args.output, "-o")
    return cmd_script(args)


def _cmd_fix_tags(args: argparse.Namespace) -> int:
    from .fix.command import cmd_fix_tags
    return cmd_fix_tags(args, _default_cache_dir())


COMMANDS = {"prove": _cmd_prove, "tags": _cmd_tags, "verify-all": _cmd_verify_all,
            "coverage": _cmd_coverage, "run": _cmd_run, "script": _cmd_script,
            "fix-tags": _cmd_fix_tags}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed usage
        return EXIT_OK if exc.code == 0 else EXIT_USAGE
    if not args.command:
        parser.print_help()
        return EXIT_USAGE
    from .tags.schema import UnknownOpError
    try:
        return COMMANDS[args.command](args)
    except (UsageError, UnknownOpError) as exc:
        print(f"torch-prover {args.command}: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return EXIT_USAGE
    except OutputError as exc:
        print(f"torch-prover {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:   # a disk that filled or failed while writing
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"torch-prover {args.command}: cannot write{where}: "
              f"{exc.strerror or type(exc).__name__}", file=sys.stderr)
        if args.debug:
            raise
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
    try:
        code = main(sys.argv[1:])
    except KeyboardInterrupt:     # outside a command: argument parsing, the first imports
        print("interrupted", file=sys.stderr)
        code = 130
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, OSError):  # `torch-prover ... | head`: the reader left
            pass
    os._exit(code)
