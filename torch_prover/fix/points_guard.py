"""fix-tags makes no edit ONNX's own node tests contradict (issue 32, "Done when").

An edit that sets a parameter non-differentiable is withheld, with its reason
(``plan.Withheld.ONNX_POINTS``), when ONNX's points show a smooth nonzero derivative for a
parameter it changes -- every schema the edit's call site declares, so a shared generator's
edit is held for any of its users. The rule is the report's (``engine/onnx_points/judge.
cell_state``: ``contradict``), at the points the report's witness uses: the installed onnx's
node tests, at most ``batch/onnx_points.PER_VERSION`` per schema version, collected once into
the result cache (``engine/onnx_points/store.py``). Only the schema versions such an edit
changes are measured, so a plan without one reads nothing. The report's own ``onnx_points``
section is not trusted for this: a saved report carries it as data, not re-derived.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..batch.onnx_points import PointsRun, points_for
from ..engine.onnx_points.judge import cell_state
from ..tags.schema import UnknownOpError, schema_tags
from ..vocab import PointsState, Tag
from .plan import Edit, Plan, Withheld


def _names(edit: Edit) -> list[tuple[str, int, str, int, str]]:
    """The (op, version, io, index, name) of every ai.onnx parameter the edit changes (the
    names from the installed onnx's schemas: an op it lacks has no node test either)."""
    if any(f.domain not in ("", "ai.onnx") for f in edit.findings):
        return []
    out = []
    for op, version, io, index in edit.users:
        try:
            formal = schema_tags(op, version).formal(io, index)
        except UnknownOpError:
            continue
        if formal is not None:
            out.append((op, version, io, index, formal.name))
    return out


def contradiction(run: PointsRun, edit: Edit) -> str | None:
    """Why ONNX's points contradict the edit's tag, naming the parameter and the tests; None
    when they do not (agree, not exercised, not available)."""
    for op, version, io, index, name in _names(edit):
        if cell_state(edit.tag, run.outcomes(op, version, io, name)) is PointsState.CONTRADICT:
            return (f"{op}-{version} {io} {index} ({name}) is smooth and nonzero at ONNX's node "
                    f"tests ({', '.join(run.used(op, version))}); {edit.site.path}:"
                    f"{edit.site.line} would say {edit.tag}")
    return None


def _checked(edit: Edit) -> bool:
    """Whether ONNX's points can contradict the edit: a non-differentiable one the math
    decides. An edit every verdict of which a named convention decides (only with
    --include-conventions) sets the math aside by declaration, and its PR text names the
    convention: the points measure the math, so they do not hold it (the report's rule,
    ``batch.onnx_points.by_convention``)."""
    return edit.tag is Tag.NONDIFF and not all(f.conventions for f in edit.findings)


def guarded(plan: Plan, cache_dir: Path | None) -> tuple[Plan, tuple[str, ...]]:
    """``plan`` with every edit ONNX's points contradict withheld (each of its parameters
    listed with the reason); and the warnings of reading ONNX's tests."""
    keys = {(op, version) for e in plan.edits if _checked(e) for op, version, *_ in _names(e)}
    if not keys:
        return plan, ()
    points = points_for(keys, cache_dir, body=False)
    kept, held = [], []
    for e in plan.edits:
        why = contradiction(points.run, e) if _checked(e) else None
        if why is None:
            kept.append(e)
        else:
            held += [(f, Withheld.ONNX_POINTS, why) for f in e.findings]
    if not held:
        return plan, points.warnings
    return (replace(plan, edits=tuple(kept), withheld=plan.withheld + tuple(held)),
            points.warnings)
