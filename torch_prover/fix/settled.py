"""What fix-tags may act on, of a report's per-version table (``batch/version_table``): the
decided cells, and the records kept only where their cell is decided for the tag they
support. Apart from the table itself because only fix-tags reads the table this way."""
from __future__ import annotations

from typing import Any

from ..batch.version_table import DECIDED


def settled_cells(section: Any) -> dict[tuple[str, int, str, str], str] | None:
    """(op, version, io, parameter name) -> the supported tag of every decided cell of a
    report's versions section (None: the report has none): what ``fix-tags`` may act on.
    An inconclusive cell -- a failed variant, versions that disagree, cases in conflict --
    is not in it."""
    if not isinstance(section, dict) or not isinstance(section.get("ops"), list):
        return None
    out = {}
    for o in section["ops"]:
        for e in (o.get("versions") or []) if isinstance(o, dict) else []:
            for c in (e.get("cells") or []) if isinstance(e, dict) else []:
                if isinstance(c, dict) and c.get("verdict") in DECIDED and c.get("supports"):
                    out[(o.get("op"), e.get("version"), c.get("io"), c.get("name"))] = \
                        c["supports"]
    return out


def settled_only(records: list[dict[str, Any]], section: Any) -> list[dict[str, Any]]:
    """``records`` with every parameter whose cell in ``section`` (a report's versions
    section) is not decided, or is decided for another tag, left out; all of them when the
    report has no versions section."""
    settled = settled_cells(section)
    if settled is None:
        return records
    out = []
    for r in records:
        params = r.get("parameters")
        if not isinstance(params, list):
            out.append(r)
            continue
        keep = [p for p in params if isinstance(p, dict) and settled.get(
            (r.get("op"), r.get("schema_version"), p.get("io"), p.get("name")))
            == p.get("supports")]
        out.append({**r, "parameters": keep})
    return out
