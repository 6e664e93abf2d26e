"""Command line: ``build_parser()`` and ``main(argv) -> int``; the console script only calls main.

Exit codes (errors.py): 0 success; 1 a disagreement, an invalid case or a failed proof; 2 bad
usage, a broken case or an output that cannot be written -- always with a one-line message
that says what to do, and for bad usage before any work is done (preflight.py); 3 a bug of
ours (internal error), its traceback under --debug. ``main`` is the one place errors become
exit codes (``ProverError.exit_code``); with ``--format json`` every exit prints one JSON
object on stdout.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

from . import __version__, preflight
from .ci import options as ci_options
from .output import documents, report
from .errors import (EXIT_BUG, EXIT_FINDING, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, CaseError,
                     Outcome, OutputError, ProverError, UsageError, first_line)
from .pr.process import DEFAULT_TIMEOUT as RUN_TIMEOUT
from .vocab import DocKind

__all__ = ["build_parser", "main", "run", "UsageError", "EXIT_OK", "EXIT_FINDING", "EXIT_USAGE",
           "EXIT_BUG"]


def _proof_options(parser: argparse.ArgumentParser, formats: tuple[str, ...],
                   checkout_default: bool = True) -> None:
    """The options every proving command shares, spelled the same everywhere."""
    parser.add_argument("--out", default=None, help=(
        "evidence directory (default: ./models inside a torch_prover checkout; elsewhere "
        "none is written)" if checkout_default else
        "write the evidence here (default: none is written, so running a script inside "
        "another checkout leaves no stray ./models)"))
    if checkout_default:    # run writes nothing without --out: a --no-write would be the default
        parser.add_argument("--no-write", action="store_true", help="do not write evidence files")
    parser.add_argument("--no-numeric", action="store_true", help="skip the onnxruntime check")
    parser.add_argument("--tags-from", metavar="DOCS_MD", help=(
        "read tags from ONNX's docs instead of the installed onnx: an Operators.md (each op's "
        "latest version) or a Changelog.md (the version in force at the case's opset)"))
    parser.add_argument("--format", choices=formats, default="text")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors, like every other error of the tool (the usage it
    would print runs to five lines for verify-all; ``--help`` still shows it), remembering
    the message: with ``--format json`` the error document on stdout carries it as its
    ``reason``."""

    last_error: str | None = None

    def error(self, message: str):  # type: ignore[override]
        _Parser.last_error = message
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (`{self.prog} --help` shows the "
                              "usage)\n")


