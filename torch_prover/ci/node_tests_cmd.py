"""``torch-prover node-tests MODELS -o OUT [--run]``: check, write, run, report.

Before any work: MODELS is an evidence tree; OUT is writable, is not MODELS, is not inside
it and does not hold it (writing or replacing OUT could then touch the evidence), and
every entry of OUT node-tests would replace is its own (``node_tests.not_ours``).
MODELS is only read. Exit 1 when a directory is refused (its files do not match its
record) or a test run fails; explained directories are listed, not failed.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from .. import preflight
from ..errors import EXIT_FINDING, EXIT_OK, UsageError
from . import node_tests as nt


def _real(path: Path) -> Path:
    return Path(os.path.realpath(os.path.abspath(path)))


def check(models: str, out: str) -> tuple[Path, Path]:
    """(MODELS, OUT) checked; UsageError, one line, otherwise."""
    from ..output.check_evidence import case_dirs
    root = Path(models)
    if not root.is_dir():
        raise UsageError(f"{models}: not a directory; give an evidence tree such as models")
    target = preflight.writable_dir(out, "-o")
    # the output rule (docs/safety.md): a directory output, whose entries node-tests checks
    # are its own itself (``not_ours`` below)
    preflight.outputs_checked([preflight.Output("-o", target, None)], [], [("MODELS", root)])
    if _real(root).is_relative_to(_real(target)):
        raise UsageError(f"-o {out}: holds MODELS ({models}); node-tests replaces what it "
                         "wrote there: write it elsewhere")
    if not case_dirs(root):
        raise UsageError(f"{models}: no evidence directories (model.onnx, proof.json or "
                         "test_data_set_0) under it")
    why = nt.not_ours(target)
    if why:
        raise UsageError(f"-o: {why}")
    from ..output.leftovers import json_document, sweep
    sweep(target / nt.MANIFEST, json_document("kind", "node-tests"))   # an older run's
    return root, target


def build(root: Path, target: Path) -> list[nt.Entry]:
    """Judge every evidence directory, give each written one a unique test name."""
    from ..output.check_evidence import case_dirs, read_records
    records = read_records(case_dirs(root))   # exit 2 on a damaged one, before any is judged
    entries = [nt.judge(d, root, rec) for d, rec in records.items()]
    seen: dict[str, str] = {}
    for e in entries:
        if e.name is not None and seen.setdefault(e.name, e.source) != e.source:
            raise UsageError(f"{e.source} and {seen[e.name]} both make the test {e.name}; "
                             "give node-tests one of them")
    return entries


def document(root: Path, target: Path, entries: list[nt.Entry],
             ran: list[Any] | None) -> dict[str, Any]:
    from ..output.documents import head
    from ..vocab import DocKind
    written = [e for e in entries if e.status is nt.Status.WRITTEN]
    summary: dict[str, Any] = {
        "directories": len(entries),
        "written": {k: sum(e.kind == k for e in written) for k in nt.KINDS},
        "explained": sum(e.status is nt.Status.EXPLAINED for e in entries),
        "refused": sum(e.status is nt.Status.REFUSED for e in entries)}
    failed = [r for r in ran or () if not r.passed]
    if ran is not None:
        summary["run"] = {k: {"passed": sum(r.passed for r in ran if r.kind == k),
                              "failed": sum(not r.passed for r in ran if r.kind == k)}
                          for k in nt.KINDS}
    code = EXIT_FINDING if summary["refused"] or failed else EXIT_OK
    reason = (f"{len(entries)} evidence directories: {len(written)} written ("
              + ", ".join(f"{v} {k}" for k, v in summary["written"].items())
              + f"), {summary['explained']} explained, {summary['refused']} refused")
    if ran is not None:
        reason += "; run: " + ", ".join(f"{k} {v['passed']} passed, {v['failed']} failed"
                                        for k, v in summary["run"].items())
    by_name = {r.name: r for r in ran or ()}
    return {**head(DocKind.NODE_TESTS, code, reason), "models": str(root), "out": str(target),
            "summary": summary,
            "directories": [{**e.as_json(), **({"run": _ran(by_name.get(e.name))}
                                               if ran is not None else {})} for e in entries]}


def _ran(r: Any) -> dict[str, Any] | None:
    return None if r is None else {"passed": r.passed, "detail": r.detail}


def text(doc: dict[str, Any], width: int | None) -> str:
    from ..output.text_table import wrap_line
    lines = []
    for d in doc["directories"]:
        if d["status"] != nt.Status.WRITTEN:
            lines += wrap_line(f"  {d['status']}  {d['source']}: {d['why']}: {d['detail']}",
                               width, "    ")
        elif d.get("run") and not d["run"]["passed"]:
            lines += wrap_line(f"  FAILED  {d['kind']}/{d['name']} ({d['source']}): "
                               f"{d['run']['detail']}", width, "    ")
    lines += wrap_line(f"node-tests: {doc['reason']}", width)
    kinds = [k for k, n in doc["summary"]["written"].items() if n]
    if kinds:
        lines += wrap_line(f"load them with onnx.backend.test.loader.load_model_tests("
                           f"data_dir={doc['out']!r}, kind=K) for K in "
                           + ", ".join(repr(k) for k in kinds), width)
    return "\n".join(lines) + "\n"


def command(models: str, out: str, run: bool, fmt: str, width: int | None) -> int:
    root, target = check(models, out)
    entries = build(root, target)
    written = {e.kind for e in entries if e.status is nt.Status.WRITTEN}
    from ..output.evidence import dumps
    # the tests and the manifest listing them commit together (output/commit.py)
    nt.write(target, entries, lambda digests: dumps(
        {**document(root, target, entries, None), "written": digests}))
    ran = None
    if run:
        from .node_tests_run import run_tree
        ran = run_tree(target, [k for k in nt.KINDS if k in written])
    doc = document(root, target, entries, ran)
    from ..output.report import to_json
    sys.stdout.write(to_json(doc) if fmt == "json" else text(doc, width))
    return doc["exit_code"]
