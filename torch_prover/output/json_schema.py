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


def _inlined(node: Any, base: dict[str, Any], by_id: dict[str, Any], depth: int = 0) -> Any:
    """``node`` of schema ``base`` with every ``$ref`` replaced by what it names (a ``$ref``
    beside other keywords: both, under ``allOf``, as draft 2020-12 applies them)."""
    if depth > 64:
        raise RecursionError("a $ref cycle: the schema cannot be inlined")
    if isinstance(node, list):
        return [_inlined(v, base, by_id, depth) for v in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        uri, _, pointer = node["$ref"].partition("#")
        doc = by_id[uri] if uri else base
        target = doc
        for part in filter(None, pointer.split("/")):
            target = target[part]
        target = {k: v for k, v in _inlined(target, doc, by_id, depth + 1).items()
                  if k not in ("$id", "$schema", "$defs")}
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return {"allOf": [target, _inlined(rest, base, by_id, depth)]} if rest else target
    return {k: _inlined(v, base, by_id, depth) for k, v in node.items() if k != "$defs"}


@functools.lru_cache(maxsize=None)
def _flat_validator(kind: str):
    """``kind``'s schema with its references inlined: the same verdict on a document, a
    third faster (the all-versions report: each of its ~1,000 records' references no longer
    resolved through the registry one by one); its errors are not the ones to show."""
    import jsonschema
    by_id = {s["$id"]: s for s in _schemas().values()}
    return jsonschema.Draft202012Validator(_inlined(_schemas()[kind], _schemas()[kind], by_id))


def first_problem(doc: Any, kind: str) -> str | None:
    """Where and why ``doc`` is not a ``kind`` document (its JSON path and the schema's
    words, one line), or None when it is one. A valid document is checked once, by the
    inlined schema (``_flat_validator``); only one it refuses is walked again with the
    registry's, whose errors name the branch at fault (``_branch_error``)."""
    from jsonschema.exceptions import best_match
    if _flat_validator(kind).is_valid(doc):
        return None
    error = best_match(_validator(kind).iter_errors(doc))
    if error is None:
        return None
    error = _branch_error(error)
    where = "/".join(map(str, error.absolute_path)) or "(top)"
    message = " ".join(error.message.split())
    return f"{where}: {message[:160]}{'...' if len(message) > 160 else ''}"


def _branch_error(error):
    """The error to name: where ``best_match`` stopped at (or inside) a ``oneOf``/``anyOf``
    of document kinds (a report's ``cases``: a proof or a failed case), the error of the one
    branch whose ``kind`` the value has -- a bad field of a proof named as itself, never as
    the failed-case branch's "format: 1 was expected"."""
    from jsonschema.exceptions import best_match
    while True:
        parent = error
        while parent is not None and parent.validator not in ("oneOf", "anyOf"):
            parent = parent.parent
        if parent is None or not isinstance(parent.instance, dict):
            return error
        branches: dict[object, list] = {}
        for c in parent.context:
            branches.setdefault(c.relative_schema_path[0], []).append(c)
        fitting = [errs for errs in branches.values()
                   if not any(c.validator == "const" and list(c.relative_path) == ["kind"]
                              for c in errs)]
        if len(fitting) != 1:
            return error
        chosen = best_match(fitting[0])
        if chosen is error or chosen is None:
            return error
        if chosen.validator not in ("oneOf", "anyOf") and all(
                p.validator not in ("oneOf", "anyOf") for p in _ancestors(chosen, parent)):
            return chosen
        error = chosen


def _ancestors(error, stop):
    p = error.parent
    while p is not None and p is not stop:
        yield p
        p = p.parent
