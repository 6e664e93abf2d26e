"""The catalogue. Every module in this package (but ``reference.py``, the reference-op
machinery the cases use) may define ``CASES = [Case(...), ...]``.

Cases are discovered by walking the package (no registration side effects, no hand
list). Names are unique; ops are checked against onnx.defs.
"""
from __future__ import annotations

import difflib
import functools
import importlib
import pkgutil

import onnx.defs

from ..case import Case
from ..errors import CaseError


MISSING_CATEGORIES = ("string op", "no PyTorch counterpart", "needs a package not installable here",
                      "exporter cannot produce it", "a case would prove nothing", "not yet written")
"""Why an op has no case. ``a case would prove nothing``: a case could be written, but
neither witness could say the opposite of what it would say (SequenceEmpty: no input,
an empty output), so its verdict would be the structure speaking, not evidence; such an
op is decided by type (``engine/rules/by_type.py``) or not at all."""


MACHINERY = ("reference",)
"""Modules of this package that hold no cases: the reference-op machinery they use."""


def case_modules():
    """Every catalogue module, in name order."""
    return [importlib.import_module(f"{__name__}.{info.name}")
            for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name)
            if not info.name.startswith("_") and info.name not in MACHINERY]


def module_of(case: Case) -> str:
    """Name of the catalogue module defining ``case`` (its cache fingerprint uses it)."""
    return _module_index()[case.variant_of or case.name]


@functools.lru_cache(maxsize=1)
def _module_index() -> dict[str, str]:
    return {c.name: m.__name__ for m in case_modules()   # the other domains' cases too
            for c in (*getattr(m, "CASES", ()), *getattr(m, "DOMAIN_CASES", ()))}


@functools.lru_cache(maxsize=1)
def all_missing() -> dict[str, tuple[str, str]]:
    """op -> (category, reason) for ops the catalogue cannot cover, from ``MISSING`` tables."""
    found: dict[str, tuple[str, str]] = {}
    owner: dict[str, str] = {}
    for module in case_modules():
        for op, entry in getattr(module, "MISSING", {}).items():
            if op in owner:
                raise CaseError(f"MISSING[{op!r}] is given twice ({owner[op]} and "
                                f"{module.__name__}): keep one reason")
            owner[op] = module.__name__
            category, reason = entry
            if category not in MISSING_CATEGORIES:
                raise CaseError(f"{module.__name__}: MISSING[{op!r}] has category {category!r}; "
                                f"use one of {', '.join(MISSING_CATEGORIES)}")
            found[op] = (category, reason)
    return found


@functools.lru_cache(maxsize=1)
def all_cases() -> tuple[Case, ...]:
    found: list[Case] = []
    seen: dict[str, str] = {}
    for module in case_modules():
        info = type("Info", (), {"name": module.__name__.rsplit(".", 1)[-1]})
        if getattr(module, "SCAFFOLD", None):   # gate/scaffold.py: never proved unwritten
            raise CaseError(f"cases/{info.name}.py is a new-case scaffold not yet completed: "
                            f"{module.SCAFFOLD}")
        for case in getattr(module, "CASES", ()):
            if not isinstance(case, Case):
                raise CaseError(f"cases/{info.name}.py: CASES holds a {type(case).__name__}, not a Case")
            if case.name in seen:
                raise CaseError(f"case name {case.name!r} is defined twice "
                                f"(cases/{seen[case.name]}.py and cases/{info.name}.py)")
            if not onnx.defs.has(case.op, case.domain):
                raise CaseError(f"cases/{info.name}.py: case {case.name!r} names op {case.op!r}, "
                                f"which onnx.defs does not know")
            seen[case.name] = info.name
            found.append(case)
    return tuple(found)


def cases_for(op: str) -> list[Case]:
    return [c for c in all_cases() if c.op == op]


def find_case(op: str, name: str | None = None) -> Case:
    """The named case of op (or its first case); CaseError naming what exists otherwise."""
    mine = cases_for(op)
    if not mine:
        raise CaseError(f"no case for op {op!r} in the catalogue")
    if name is None:
        return mine[0]
    for c in mine:
        if c.name == name:
            return c
    raise CaseError(f"op {op} has no case {name!r}; its cases: {', '.join(c.name for c in mine)}")


def closest_ops(op: str, n: int = 3) -> list[str]:
    from ..tags.schema import all_ops
    return difflib.get_close_matches(op, all_ops(), n=n, cutoff=0.5) or \
        difflib.get_close_matches(op.capitalize(), all_ops(), n=n, cutoff=0.4)
