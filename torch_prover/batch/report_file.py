"""A saved batch report read back: ``load_batch_report``, the one function that does it.

A report on disk is untrusted input (docs/design.md §4: trust nothing you read): a file
someone edited, a report of another tool version, a truncated download. It is rendered
only if it is the document verify-all writes: valid JSON, valid against the shipped
schema of its kind (``torch_prover/schemas/batch-report.json``, with the proof and
failed-case schemas it refers to), and consistent where a forged summary would change
what the rendering says: its status and exit code are the ones its summary gives
(``run_totals.exit_code``), and its verdict counts are its records'. Anything else is one
line and exit 2 (``UsageError``), before anything is written.
"""
from __future__ import annotations

import json
from collections import Counter
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from .. import preflight
from ..errors import Outcome, UsageError
from ..vocab import DocKind

_URN = "urn:torch-prover:schema:"


@lru_cache(maxsize=1)
def _validator():
    """The batch report's JSON Schema (Draft 2020-12), its references resolved from the
    schemas shipped in the package."""
    import jsonschema
    from referencing import Registry, Resource
    folder = resources.files("torch_prover") / "schemas"
    schemas = [json.loads(p.read_text(encoding="utf-8")) for p in folder.iterdir()
               if p.name.endswith(".json")]
    registry = Registry().with_resources((s["$id"], Resource.from_contents(s))
                                         for s in schemas if "$id" in s)
    main = next(s for s in schemas if s.get("$id") == _URN + DocKind.BATCH_REPORT)
    return jsonschema.Draft202012Validator(main, registry=registry)


def schema_problem(doc: Any) -> str | None:
    """The most telling way ``doc`` breaks the batch report's schema, in one line, or None."""
    import jsonschema
    error = jsonschema.exceptions.best_match(_validator().iter_errors(doc))
    if error is None:
        return None
    where = "/".join(map(str, error.absolute_path)) or "(top)"
    message = error.message if len(error.message) <= 160 else error.message[:157] + "..."
    return f"{where}: {message}"


def _consistency_problem(doc: dict[str, Any]) -> str | None:
    """Where the summary contradicts the report's own fields or records."""
    from ..output.run_totals import exit_code   # batch.summary's, without the catalogue
    code = exit_code(doc)
    if doc["exit_code"] != code or doc["status"] != Outcome.of_exit(code):
        return (f"its status says exit {doc['exit_code']} ({doc['status']}), its summary "
                f"gives exit {code}")
    counted = Counter(p["verdict"] for r in doc["cases"] for p in r.get("parameters") or ())
    said = doc["summary"]["parameters"]
    for verdict, n in said.items():
        if counted.get(verdict, 0) != n:
            return (f"summary/parameters/{verdict}: says {n}, its cases hold "
                    f"{counted.get(verdict, 0)}")
    if doc["summary"]["cases"] != len(doc["cases"]):
        return f"summary/cases: says {doc['summary']['cases']}, it holds {len(doc['cases'])}"
    return None


def load_batch_report(path: str, what: str = "report") -> dict[str, Any]:
    """The batch report (verify-all's or merge's ``--format json``) at ``path``, checked;
    UsageError (one line naming ``what`` and the path) when it is not one."""
    preflight.readable_file(path, what)
    try:
        doc = json.loads(Path(path).read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, RecursionError) as exc:
        raise UsageError(f"{what} {path}: cannot read it ({type(exc).__name__})") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{what} {path}:{exc.lineno}: not JSON ({exc.msg})") from None
    if not isinstance(doc, dict) or doc.get("kind") != DocKind.BATCH_REPORT:
        kind = doc.get("kind") if isinstance(doc, dict) else None
        raise UsageError(f"{what} {path}: not a batch report (kind {kind!r}); give the JSON "
                         "report of `torch-prover verify-all` or `merge` (--format json)")
    try:
        problem = schema_problem(doc) or _consistency_problem(doc)
    except RecursionError:
        problem = "nested too deeply to be one"
    if problem:
        raise UsageError(f"{what} {path}: not a valid batch report: {problem}")
    return doc