def build_parser() -> argparse.ArgumentParser:
    _Parser.last_error = None
    parser = _Parser(
        prog="torch-prover",
        description="Prove ONNX operator differentiability tags with PyTorch autograd "
                    "(ONNX's 'Method 1'), checked by graph mapping and finite differences.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
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
    v.add_argument("--jobs", type=int, help="parallel workers (default: 2, or [tool.torch-prover] "
                                            "jobs in pyproject.toml)")
    v.add_argument("--report", metavar="FILE", help="write the report here (format: --format)")
    v.add_argument("--waivers", metavar="FILE", help="TOML file of known disagreements")
    _proof_options(v, ("text", "json", "markdown", "html"))
    v.add_argument("--no-cache", action="store_true", help="recompute every case")
    v.add_argument("--cache-dir", help="result cache (default: ~/.cache/torch-prover, or "
                                       "[tool.torch-prover] cache-dir in pyproject.toml)")
    v.add_argument("--timeout", type=float, default=120.0, help="per-case timeout in seconds")
    v.add_argument("--versions", default="latest", metavar="latest|all|A..B", help=(
        "schema versions to prove: latest (each case at its own opset, the default), all "
        "(every ai.onnx schema version), or those in force in opsets A..B"))
    v.add_argument("--shard", metavar="K/N", help="prove the K-th of N slices of the run (by "
                                                 "op); `torch-prover merge` joins the JSON "
                                                 "reports")
    ci_options.add_arguments(v)
    v.add_argument("--changed-from", metavar="BASE", help=(
        "PR mode: prove only the tags the PR changes against the base branch's "
        "docs/Changelog.md or docs/Operators.md -- the PR's tags from its docs/Changelog.md "
        "with --tags-from (no build), else the installed onnx's (the PR's build) -- and "
        "print a PR comment (docs/pr-gate.md); exit 1 when the evidence refutes a tag the "
        "PR writes"))
    v.add_argument("--no-torchscript", action="store_true", help=(
        "prove with the dynamo exporter only (below opset 18: its export relabelled down "
        "with adapters); the default where torch has no TorchScript exporter"))
    v.add_argument("--case-free", action="store_true", help=(
        "decide as if the catalogue had no case: from ONNX's node tests (the numeric witness "
        "at their points) and function bodies only; proves no case, writes no evidence"))
    v.add_argument("--onnx-points", type=int, default=4, metavar="N", help=(
        "measure every decided parameter also at ONNX's own node tests: at most N tests per "
        "schema version (default 4; 0: none); with --onnx-src, the checkout's committed "
        "onnx/backend/test/data/node (docs/verdicts.md, \"ONNX's points\")"))

    m = sub.add_parser("merge", help="join the JSON reports of verify-all --shard K/N into the "
                                     "report (and exit code) of one unsharded run")
    m.add_argument("reports", nargs="+", metavar="REPORT", help="every shard's JSON report")
    m.add_argument("--report", metavar="FILE", help="write the merged report here")
    m.add_argument("--format", choices=("text", "json", "markdown", "html"), default="text")
    ci_options.add_arguments(m)

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

    o = sub.add_parser("report", help="render a saved batch report (verify-all's or merge's "
                                      "JSON) in any format, without proving anything again")
    o.add_argument("saved", metavar="REPORT.json", help="the JSON report of verify-all or "
                                                        "merge (--format json --report FILE)")
    o.add_argument("--report", metavar="FILE", help="write the rendering here (Markdown past "
                                                    "GitHub's limit: its details beside it)")
    o.add_argument("--format", choices=("text", "json", "markdown", "html"), default="text")

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
    _proof_options(r, ("text", "json", "markdown"), checkout_default=False)

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
    x.add_argument("--include-conventions", action="store_true",
                   help="also edit parameters a named convention decides (left out by "
                        "default; the PR text labels them in their own section)")
    x.add_argument("--jobs", type=int, help="workers when running verify-all (default: 2, or "
                                            "[tool.torch-prover] jobs in pyproject.toml)")
    x.add_argument("--versions", default="latest", metavar="latest|all|A..B",
                   help="without --report: the schema versions verify-all proves (default: "
                        "latest); with --report, the report's own")
    x.add_argument("--format", choices=("text", "json"), default="text",
                   help="the summary on stdout as text or as one JSON object")

    n = sub.add_parser("new-case", help="write a catalogue case scaffold for an op, from its "
                                        "schema (docs/pr-gate.md)")
    n.add_argument("op", help="ONNX op name, e.g. Shrink")
    n.add_argument("-o", "--output", help="write here, a new file (default: "
                                          "torch_prover/cases/<op>.py in a torch_prover "
                                          "checkout; - for stdout)")

    e = sub.add_parser("check-evidence", help="re-run a tree of evidence directories and "
                                              "report match / mismatch / cannot run for each")
    e.add_argument("dir", metavar="DIR", help="an evidence tree (e.g. models) or one case "
                                              "directory")
    e.add_argument("--format", choices=("text", "json"), default="text")

    t = sub.add_parser("tags", help="print an op's schema tags")
    t.add_argument("op")
    t.add_argument("--opset", type=int, help="schema in force at this opset (default: latest)")
    t.add_argument("--all-versions", action="store_true",
                   help="every schema version's tags: one row per parameter, a column a version")
    t.add_argument("--format", choices=("text", "json"), default="text")
    t.add_argument("--explain", action="store_true",
                   help="per parameter: the tag, each witness's outcome and the convention, "
                        "from the op's catalogue cases (served by verify-all's cache, proved "
                        "when not cached)")
    for command in sub.choices.values():   # `torch-prover run --debug` works as `--debug run`
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help="show tracebacks (as before the command)")
    return parser


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "torch-prover"


def _configure(args: argparse.Namespace) -> None:
    """``[tool.torch-prover]`` of the nearest pyproject.toml (config.py) under the flags:
    each option the command line left unset takes the file's value, else the built-in
    default. Checked before any work (exit 2 naming file and key)."""
    from . import config
    found = config.load()
    args.config = found
    config.apply(args, found, {"jobs": max(1, min(2, os.cpu_count() or 1)),
                               "cache_dir": str(_default_cache_dir())},
                 skip=frozenset({"tags_from"}) if getattr(args, "changed_from", None)
                 else frozenset())


