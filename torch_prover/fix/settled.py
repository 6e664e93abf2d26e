"""What fix-tags may act on, of a report's per-version table (``batch/version_table``): the
decided cells, and the records kept only where their cell is decided for the tag they
support. Apart from the table itself because only fix-tags reads the table this way."""
from __future__ import annotations

from typing import Any

from ..batch.version_table import DECIDED
from ..errors import UsageError


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


def domain_report(rep: dict[str, Any], domain: str) -> dict[str, Any]:
    """The report of a ``verify-all --domain`` run (ai.onnx.ml, ai.onnx.preview.training,
    ai.onnx.preview) as fix-tags plans it: its records of ``domain`` and, as its versions section, that
    domain's cells as the table has them (``batch/domain_versions.domain_ops`` over those
    records: each parameter decided by the records of its version, else by type, else
    undecided). ``report_records`` then reads it as an all-versions report's: the same
    path as ai.onnx's, every decided cell planned and no undecided one. UsageError when
    the report has no proved case of ``domain`` (an ai.onnx run's report, say)."""
    from ..batch.domain_versions import domain_ops
    mine = [r for r in rep.get("cases") or () if isinstance(r, dict)
            and r.get("domain") == domain]
    if not any(r.get("status") == "proved" for r in mine):
        raise UsageError(f"--domain {domain}: the report has no proved case of that domain; "
                         f"make it with `torch-prover verify-all --domain {domain} --report "
                         "FILE`")
    return {**rep, "cases": mine, "versions": {"ops": domain_ops(domain, mine)}}
