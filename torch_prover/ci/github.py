"""GitHub Actions' own languages: workflow-command annotations and the step summary.

An annotation is one line, ``::error file=F,line=N,title=T::message``. GitHub's workflow
command rules (actions/toolkit, ``command.ts``) escape ``%``, CR and LF in the message and,
in a property's value, also ``:`` and ``,``; anything else is taken literally. Escaping
(``output.inert``, the one escaping: every other control character shown as its escape) is
what keeps a record's text -- a reason, a case name a PR wrote -- from ending the line and
starting a command of its own (``\\n::add-mask::``...); the step summary's names are code
spans and its prose inert Markdown (``inert.md_code``, ``md_text``). Each failing test becomes an
``::error`` at the ``.Input``/``.Output`` call declaring its parameter in ``onnx/defs``
when the ONNX sources are given (``fix.locate``, the locator fix-tags edits with), at the
schema's ``ONNX_OPERATOR_SET_SCHEMA`` line for a failed case, and with no file otherwise
(the title names the op). GitHub shows at most 10 error annotations per step and 50 per
job (docs/ci.md): the rest stay in the log, and the step summary lists every failure.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..errors import OutputError
from ..output.inert import md_code, md_text, workflow_data, workflow_property
from ..output.markdown_limit import PR_BODY_LIMIT, Block, fit, limit_words
from ..output.report import md_row
from .outcomes import WARNED, Grain, Result, Test, counts

STEP_SUMMARY_LIMIT = 1024 * 1024
"""GitHub's limit on one step's summary (bytes): a larger one is not shown at all."""


def command(name: str, message: str, **properties: Any) -> str:
    """``::name k=v,...::message``, every part escaped; ``None`` properties left out."""
    props = ",".join(f"{k}={workflow_property(v)}" for k, v in properties.items()
                     if v is not None)
    return f"::{name}{' ' + props if props else ''}::{workflow_data(message)}"


@dataclass(frozen=True)
class Where:
    """A line in ONNX's sources (``path`` relative to the workspace), or nowhere."""
    path: str | None = None
    line: int | None = None


class Locator:
    """Lines of ``onnx/defs`` for tests, read with fix-tags' reader (``read_tree``) when a
    test first needs one, and once: a run that locates nothing (a PR with nothing to prove)
    reads no source, and the JUnit file and the annotations share the one reading (issue
    40: tokenizing onnx/defs is most of the second gate run's cost). Without a source tree
    every test is nowhere (its annotation names the op)."""

    def __init__(self, onnx_src: str | os.PathLike | None, workspace: str | None = None):
        self.source = onnx_src
        self._tree = None
        self.reads = 0          # how many times onnx/defs was read (0 or 1)
        self.base = None
        if onnx_src is not None:
            root = Path(onnx_src).resolve()
            start = Path(workspace or os.environ.get("GITHUB_WORKSPACE") or os.getcwd())
            self.base = Path(os.path.relpath(root, start.resolve()))

    @property
    def tree(self):
        """The source tree, read on first use (None without ``onnx_src``)."""
        if self._tree is None and self.source is not None:
            from ..fix.locate import read_tree
            self._tree = read_tree(self.source)
            self.reads += 1
        return self._tree

    def _path(self, rel: str) -> str:
        return (self.base / rel).as_posix() if self.base is not None else rel

    def where(self, t: Test) -> Where:
        if self.source is None:
            return Where()
        version = t.version if t.version is not None else _version_at(t)
        block = self.tree.block(t.op, t.domain, version) if version is not None else None
        if block is None:
            return Where()
        if t.grain is Grain.PARAMETER and t.io in ("input", "output") and t.index is not None:
            found, _, _ = block.find(t.io, t.index)
            if found is not None:
                return Where(self._path(found.site.path), found.site.line)
        return Where(self._path(block.path), block.line)

    def place(self, t: Test) -> tuple[str | None, int | None]:
        """(file, line) of ``t``: a JUnit testcase's (``junit.Place``)."""
        at = self.where(t)
        return at.path, at.line


