"""A JSON document read back, checked against the schema its kind ships with
(``torch_prover/schemas/<kind>.json``) before anything is read from it.

The schemas are the contract every document torch-prover writes keeps (the test suite
validates each one it produces); reading a report back, the same schema says whether it is
one: a count that is a string, a record without a case, an opset spelled out, a verdict
outside the vocabulary is refused in one line, never met later as a crash. ``jsonschema``
(a runtime dependency since reports are read back: docs/safety.md) does the checking; its
draft 2020-12 support and ``referencing`` registry are what a hand-written walker would
have to re-implement.
"""
from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

URN = "urn:torch-prover:schema:"


@functools.lru_cache(maxsize=None)
def _schemas() -> dict[str, dict[str, Any]]:
    folder = resources.files("torch_prover") / "schemas"
    return {p.name.removesuffix(".json"): json.loads(p.read_text(encoding="utf-8"))
            for p in folder.iterdir() if p.name.endswith(".json")}


@functools.lru_cache(maxsize=None)
def _validator(kind: str):
    import jsonschema
    from referencing import Registry, Resource
    registry = Registry().with_resources(
        (s["$id"], Resource.from_contents(s)) for s in _schemas().values())
    return jsonschema.Draft202012Validator(_schemas()[kind], registry=registry)


def first_problem(doc: Any, kind: str) -> str | None:
    """Where and why ``doc`` is not a ``kind`` document (its JSON path and the schema's
    words, one line), or None when it is one."""
    from jsonschema.exceptions import best_match
    error = best_match(_validator(kind).iter_errors(doc))
    if error is None:
        return None
    where = "/".join(map(str, error.absolute_path)) or "(top)"
    message = " ".join(error.message.split())
    return f"{where}: {message[:160]}{'...' if len(message) > 160 else ''}"
