"""Errors the user sees, and the exit codes they map to.

One module every stage may import (it imports nothing of ours), so a stage never has to
reach up into the CLI for an exception class. Every error torch-prover reports derives
from ``ProverError``; its class says which exit code it means (``exit_code``) and how its
one-line message is introduced (``prefix``), so ``cli.main`` maps errors to exit codes in
one place and never by the text of a message. Anything else that escapes a command is a
bug of ours: exit 3 (``EXIT_BUG``).

Exit codes: 0 success; 1 a finding (an unwaived disagreement, an invalid or failed
case); 2 bad usage, a broken case, or an output location that cannot be written --
always with a one-line message that says what to do; 3 an internal error (a bug in
torch-prover: one line, the traceback with ``--debug``); 130 interrupted.
"""
from __future__ import annotations

import re
from .compat import StrEnum

EXIT_OK, EXIT_FINDING, EXIT_USAGE, EXIT_BUG, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class Outcome(StrEnum):
    """What a command's run came to: the ``status`` of the JSON object every command
    prints with ``--format json`` when it ends with an error (and the word a CI step
    reads), one per exit code."""

    OK = "ok"
    FINDING = "finding"
    USAGE = "usage error"
    BUG = "internal error"
    INTERRUPTED = "interrupted"

    @classmethod
    def of_exit(cls, code: int) -> "Outcome":
        return {EXIT_OK: cls.OK, EXIT_FINDING: cls.FINDING, EXIT_USAGE: cls.USAGE,
                EXIT_BUG: cls.BUG}.get(code, cls.INTERRUPTED)


class ProverError(Exception):
    """Base of every error torch-prover reports as one line of its own (not a bug)."""

    exit_code: int = EXIT_USAGE
    prefix: str = ""      # how the message is introduced: "broken case: " ...

    def one_line(self) -> str:
        """The message as the user sees it after ``torch-prover COMMAND: ``."""
        text = str(self.args[0]) if self.args else type(self).__name__
        return f"{self.prefix}{text}"


class UsageError(ProverError):
    """Bad command-line input; the message is shown as is, exit 2."""


class OutputError(ProverError):
    """An output location torch-prover may not or cannot write: a symlink out of ``--out``,
    a directory holding files it did not write, a read-only or full disk. One line, exit 2."""


class CaseError(ProverError):
    """A broken case: bad definition, export failure, crash. Not a tag disagreement."""

    prefix = "broken case: "


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message ('' when it has none): reports are one line
    per problem, and exporter / autograd messages run to pages."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


_NATIVE_FRAME = re.compile(r"/\S+\.(?:cc|cpp|h|hpp):\d+ [^()]*\([^()]*\) ")
"""A C++ source location and function signature at the head of a native error
(onnxruntime's ``/onnxruntime_src/.../model.cc:256 onnxruntime::Model::Model(...) ``):
build-machine detail that would push the actual reason past the cap."""


_ORT_MISSING = re.compile(r"\[ONNXRuntimeError\] : \d+ : NOT_IMPLEMENTED : Could not find an "
                          r"implementation for (\w+)\((\d+)\) node with name '[^']*'")
_ORT_STATUS = re.compile(r"\[ONNXRuntimeError\] : \d+ : (\w+) : ")
"""onnxruntime's raw status prefix, and its message for a kernel it lacks: a reason says
``no onnxruntime kernel for Erf-13 at these input types`` instead."""
CAP = 300


def capped(text: str, cap: int = CAP) -> str:
    """``text`` in at most ``cap`` characters, cut at a word boundary with an ellipsis (a
    reason never ends mid-word)."""
    text = " ".join(text.split())
    if len(text) <= cap:
        return text
    cut = text[:cap - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > cap // 2 else cut).rstrip(" ,;:") + "…"


def describe(exc: BaseException) -> str:
    """``Type: first line``, capped at a word boundary, for records that keep why something
    could not run; onnxruntime's status codes said in words."""
    text = _NATIVE_FRAME.sub("", first_line(exc), count=1)
    text = _ORT_MISSING.sub(lambda m: f"no onnxruntime kernel for {m[1]}-{m[2]} at these input "
                                      "types", text)
    text = _ORT_STATUS.sub(lambda m: f"{m[1]}: ", text)
    return capped(f"{type(exc).__name__}: {text}".strip())
