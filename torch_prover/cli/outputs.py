"""Where the commands write: their output files checked before any work (the output rule,
``preflight.outputs_checked``), the width of text on stdout, and a batch report emitted the
one way verify-all, merge and report share."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import preflight


def check_outputs(args: argparse.Namespace, cases) -> Path | None:
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


def terminal_width() -> int:
    """Width for text output on stdout: the terminal's, 100 when not a TTY (COLUMNS wins)."""
    import shutil
    return shutil.get_terminal_size((100, 24)).columns


def check_report_outputs(path: str | None, fmt: str, inputs: list[tuple[str, str]],
                         more: list = ()) -> None:
    """``--report`` (and a Markdown report's details file beside it) and ``more`` outputs
    (``--junit``...): the output rule (``preflight.outputs_checked``), before any work."""
    preflight.outputs_checked(preflight.report_files(path, fmt) + list(more), inputs)


def emit_batch(rep: dict, fmt: str, report_path: str | None) -> None:
    """A batch report to ``--report`` (the text report then on stdout) or to stdout
    (``output/batch_render.emit``: verify-all, merge and report alike)."""
    from ..output.batch_render import emit
    from ..output.inert import one_line
    stdout, notes = emit(rep, fmt, report_path, terminal_width())
    sys.stdout.write(stdout)
    for note in notes:   # a path in a note is shown on one line (output/inert.py)
        print(one_line(note), file=sys.stderr)
