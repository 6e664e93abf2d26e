"""``tags OP --explain``: per parameter, the tag, each witness's outcome and the convention,
from the op's cases' records (verify-all's cache, or proved now in one worker; nothing is
written under models/), or its by-type rows when it has no case."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..errors import EXIT_OK


def explain_tags(op: str, tags: Any, opset: int | None, fmt: str, width: int,
                 cache_dir: Path) -> int:
    from ..cases import cases_for
    from ..engine.rules.by_type import decide_op, row_record
    from ..output.explain import explain, explain_text
    from ..output.report import to_json
    from .one_case import BatchOptions
    from .pool import run_batch
    cases = cases_for(op) if opset is None else reaching(op, opset)
    records, cached, by_type = [], 0, None
    if cases:
        result = run_batch(cases, BatchOptions(jobs=1, cache_dir=cache_dir))
        for warning in result.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        records, cached = result.records, result.cache_hits
    else:
        by_type = [row_record(r) for r in decide_op(tags) if r.decision is not None]
    data = explain(tags, records, cached, by_type)
    sys.stdout.write(to_json(data) if fmt == "json" else explain_text(data, width))
    return EXIT_OK


def reaching(op: str, opset: int) -> list:
    """The cases that prove the schema version in force at ``opset``: each case at its own
    opset where that version is in force there, else the variant an all-versions run
    proves it with (``versions.route``: ``softmax_axis1@12`` proves Softmax-11), the cases
    no route reaches left out."""
    from ..cases import cases_for
    from .versions import Gap, covers, route, variant, version_at
    v = version_at(op, opset)
    if v is None:   # another domain: no schema versions to route to
        return [c for c in cases_for(op) if c.export_opset <= opset]
    out = []
    for case in cases_for(op):
        if covers(case, v):
            out.append(case)
            continue
        r = route(case, v)
        if not isinstance(r, Gap):
            out.append(variant(case, r))
    return out
