"""The JSON contract, checked: every document validates against the schema its ``kind``
names, read from the package (``torch_prover/schemas/``), never from the code under test."""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

import jsonschema
from referencing import Registry, Resource

URN = "urn:torch-prover:schema:"


@lru_cache(maxsize=None)
def schemas() -> dict[str, dict[str, Any]]:
    """Every shipped schema by file stem (``proof``, ``batch-report``, ...)."""
    folder = resources.files("torch_prover") / "schemas"
    return {p.name.removesuffix(".json"): json.loads(p.read_text(encoding="utf-8"))
            for p in folder.iterdir() if p.name.endswith(".json")}


@lru_cache(maxsize=None)
def _registry() -> Registry:
    return Registry().with_resources(
        (s["$id"], Resource.from_contents(s)) for s in schemas().values())


def problems(doc: Any) -> list[str]:
    """Why ``doc`` breaks the contract ([] when it keeps it): no ``kind``, a kind without a
    schema, or the schema's own errors (each with its JSON path)."""
    if not isinstance(doc, dict) or "kind" not in doc or "format" not in doc:
        return [f"a JSON document without kind and format: {str(doc)[:120]}"]
    schema = schemas().get(str(doc["kind"]))
    if schema is None or doc["kind"] == "defs":
        return [f"kind {doc['kind']!r} has no schema in torch_prover/schemas/"]
    validator = jsonschema.Draft202012Validator(schema, registry=_registry())
    return [f"{doc['kind']}: {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}"
            for e in validator.iter_errors(doc)]


def validate_text(text: str) -> Any:
    """Parse one JSON document printed on stdout and check it; returns it."""
    doc = json.loads(text)
    found = problems(doc)
    assert not found, "\n".join(found)
    return doc