def _version_at(t: Test) -> int | None:
    """The schema version in force at a failed case's opset (its record has none)."""
    if t.opset is None:
        return None
    import onnx.defs
    try:
        return onnx.defs.get_schema(t.op, t.opset, t.domain).since_version
    except Exception:   # an op or opset the installed onnx lacks: no line to point at
        return None


def annotations(found: Iterable[Test], locator: Locator) -> list[str]:
    """One ``::error`` per failed test and one ``::warning`` per warned one (``WARNED``: an
    inherited tag in PR mode), in the tests' order."""
    lines = []
    for t in found:
        if t.result is Result.FAILED:
            level = "error"
        elif t.why in WARNED:
            level = "warning"
        else:
            continue
        at = locator.where(t)
        text = f"{t.why}: {t.message}" + (f" (reproduce: {t.reproduce})" if t.reproduce else "")
        lines.append(command(level, text, file=at.path, line=at.line,
                             title=f"torch-prover: {t.label}"))
    return lines


def summary_markdown(found: list[Test], report: dict[str, Any], command_line: str,
                     limit: int = PR_BODY_LIMIT) -> str:
    """The step summary: the status, the test counts, and every failed test while the
    limit lasts (then how many more, and where they are). Compact by design: the full
    Markdown report is the ``--report`` artifact. It keeps to a comment's limit
    (``markdown_limit.fit``, far under the step summary's), so it can be pasted as one."""
    n = counts(found)
    failed = [t for t in found if t.result is Result.FAILED]
    skipped = [t for t in found if t.result is Result.SKIPPED]
    head = [f"## torch-prover: {report.get('status', 'ok')}", "",
            f"{md_code(command_line)}: {md_text(report.get('reason', ''))}", "",
            f"{n['tests']} tests (one per parameter of each schema version, plus each case "
            f"that gave no proof): **{n['failed']} failed**, {n['passed']} passed, "
            f"{n['skipped']} skipped (accepted without a decision: "
            + ", ".join(f"{k} {v}" for k, v in _by_why(skipped)) + ")." if skipped else
            f"{n['tests']} tests: **{n['failed']} failed**, {n['passed']} passed.", ""]
    tail = ("", "The full report (every verdict with its evidence) is the `--report` "
                "artifact; the JUnit XML lists every test.")
    if failed:
        head += [f"### Failed ({len(failed)})", "", "| test | why | detail | reproduce |",
                 "|---|---|---|---|"]
    rows = tuple(md_row(md_code(t.label), md_text(t.why), md_text(t.message),
                        md_code(t.reproduce) if t.reproduce else "") for t in failed)
    more = ("\n... and {n} more failed tests (the summary keeps to "
            f"{limit_words(limit)}): see the JUnit XML or the report.")
    block = Block(tuple(head), rows, more, tail)
    # the trailing newline counts too: the body may take one character less
    return fit("\n".join(head + list(rows) + list(tail)), [block], "", "", limit - 1).body + "\n"


def _by_why(found: list[Test]) -> list[tuple[str, int]]:
    tally: dict[str, int] = {}
    for t in found:
        tally[str(t.why)] = tally.get(str(t.why), 0) + 1
    return sorted(tally.items())


def append_summary(path: str | os.PathLike, text: str) -> None:
    """Append to ``$GITHUB_STEP_SUMMARY`` (GitHub expects appends: every command of a step
    adds to the same file), refusing to pass GitHub's limit. All or nothing: an append that
    fails (a full disk) is cut off again, so the file is as it was (removed, if this made
    it), and the OutputError names it -- half a summary would be a wrong one."""
    data = text.encode("utf-8")
    p = Path(path)
    existed = os.path.lexists(p)
    fd = None
    try:
        fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
        before = os.fstat(fd).st_size
        if before + len(data) > STEP_SUMMARY_LIMIT:
            data = (f"torch-prover: summary left out ({len(data)} bytes would pass GitHub's "
                    f"{STEP_SUMMARY_LIMIT}-byte step summary limit)\n").encode("utf-8")
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except OSError:
            os.ftruncate(fd, before)
            if not existed:
                p.unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise OutputError(f"$GITHUB_STEP_SUMMARY {p}: cannot append the summary "
                          f"({exc.strerror or type(exc).__name__}); the file is as it was"
                          ) from None
    finally:
        if fd is not None:
            os.close(fd)
