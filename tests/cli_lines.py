"""What a refused command shows: one line on stderr, exit 2, no traceback (shared by the
tests of issue 22's and issue 28's refusals)."""
from __future__ import annotations

import contextlib
import signal


def one_line_exit_2(capsys, code: int, *words: str) -> str:
    """The one stderr line of a command that ended with exit 2; each of ``words`` in it."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


class Blocked(BaseException):
    """Raised by ``deadline``: not an OSError (TimeoutError is one, and a reader that treats
    an OSError as a miss would swallow it) nor an Exception (``cli.main`` turns those into
    exit 3), so it always reaches the test."""


@contextlib.contextmanager
def deadline(seconds: int):
    """A read that blocks forever (a FIFO) fails the test instead of hanging it."""
    def alarm(*_):
        raise Blocked(f"blocked for {seconds} s")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
