"""Errors the user sees, and the exit codes they map to.

One module every stage may import (it imports nothing of ours), so a stage never has to
reach up into the CLI for an exception class.

Exit codes: 0 success; 1 a finding (an unwaived disagreement, an invalid or failed
case); 2 bad usage, a broken case, or an output location that cannot be written --
always with a one-line message that says what to do.
"""
from __future__ import annotations

import re

EXIT_OK, EXIT_FINDING, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad command-line input; the message is shown as is, exit 2."""


class OutputError(Exception):
    """An output location torch-prover may not or cannot write: a symlink out of ``--out``,
    a directory holding files it did not write, a read-only or full disk. One line, exit 2."""


class CaseError(Exception):
    """A broken case: bad definition, export failure, crash. Not a tag disagreement."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message ('' when it has none): reports are one line
    per problem, and exporter / autograd messages run to pages."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


_NATIVE_FRAME = re.compile(r"/\S+\.(?:cc|cpp|h|hpp):\d+ [^()]*\([^()]*\) ")
"""A C++ source location and function signature at the head of a native error
(onnxruntime's ``/onnxruntime_src/.../model.cc:256 onnxruntime::Model::Model(...) ``):
build-machine detail that would push the actual reason past the cap."""


def describe(exc: BaseException) -> str:
    """``Type: first line``, capped, for records that keep why something could not run."""
    text = _NATIVE_FRAME.sub("", first_line(exc), count=1)
    return f"{type(exc).__name__}: {text}".strip()[:300]
