"""The JSON documents torch-prover prints and writes: each carries ``kind`` (``vocab.DocKind``)
and ``format`` (the version of that kind's shape), and is described by a JSON Schema
shipped in the package, ``torch_prover/schemas/<kind>.json`` (docs/json.md).

What a command prints on stdout with ``--format json`` is one object that also carries
``status`` (``errors.Outcome``: the word for its exit code) and a one-line ``reason``,
whatever the exit code: a CI step can always parse stdout. Pure functions of data.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from ..errors import EXIT_OK, EXIT_USAGE, Outcome
from ..vocab import DocKind

if TYPE_CHECKING:   # a name for annotations only: `table` runs without onnx (docs/table.md)
    from ..tags.schema import SchemaTags

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"
FORMAT = 1
"""The format of every kind but the proof record's (``engine/record.py: RECORD_FORMAT``)
and a failed case's (``batch/one_case.py``)."""


def schema_path(kind: DocKind | str) -> Path:
    """The JSON Schema of documents of ``kind``."""
    return SCHEMA_DIR / f"{DocKind(kind)}.json"


def head(kind: DocKind, code: int, reason: str) -> dict[str, Any]:
    """The fields every command document starts with."""
    return {"kind": kind, "format": FORMAT, "status": Outcome.of_exit(code),
            "reason": reason, "exit_code": code}


def error_doc(command: str | None, outcome: Outcome, code: int, reason: str) -> dict[str, Any]:
    """What any command prints with ``--format json`` when it ends on an error (exit 2, 3,
    130): the same one line as on stderr, and which command it was (None when the
    arguments did not name one)."""
    return {"kind": DocKind.ERROR, "format": FORMAT, "status": outcome, "reason": reason,
            "exit_code": code, "command": command}


def _case_line(rec: dict[str, Any]) -> str:
    return f"{rec['op']}/{rec['case']}: {rec['status']}"


def proofs_doc(kind: DocKind, records: list[dict[str, Any]], code: int) -> dict[str, Any]:
    """``prove`` (any number of cases) and ``run`` (one): the proof records in ``cases``,
    one shape whatever the flags."""
    if code == EXIT_OK:
        reason = "no undeclared disagreement or failed check: " + "; ".join(
            _case_line(r) for r in records)
    elif code == EXIT_USAGE:    # run: an invalid case (pr/runner.py)
        reason = "the script's model cannot be proved: " + "; ".join(
            _case_line(r) for r in records)
    else:
        reason = "a finding: " + "; ".join(_case_line(r) for r in records)
    return {**head(kind, code, reason), "cases": records}


def coverage_doc(summary: dict[str, Any], ops: list[dict[str, Any]], reason: str
                 ) -> dict[str, Any]:
    return {**head(DocKind.COVERAGE, EXIT_OK, reason), "summary": summary, "ops": ops}


def tags_doc(tags: SchemaTags) -> dict[str, Any]:
    """``tags --format json``: an op's schema tags, parameter by parameter."""
    reason = f"the tags of {tags.op}-{tags.since_version} from {tags.source}"
    return {**head(DocKind.TAGS, EXIT_OK, reason),
            "op": tags.op, "domain": tags.domain,
            "since_version": tags.since_version, "source": tags.source,
            "parameters": [{"io": f.io, "index": f.position, "name": f.name, "option": f.option,
                            "tag": f.tag, "types": list(f.types),
                            "non_differentiable_by_type": f.non_differentiable_by_type}
                           for f in tags.inputs + tags.outputs]}


def fix_tags_doc(code: int, reason: str, counts: dict[str, Any], patch: str | None,
                 pr_text: str | None, lines: Iterable[str]) -> dict[str, Any]:
    return {**head(DocKind.FIX_TAGS, code, reason), "counts": counts, "patch": patch,
            "pr_text": pr_text, "summary": list(lines)}