def _cache_dir(args: argparse.Namespace) -> Path:
    """The result cache of a command without ``--cache-dir`` (tags --explain, fix-tags)."""
    return Path(args.config.get("cache_dir") or _default_cache_dir())


def _default_out(args: argparse.Namespace) -> str | None:
    """``prove`` and ``verify-all`` without ``--out``: ./models in a torch_prover checkout
    (the quickstart keeps its committed evidence current); anywhere else no evidence is
    written -- a run in another project's directory must not leave a ./models there -- and
    the returned line (shown once the arguments are checked) says how to keep it."""
    if args.out is not None or args.no_write:
        return None
    if preflight.in_checkout(Path.cwd()):
        args.out = "models"
        return None
    args.no_write = True
    return (f"torch-prover {args.command}: evidence not written (not in a torch_prover "
            "checkout); pass --out DIR to keep model.onnx, test data and proof.json")


def _check_outputs(args: argparse.Namespace, cases) -> Path | None:
    """Every place the command will write, checked before any work; returns --out."""
    out = None
    if not args.no_write:
        preflight.outputs_checked([preflight.Output("--out", args.out, None)],
                                  [("--tags-from", getattr(args, "tags_from", None))])
        out = Path(args.out)
        preflight.evidence_dirs(out, [(c.op, c.name) for c in cases])
    if getattr(args, "cache_dir", None) and not args.no_cache:
        preflight.writable_dir(args.cache_dir, "--cache-dir")
    return out


def _terminal_width() -> int:
    """Width for text output on stdout: the terminal's, 100 when not a TTY (COLUMNS wins)."""
    import shutil
    return shutil.get_terminal_size((100, 24)).columns


def _cmd_verify_all(args: argparse.Namespace) -> int:
    from .batch import verify
    from .batch.progress import Progress
    if args.changed_from is not None:
        return _cmd_pr_gate(args)
    note = _default_out(args)
    ci = ci_options.plan(args, args.argv)
    request = verify.Request(
        ops=args.ops, jobs=args.jobs, timeout=args.timeout, numeric=not args.no_numeric,
        out=None if args.no_write else args.out,
        cache_dir=None if args.no_cache else args.cache_dir, tags_from=args.tags_from,
        waivers=args.waivers, versions=args.versions, shard=args.shard, report=args.report,
        outputs=tuple(ci.outputs()), report_format=args.format, progress=Progress(),
        torchscript=False if args.no_torchscript else None,
        onnx_points=args.onnx_points, case_free=args.case_free, onnx_src=_node_tests_src(args))
    prepared = verify.prepare(request)
    if note:
        print(note, file=sys.stderr)
    outcome = verify.run(prepared)
    for gone in outcome.removed:
        print(f"removed evidence of a case that no longer exists or no longer exports: {gone}", file=sys.stderr)
    for warning in outcome.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    _emit_batch(outcome.report, args.format, args.report)
    ci_options.emit(ci, outcome.report, args.format)
    return outcome.exit_code


def _node_tests_src(args: argparse.Namespace) -> str | None:
    """--onnx-src when the checkout commits node tests (ONNX's points come from it)."""
    return args.onnx_src if args.onnx_src and preflight.has_node_tests(args.onnx_src) else None


def _cmd_pr_gate(args: argparse.Namespace) -> int:
    """``verify-all --changed-from BASE``: the PR gate (gate/command.py)."""
    from .batch.progress import Progress
    from .gate import command as gate
    gate.refuse_combinations(args.ops, args.versions, args.shard, args.format)
    note = _default_out(args)
    ci = ci_options.plan(args, args.argv)
    prepared = gate.prepare(gate.Request(
        changed_from=args.changed_from, jobs=args.jobs, timeout=args.timeout,
        numeric=not args.no_numeric, out=None if args.no_write else args.out,
        cache_dir=None if args.no_cache else args.cache_dir, waivers=args.waivers,
        report=args.report, progress=Progress(), outputs=tuple(ci.outputs()),
        torchscript=False if args.no_torchscript else None, tags_from=args.tags_from,
        case_free=args.case_free, onnx_points=args.onnx_points,
        onnx_src=_node_tests_src(args)))
    if note:
        print(note, file=sys.stderr)
    doc, warnings = gate.run(prepared)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    gate.emit(doc, args.format, args.report, _terminal_width(), sys.stdout, sys.stderr)
    ci_options.emit(ci, doc, args.format)
    return doc["exit_code"]


