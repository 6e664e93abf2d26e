"""verify-all's progress line on stderr: redrawn in place on a terminal, a few plain lines
in a CI log. Kept out of ``cli`` so the batch's caller owns only the wiring."""
from __future__ import annotations

import os
import sys


class Progress:
    """verify-all's progress on stderr; batch.run_batch calls it as (done, total, label).

    On a terminal: one line redrawn in place -- a bar, done/total, elapsed time, ETA and
    the case just finished. Elsewhere (CI logs): a plain line when at least ``every``
    cases (default: a twentieth of the batch, 10 at least) and ``interval`` seconds have
    both passed since the last one -- whichever is rarer, so a log stays a few lines
    long -- plus a first and a last line. The ETA is the rate since the first call (the
    cache lookup is over by then) applied to the cases left. ``clock`` is injectable.
    """

    def __init__(self, stream=None, clock=None, interval: float = 5.0,
                 every: int | None = None, width: int | None = None):
        import time
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty())
        self.clock = clock or time.monotonic
        self.interval, self.every, self.width = interval, every, width
        self.first: tuple[float, int] | None = None   # (time, done) at the first call
        self.last: tuple[float, int] | None = None    # (time, done) at the last line logged

    @staticmethod
    def _duration(seconds: float) -> str:
        seconds = max(0, round(seconds))
        return f"{seconds} s" if seconds < 60 else f"{seconds // 60} min {seconds % 60:02d} s"

    def _eta(self, now: float, done: int, total: int) -> str:
        t0, d0 = self.first
        if done >= total:
            return "0 s"
        if done <= d0 or now <= t0:
            return "unknown"
        return self._duration((total - done) * (now - t0) / (done - d0))

    def __call__(self, done: int, total: int, label: str) -> None:
        now = self.clock()
        if self.first is None:
            self.first = (now, done)
        elapsed = self._duration(now - self.first[0])
        eta = self._eta(now, done, total)
        if self.tty:
            width = self.width or stream_width(self.stream)
            bar = 20
            filled = int(bar * done / max(total, 1))
            line = (f"[{'#' * filled}{'.' * (bar - filled)}] {done}/{total}  {elapsed} elapsed"
                    f"  ETA {eta}  {label}")
            self.stream.write("\r" + line[:width - 1].ljust(width - 1))
            if done >= total:
                self.stream.write("\n")
            self.stream.flush()
            return
        every = self.every or max(10, -(-total // 20))
        if self.last is None:
            cached = f" ({done} from cache)" if done else ""
            line = (f"verify-all: {done}/{total} cases done{cached}"
                    + (f", {total - done} to prove" if done < total else ""))
        elif done >= total:
            if self.last[1] >= total:
                return
            line = f"verify-all: {done}/{total} cases done in {elapsed}"
        elif done - self.last[1] >= every and now - self.last[0] >= self.interval:
            line = (f"verify-all: {done}/{total} cases ({100 * done // max(total, 1)}%), "
                    f"{elapsed} elapsed, ETA {eta}")
        else:
            return
        self.last = (now, done)
        self.stream.write(line + "\n")
        self.stream.flush()


def stream_width(stream) -> int:
    """Columns a progress line on ``stream`` may take: ``$COLUMNS`` when it is set (as
    ``shutil.get_terminal_size`` reads it for stdout: a narrower log, a wider pane), else
    the terminal ``stream`` writes to, else 100."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 100
