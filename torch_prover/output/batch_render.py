"""A verify-all (or merged) report in each format: the cases' report, then the per-version
table when the run had ``--versions`` (pure)."""
from __future__ import annotations

from typing import Any

from . import report, versions_report


def render_batch(rep: dict[str, Any], fmt: str, width: int) -> str:
    section = rep.get("versions")
    if fmt == "json":
        return report.to_json(rep)
    if fmt == "markdown":
        text = report.batch_markdown(rep)
        return text + ("\n" + versions_report.versions_markdown(section) if section else "")
    if fmt == "html":
        from .html_report import render_html
        page = render_html(rep)
        if section:
            page = page.replace("</body>", versions_report.versions_html(section) + "\n</body>")
        return page
    text = report.batch_text(rep, width)
    return text + ("\n" + versions_report.versions_text(section, width) if section else "")