def _cmd_merge(args: argparse.Namespace) -> int:
    from .batch.merge import merge
    from .batch.summary import exit_code
    ci = ci_options.plan(args, args.argv)
    _check_report_outputs(args.report, args.format, [("REPORT", r) for r in args.reports],
                          ci.outputs())
    rep = merge(args.reports)
    _emit_batch(rep, args.format, args.report)
    ci_options.emit(ci, rep, args.format)
    return exit_code(rep)


def _cmd_report(args: argparse.Namespace) -> int:
    """A saved batch report rendered again: the outputs checked, then the report read
    (``batch/report_io.load_report``, the one reader of a report: validated, its records
    re-checked, the report rebuilt from them), rendered as verify-all would have; the exit
    code is the report's own."""
    from .batch.report_io import load_report
    from .output.run_totals import exit_code
    _check_report_outputs(args.report, args.format, [("REPORT.json", args.saved)])
    rep = load_report(args.saved, what="REPORT.json")
    _emit_batch(rep, args.format, args.report)
    return exit_code(rep)


def _check_report_outputs(path: str | None, fmt: str, inputs: list[tuple[str, str]],
                          more: list = ()) -> None:
    """``--report`` (and a Markdown report's details file beside it) and ``more`` outputs
    (``--junit``...): the output rule (``preflight.outputs_checked``), before any work."""
    preflight.outputs_checked(preflight.report_files(path, fmt) + list(more), inputs)


def _emit_batch(rep: dict, fmt: str, report_path: str | None) -> None:
    """A batch report to ``--report`` (the text report then on stdout) or to stdout
    (``output/batch_render.emit``: verify-all, merge and report alike)."""
    from .output.batch_render import emit
    stdout, notes = emit(rep, fmt, report_path, _terminal_width())
    sys.stdout.write(stdout)
    for note in notes:
        print(note, file=sys.stderr)


def _cmd_coverage(args: argparse.Namespace) -> int:
    from .batch.coverage_case_free import entries_with_case_free
    from .output.coverage import coverage, coverage_text, op_text, summary, summary_line
    from .tags.schema import canonical_op
    if args.no_torchscript and args.versions is None:   # it changes the per-version plan only
        raise UsageError("--no-torchscript shows the plan of verify-all --no-torchscript per "
                         "schema version: give it with --versions (e.g. --versions all)")
    entries = coverage()
    if args.ops:  # "coverage Reshape Softmax" or "coverage Reshape,Softmax"; unknown: exit 2
        names = [n.strip() for arg in args.ops for n in arg.split(",") if n.strip()]
        if not names:
            raise UsageError("no op named; `torch-prover coverage` lists every op")
        wanted = list(dict.fromkeys(canonical_op(n) for n in names))
        by_op = {e["op"]: e for e in entries}  # every op canonical_op accepts has an entry
        entries = [by_op[op] for op in wanted]
    if args.versions is not None:   # every schema version and how it would be decided
        from .batch.versions_plan import coverage_versions_output
        text, notes = coverage_versions_output(entries, args.versions, args.format, False
                                               if args.no_torchscript else None, _cache_dir(args))
        sys.stdout.write(text)
        for note in notes:
            print(note, file=sys.stderr)
        return EXIT_OK
    entries, notes = entries_with_case_free(entries, _cache_dir(args))   # no case: ONNX's tests
    for note in notes:
        print(note, file=sys.stderr)
    if args.format == "json":
        sys.stdout.write(report.to_json(documents.coverage_doc(
            summary(entries), entries, summary_line(entries))))
    elif args.ops:
        sys.stdout.write(op_text(entries, _terminal_width()))
    else:
        sys.stdout.write(coverage_text(entries, _terminal_width()))
    return EXIT_OK


def _cmd_tags(args: argparse.Namespace) -> int:
    from .output import report
    from .tags.schema import canonical_op, schema_tags
    op = canonical_op(args.op)
    if args.all_versions and (args.opset is not None or args.explain):
        flag = "--opset" if args.opset is not None else "--explain"
        raise UsageError(f"--all-versions shows every schema version's tags; {flag} is about "
                         f"one version: give one of them")
    if args.all_versions:
        from .batch.versions_plan import tags_all_versions, tags_all_versions_text
        doc = tags_all_versions(op)
        sys.stdout.write(report.to_json(doc) if args.format == "json"
                         else tags_all_versions_text(doc))
        return EXIT_OK
    tags = schema_tags(op, preflight.schema_opset(args.opset))
    if getattr(args, "explain", False):
        from .batch.tags_explain import explain_tags
        return explain_tags(op, tags, args.opset, args.format, _terminal_width(),
                            _cache_dir(args))
    if args.format == "json":
        sys.stdout.write(report.to_json(documents.tags_doc(tags)))
    else:
        sys.stdout.write(report.tags_text(tags, schema_tags(op), _terminal_width()))
    return EXIT_OK


