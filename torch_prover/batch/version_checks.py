"""The cross-version self-check: one parameter, the same in two schema versions, decided two
ways.

A tag is copied forward from version to version, and so is the parameter's meaning: where
a parameter keeps its name, its type constraint (the constraint's name and its allowed
types) and its description -- unchanged, or only added to (Resize-18's ``roi`` adds "or
the length of axes, if provided" for its new ``axes`` attribute) -- two versions whose
evidence supports different tags contradict each other: one of the two proofs did not
exercise what it claims (Resize-11's ``roi`` read as non-differentiable from cases whose
coordinate mode ignores it, Resize-18's as differentiable from the one that uses it).
Neither cell is then decided: both become ``inconclusive`` (rule ``versions disagree``,
failing the run), and ``fix-tags`` edits neither.
"""
from __future__ import annotations

import functools
import itertools
import re
from typing import Any

import onnx.defs

VERSIONS_DISAGREE = "versions disagree"
"""The rule of a cell the self-check made inconclusive."""


@functools.lru_cache(maxsize=None)
def _formal(op: str, version: int, io: str, name: str) -> tuple[str, tuple[str, ...], str] | None:
    """(type constraint, its allowed types, description) of ``op``-``version``'s parameter."""
    try:
        s = onnx.defs.get_schema(op, version, "")
    except onnx.defs.SchemaError:
        return None
    formals = s.inputs if io == "input" else s.outputs
    p = next((p for p in formals if p.name == name), None)
    if p is None:
        return None
    types = next((tuple(sorted(c.allowed_type_strs)) for c in s.type_constraints
                  if c.type_param_str == p.type_str), (p.type_str,))
    return p.type_str, types, p.description


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text)


def _kept(old: str, new: str) -> bool:
    """Every word of ``old`` is in ``new``, in order: ``new`` only adds to it."""
    rest = iter(_words(new))
    return all(w in rest for w in _words(old))


def same_parameter(op: str, a: int, b: int, io: str, name: str) -> bool:
    """Whether ``name`` is the same parameter in ``op``-``a`` and ``op``-``b``: the same type
    constraint and allowed types, and a description the later version only adds to."""
    fa, fb = _formal(op, min(a, b), io, name), _formal(op, max(a, b), io, name)
    if fa is None or fb is None:
        return False
    return fa[:2] == fb[:2] and _kept(fa[2], fb[2])


def flag(op: str, cells: dict[int, dict[tuple[str, int], dict[str, Any]]]) -> int:
    """Make inconclusive, in place, every decided cell of ``cells`` (version -> cells) whose
    parameter another version decides otherwise although it is the same parameter there.
    Returns how many cells it flagged."""
    by_name: dict[tuple[str, str], list[tuple[int, dict[str, Any]]]] = {}
    for version, row in sorted(cells.items()):
        for c in row.values():
            if c.get("supports") and c["verdict"] != "inconclusive" and c["rule"] != "by type":
                by_name.setdefault((c["io"], c["name"]), []).append((version, c))
    clashes: dict[int, list[str]] = {}
    for (io, name), found in by_name.items():
        for (va, ca), (vb, cb) in itertools.combinations(found, 2):
            if ca["supports"] != cb["supports"] and same_parameter(op, va, vb, io, name):
                for c, (w, d) in ((ca, (vb, cb)), (cb, (va, ca))):
                    clashes.setdefault(id(c), []).append(
                        f"{op}-{w} supports {d['supports']} ({', '.join(d['cases'])})")
    flagged = 0
    for row in cells.values():
        for key, c in row.items():
            others = clashes.get(id(c))
            if others is None:
                continue
            row[key] = {**c, "verdict": "inconclusive", "supports": None,
                        "rule": VERSIONS_DISAGREE, "failing": True,
                        "evidence_supports": c["supports"],
                        "reason": (f"versions disagree: this version's evidence supports "
                                   f"{c['supports']} ({', '.join(c['cases'])}), but "
                                   f"{'; '.join(others)}, and the parameter's name, type "
                                   f"constraint and description are the same there")}
            flagged += 1
    return flagged
