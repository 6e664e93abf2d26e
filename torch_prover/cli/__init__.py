"""Command line: ``build_parser()`` and ``main(argv) -> int``; the console script only calls main.

Exit codes (errors.py): 0 success; 1 a disagreement, an invalid case or a failed proof; 2 bad
usage, a broken case or an output that cannot be written -- always with a one-line message
that says what to do, and for bad usage before any work is done (preflight.py); 3 a bug of
ours (internal error), its traceback under --debug. ``main`` is the one place errors become
exit codes (``ProverError.exit_code``); with ``--format json`` every exit prints one JSON
object on stdout.

This module composes the commands (``commands/``: one module per command, its options and
its handler) with what they share: ``options`` (the parser class, the option groups several
commands declare), ``settings`` (values a flag may leave unset), ``outputs`` (where they
write) and ``exits`` (how a command ends on an error). Nothing imports ``cli`` but
``__main__`` and the console script (tests/test_layout.py).
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from .. import __version__
from ..errors import (EXIT_BUG, EXIT_FINDING, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, CaseError,
                      Outcome, ProverError, UsageError, first_line)
from ..output import documents, report
from . import commands
from .exits import Stdout, StdoutError, fail
from .options import Parser, debug_after_command, json_requested, utf8_arguments
from .settings import configure

__all__ = ["build_parser", "main", "run", "UsageError", "EXIT_OK", "EXIT_FINDING", "EXIT_USAGE",
           "EXIT_BUG"]

COMMANDS = {command.NAME: command.handle for command in commands.ALL}
"""Each command's handler by its name: ``main`` dispatches through it."""


def build_parser() -> argparse.ArgumentParser:
    Parser.last_error = None
    parser = Parser(
        prog="torch-prover",
        description="Prove ONNX operator differentiability tags with PyTorch autograd "
                    "(ONNX's 'Method 1'), checked by graph mapping and finite differences.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in commands.ALL:
        command.add_parser(sub)
    debug_after_command(sub)   # `torch-prover run --debug` works as `--debug run`
    return parser


def _command_named(argv: Sequence[str]) -> str | None:
    return next((tok for tok in argv if tok in COMMANDS), None)


def main(argv: Sequence[str] | None = None, *, own_process: bool = False) -> int:
    """``own_process``: the command runs alone in a fresh process (the console script), so
    ``run`` may fork the script's process from it (``pr/process.Start.FORK``); a caller
    that imported ``main`` (tests, other tools) gets the fork server."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed usage and its message
        if exc.code == 0:
            return EXIT_OK
        if json_requested(argv):
            reason = getattr(parser, "last_error", None) or "bad usage"
            sys.stdout.write(report.to_json(documents.error_doc(
                _command_named(argv), Outcome.USAGE, EXIT_USAGE, reason)))
        return EXIT_USAGE
    if not args.command:
        parser.print_help()
        return EXIT_USAGE
    as_json = getattr(args, "format", None) == "json"
    args.argv = argv
    args.own_process = own_process
    stdout, sys.stdout = sys.stdout, Stdout(sys.stdout)
    try:
        from ..batch import timeline
        timeline.mark("command line parsed (imports done)")
        utf8_arguments(argv)
        configure(args)
        code = COMMANDS[args.command](args)
        sys.stdout.flush()   # a full disk under `> file` shows here, not after the exit code
        return code
    except ProverError as exc:
        if args.debug and isinstance(exc, CaseError):
            raise
        return fail(args.command, Outcome.of_exit(exc.exit_code), exc.exit_code,
                    exc.one_line(), as_json and not isinstance(exc, StdoutError))
    except OSError as exc:   # a disk that filled or failed while writing
        if args.debug:
            raise
        where = f" ({exc.filename})" if exc.filename else ""
        return fail(args.command, Outcome.USAGE, EXIT_USAGE,
                    f"cannot write{where}: {exc.strerror or type(exc).__name__}", as_json)
    except KeyboardInterrupt:
        return fail(args.command, Outcome.INTERRUPTED, EXIT_INTERRUPTED, "interrupted",
                    as_json)
    except Exception as exc:  # a bug of ours: one line, traceback only with --debug
        if args.debug:
            raise
        return fail(args.command, Outcome.BUG, EXIT_BUG,
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
        code = main(sys.argv[1:], own_process=True)
    except KeyboardInterrupt:     # outside a command: argument parsing, the first imports
        print("interrupted", file=sys.stderr)
        code = 130
    from ..batch import timeline   # TORCH_PROVER_TIMINGS=1: the run's timeline, on stderr
    timeline.emit()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, OSError):  # `torch-prover ... | head`: the reader left
            pass
    os._exit(code)