def _cmd_prove(args: argparse.Namespace) -> int:
    from .output.coverage import where_to_look
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
            raise UsageError(f"no case for op {op} in the catalogue; {where_to_look(op)}")
    else:
        try:
            cases = [find_case(op, args.case)]
        except CaseError as exc:   # a name that is not in the catalogue: usage, not a bug
            raise UsageError(f"{exc}; {where_to_look(op)}") from None
    preflight.seed(args.seed)
    for case in cases:
        preflight.opset_for(case, args.opset)
    others = len(cases_for(op)) - 1
    notes = [f"note: {op} has {others + 1} cases; proving the first ({cases[0].name}); --all "
             f"proves every one, --case NAME another"] if not args.all and args.case is None \
        and others else []
    from .batch.verify import exporter_mode
    scripted, cases, left_out = exporter_mode(None, cases)   # this torch's exporters
    if left_out:
        raise UsageError(f"{', '.join(left_out)} needs the TorchScript exporter, which this "
                         f"torch lacks, and declares no dynamo way")
    if args.opset is not None:   # the variant verify-all --versions proves at that opset
        from .batch.versions import at_opset
        cases = [at_opset(c, args.opset, scripted) for c in cases]
    notes += [n for n in [_default_out(args)] if n]
    _check_outputs(args, cases)
    changes = {}
    if args.seed is not None:
        changes["seeds"] = (args.seed, args.seed + 1)
    tags, label, _ = preflight.tag_source(args.tags_from)
    for note in notes:   # after every check: a bad argument is one line, never a note and it
        print(note, file=sys.stderr)
    records, worst, markdown = [], EXIT_OK, []
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
            markdown.append((rec, report.proof_markdown(rec, script=script_for(proved))))
    if args.format == "json":   # one shape, --all or not
        sys.stdout.write(report.to_json(documents.proofs_doc(DocKind.PROVE, records, worst)))
    elif markdown:   # GitHub's body limit (output/markdown_limit.py)
        from .output.markdown_summary import proofs_on_stdout
        text, notes = proofs_on_stdout(markdown, f"`torch-prover prove {op} --case NAME "
                                                 "--format markdown` prints one case whole")
        sys.stdout.write(text)
        for note in notes:
            print(note, file=sys.stderr)
    return worst


def _cmd_run(args: argparse.Namespace) -> int:
    from .pr.runner import cmd_run
    if args.out is not None:   # run writes evidence only with --out (it has no --no-write)
        preflight.outputs_checked([preflight.Output("--out", args.out, None)],
                                  [("SCRIPT", args.script), ("--tags-from", args.tags_from)])
    return cmd_run(args)


def _cmd_script(args: argparse.Namespace) -> int:
    from .pr.gen import cmd_script
    if args.output is not None:
        from .output.ownership import Holds
        preflight.outputs_checked([preflight.Output("-o", args.output, Holds.SCRIPT)])
    return cmd_script(args)


def _cmd_check_evidence(args: argparse.Namespace) -> int:
    from .batch.report_io import evidence_record_problem
    from .output.check_evidence import command
    return command(args.dir, args.format, _terminal_width(), evidence_record_problem)

def _cmd_node_tests(args: argparse.Namespace) -> int:
    from .ci.node_tests_cmd import command
    return command(args.models, args.output, args.run, args.format, _terminal_width())


def _cmd_new_case(args: argparse.Namespace) -> int:
    from .gate.scaffold import command
    return command(args.op, args.output, Path.cwd(), sys.stdout,
                   [("the result cache", _cache_dir(args))])


def _cmd_fix_tags(args: argparse.Namespace) -> int:
    from .fix.command import cmd_fix_tags
    return cmd_fix_tags(args, _cache_dir(args))


COMMANDS = {"prove": _cmd_prove, "tags": _cmd_tags, "verify-all": _cmd_verify_all,
            "coverage": _cmd_coverage, "run": _cmd_run, "script": _cmd_script,
            "fix-tags": _cmd_fix_tags, "merge": _cmd_merge, "report": _cmd_report,
            "check-evidence": _cmd_check_evidence, "node-tests": _cmd_node_tests,
            "new-case": _cmd_new_case}


