"""The parser's shared pieces: the argparse class every command's parser is made of (one-line
errors), the option groups several commands declare the same way, and the check every
argument passes before any work. A command's own options are in its module (``commands/``);
the CI options of the batch commands are ``ci/options.add_arguments``."""
from __future__ import annotations

import argparse
from typing import Sequence

from ..errors import EXIT_USAGE


def proof_options(parser: argparse.ArgumentParser, formats: tuple[str, ...],
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


def quiet_option(parser: argparse.ArgumentParser) -> None:
    """``-q/--quiet`` on every command that prints progress (verify-all's progress line,
    run's stage line): none is printed; warnings, notes and errors still are."""
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="print no progress on stderr (warnings and errors still print)")


def debug_after_command(sub: argparse._SubParsersAction) -> None:
    """``--debug`` on every command too: ``torch-prover run --debug`` works as ``--debug run``
    (the internal-error line says "rerun with --debug", wherever the user put it)."""
    for command in sub.choices.values():
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help="show tracebacks (as before the command)")


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors, like every other error of the tool (the usage it
    would print runs to five lines for verify-all; ``--help`` still shows it), remembering
    the message: with ``--format json`` the error document on stdout carries it as its
    ``reason``."""

    last_error: str | None = None

    def error(self, message: str):  # type: ignore[override]
        Parser.last_error = message
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (`{self.prog} --help` shows the "
                              "usage)\n")


def json_requested(argv: Sequence[str]) -> bool:
    """``--format json`` among raw arguments (argparse's abbreviations included), for an
    error met before the arguments parse."""
    for i, tok in enumerate(argv):
        name, eq, value = tok.partition("=")
        if len(name) >= 4 and "--format".startswith(name):
            if (value if eq else (argv[i + 1] if i + 1 < len(argv) else "")) == "json":
                return True
    return False


def utf8_arguments(argv: Sequence[str]) -> None:
    """Every argument is UTF-8 text (``inputs.utf8_name``), named by its option: a path
    whose name holds other bytes is refused before any work, not after it, where the
    report or the PR text that names it could not be written."""
    from ..inputs import utf8_name
    for i, tok in enumerate(argv):
        option, eq, value = tok.partition("=")
        if eq and option.startswith("--"):
            utf8_name(value, option)
        else:
            utf8_name(tok, argv[i - 1] if i and argv[i - 1].startswith("-") else "argument")
