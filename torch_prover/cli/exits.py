"""How a command ends on an error: one line on stderr and, with ``--format json``, the error
document on stdout; and standard output guarded while a command runs, so a stdout that
cannot be written is named as the file at fault (``cli.main`` maps every error to its exit
code through ``fail``)."""
from __future__ import annotations

import sys

from ..errors import OutputError, Outcome
from ..output import documents, report
from ..output.inert import one_line


class StdoutError(OutputError):
    """Standard output could not be written (``> /dev/full``, a full disk): named as the
    file at fault, and the error document is not written to the stream that just failed."""


class Stdout:
    """``sys.stdout`` while a command runs: a write or flush that fails raises StdoutError
    (an OSError there carries no file name); text the stream's encoding cannot carry is
    escaped; everything else is the stream's own."""

    def __init__(self, stream):
        self._stream = stream

    def _named(self, exc: OSError) -> StdoutError:
        return StdoutError(f"cannot write stdout: {exc.strerror or type(exc).__name__}")

    def write(self, text: str) -> int:
        try:
            try:
                return self._stream.write(text)
            except UnicodeEncodeError:   # PYTHONIOENCODING=ascii, a C locale: an em dash
                return self._stream.write(self._encodable(text))
        except OSError as exc:
            raise self._named(exc) from None

    def _encodable(self, text: str) -> str:
        """``text`` as the stream's encoding can carry it: what it lacks written as Python
        escapes (``\\u2014``), as Python's own stderr does -- never an internal error."""
        encoding = getattr(self._stream, "encoding", None) or "utf-8"
        return text.encode(encoding, "backslashreplace").decode(encoding)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise self._named(exc) from None

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def fail(command: str | None, outcome: Outcome, code: int, message: str,
         as_json: bool) -> int:
    """The one way a command ends on an error: one line on stderr and, with ``--format
    json``, the error document on stdout (so a CI step that parses stdout always can;
    when stdout itself fails, the line on stderr is all there is)."""
    # one line whatever a path in it holds (a new line, an escape): issue 42's problem 9
    print(f"torch-prover{' ' + command if command else ''}: {one_line(message)}",
          file=sys.stderr)
    if as_json:
        try:
            sys.stdout.write(report.to_json(documents.error_doc(command, outcome, code,
                                                                message)))
            sys.stdout.flush()
        except (OSError, StdoutError):
            pass
    return code

