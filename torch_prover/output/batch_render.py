"""A verify-all (or merged, or saved) batch report in each format, and where it goes.

The one place ``verify-all``, ``merge`` and ``report`` render a batch report, so the three
print the same thing for the same report: text (the cases' table, the per-version table
with ``--versions``, and the closing line, last), Markdown (split past GitHub's limit into
a summary body and a details file, ``markdown_limit``), the HTML page (built whole by
``html_report.render_html``) and JSON.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import batch_report, markdown_limit, points_report, report, versions_report
from .text_table import DEFAULT_WIDTH
from .markdown_limit import PR_BODY_LIMIT
from .run_totals import closing_line

@dataclass(frozen=True)
class Rendering:
    """A report in one format: ``text`` is the document (Markdown: its body), ``details``
    what goes beside it when Markdown passed the limit (None otherwise)."""

    text: str
    details: str | None = None
    full_length: int = 0


def markdown_full(rep: dict[str, Any]) -> str:
    """The whole Markdown report, whatever its length."""
    section = rep.get("versions")
    text = batch_report.batch_markdown(rep)
    text += "\n" + versions_report.versions_markdown(section) if section else ""
    points, free = rep.get("onnx_points"), rep.get("case_free")
    text += "\n" + points_report.points_markdown(points) if points else ""
    return text + ("\n" + points_report.case_free_markdown(free) if free else "")


def render_batch(rep: dict[str, Any], fmt: str, width: int | None,
                 details_name: str = "the details file") -> Rendering:
    """``rep`` in ``fmt``; ``details_name`` is how a split Markdown body names its details
    (the file's name when one is written)."""
    if fmt == "json":
        return Rendering(report.to_json(rep))
    if fmt == "markdown":
        from .markdown_summary import summary_blocks
        full = markdown_full(rep)
        split = markdown_limit.fit(full, summary_blocks(rep, full, details_name), full,
                                   details_name)
        return Rendering(split.body, split.details, split.full_length)
    if fmt == "html":
        from .html_report import render_html
        return Rendering(render_html(rep))
    section = rep.get("versions")
    text = batch_report.batch_text(rep, width)
    if section:
        text += "\n" + versions_report.versions_text(section, width or DEFAULT_WIDTH)
    if rep.get("onnx_points"):
        text += "\n" + points_report.points_text(rep["onnx_points"], width or DEFAULT_WIDTH)
    if rep.get("case_free"):
        text += "\n" + points_report.case_free_text(rep["case_free"], width or DEFAULT_WIDTH)
    return Rendering(text + closing_line(rep) + "\n")


def report_outputs(path: str | None, fmt: str) -> list[tuple[str, str | Path]]:
    """Every file ``--report PATH`` in ``fmt`` may write, for the preflight: the report (as
    given: an empty path is refused as such), and for Markdown its details file beside it
    (written only past the limit)."""
    if path is None:
        return []
    out: list[tuple[str, str | Path]] = [("--report", path)]
    if fmt == "markdown" and str(path).strip():
        out.append(("--report (its details file)", markdown_limit.details_path(Path(path))))
    return out


def emit(rep: dict[str, Any], fmt: str, report_path: str | None, width: int
         ) -> tuple[str, list[str]]:
    """Write the report to ``report_path`` (and its details beside it); returns (what goes
    to stdout, the lines for stderr). With ``--report`` stdout has the text report (JSON
    with ``--format json``); without it, stdout has the report itself -- for Markdown past
    the limit its summary body, and one stderr line says how to get the details."""
    from .commit import write_texts
    from .ownership import Holds
    if report_path is None:
        r = render_batch(rep, fmt, width, "the details file (`--report FILE` writes it "
                                          "beside FILE)")
        notes = []
        if r.details is not None:
            notes.append(f"markdown: the report is {r.full_length:,} characters, over "
                         f"{markdown_limit.limit_words()}: stdout has its summary "
                         f"({len(r.text):,} characters); --report R.md writes the summary "
                         f"to R.md and the whole report beside it, to R-details.md")
        return r.text, notes
    path = Path(report_path)
    details = markdown_limit.details_path(path)
    r = render_batch(rep, fmt, width, f"`{details.name}` (beside this file)")
    # the report and its details file commit together (output/commit.py)
    write_texts({path: r.text, **({details: r.details} if r.details is not None else {})},
                {path: Holds.REPORT, details: Holds.REPORT})
    notes = [f"report written to {report_path}"]
    if r.details is not None:
        notes[0] += (f": its summary ({len(r.text):,} characters); the whole report "
                     f"({r.full_length:,} characters, over GitHub's {PR_BODY_LIMIT:,}) to "
                     f"{details}")
    elif fmt == "markdown" and details.exists():
        notes.append(f"note: {details} is not this report's: it fits GitHub's limit whole, "
                     "so no details file was written (that one is from an earlier run)")
    stdout = r.text if fmt in ("json", "text") else render_batch(rep, "text", width).text
    return stdout, notes