def _json_requested(argv: Sequence[str]) -> bool:
    """``--format json`` among raw arguments (argparse's abbreviations included), for an
    error met before the arguments parse."""
    for i, tok in enumerate(argv):
        name, eq, value = tok.partition("=")
        if len(name) >= 4 and "--format".startswith(name):
            if (value if eq else (argv[i + 1] if i + 1 < len(argv) else "")) == "json":
                return True
    return False


def _utf8_arguments(argv: Sequence[str]) -> None:
    """Every argument is UTF-8 text (``inputs.utf8_name``), named by its option: a path
    whose name holds other bytes is refused before any work, not after it, where the
    report or the PR text that names it could not be written."""
    from .inputs import utf8_name
    for i, tok in enumerate(argv):
        option, eq, value = tok.partition("=")
        if eq and option.startswith("--"):
            utf8_name(value, option)
        else:
            utf8_name(tok, argv[i - 1] if i and argv[i - 1].startswith("-") else "argument")


def _command_named(argv: Sequence[str]) -> str | None:
    return next((tok for tok in argv if tok in COMMANDS), None)


class StdoutError(OutputError):
    """Standard output could not be written (``> /dev/full``, a full disk): named as the
    file at fault, and the error document is not written to the stream that just failed."""


class _Stdout:
    """``sys.stdout`` while a command runs: a write or flush that fails raises StdoutError
    (an OSError there carries no file name); everything else is the stream's own."""

    def __init__(self, stream):
        self._stream = stream

    def _named(self, exc: OSError) -> StdoutError:
        return StdoutError(f"cannot write stdout: {exc.strerror or type(exc).__name__}")

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise self._named(exc) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise self._named(exc) from None

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _fail(command: str | None, outcome: Outcome, code: int, message: str,
          as_json: bool) -> int:
    """The one way a command ends on an error: one line on stderr and, with ``--format
    json``, the error document on stdout (so a CI step that parses stdout always can;
    when stdout itself fails, the line on stderr is all there is)."""
    print(f"torch-prover{' ' + command if command else ''}: {message}", file=sys.stderr)
    if as_json:
        try:
            sys.stdout.write(report.to_json(documents.error_doc(command, outcome, code,
                                                                message)))
            sys.stdout.flush()
        except (OSError, StdoutError):
            pass
    return code


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed usage and its message
        if exc.code == 0:
            return EXIT_OK
        if _json_requested(argv):
            reason = getattr(parser, "last_error", None) or "bad usage"
            sys.stdout.write(report.to_json(documents.error_doc(
                _command_named(argv), Outcome.USAGE, EXIT_USAGE, reason)))
        return EXIT_USAGE
    if not args.command:
        parser.print_help()
        return EXIT_USAGE
    as_json = getattr(args, "format", None) == "json"
    args.argv = argv
    stdout, sys.stdout = sys.stdout, _Stdout(sys.stdout)
    try:
        _utf8_arguments(argv)
        _configure(args)
        code = COMMANDS[args.command](args)
        sys.stdout.flush()   # a full disk under `> file` shows here, not after the exit code
        return code
    except ProverError as exc:
        if args.debug and isinstance(exc, CaseError):
            raise
        return _fail(args.command, Outcome.of_exit(exc.exit_code), exc.exit_code,
                     exc.one_line(), as_json and not isinstance(exc, StdoutError))
    except OSError as exc:   # a disk that filled or failed while writing
        if args.debug:
            raise
        where = f" ({exc.filename})" if exc.filename else ""
        return _fail(args.command, Outcome.USAGE, EXIT_USAGE,
                     f"cannot write{where}: {exc.strerror or type(exc).__name__}", as_json)
    except KeyboardInterrupt:
        return _fail(args.command, Outcome.INTERRUPTED, EXIT_INTERRUPTED, "interrupted",
                     as_json)
    except Exception as exc:  # a bug of ours: one line, traceback only with --debug
        if args.debug:
            raise
        return _fail(args.command, Outcome.BUG, EXIT_BUG,
                     f"internal error (a bug in torch-prover, not in your input): "
                     f"{type(exc).__name__}: {first_line(exc)} "
                     "(rerun with --debug for the traceback)", as_json)
    finally:
        sys.stdout = stdout


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
