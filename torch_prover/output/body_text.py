"""The function-body witness of a proof record in words, for the text and Markdown renderings.

A module of its own because every rendering of a proof shows it in one line, beside the
numeric check's (``report.py``), and the report module is at its size limit.
"""
from __future__ import annotations

from typing import Any


def body_summary(rec: dict[str, Any]) -> str:
    """The function-body witness of a record in one line (``engine/bodies/function_body.py``):
    which body it read and each parameter's outcome, with the path it found."""
    b = rec.get("function_body")
    found = [(p, p.get("witnesses", {}).get("function_body")) for p in rec["parameters"]]
    found = [(p, w) for p, w in found if w is not None]
    if b is None or b.get("kind") is None:
        w = found[0][1] if found else {"outcome": "not applicable", "detail": "no function body"}
        return (f"function body: {w['outcome']}" + (f" for {b['schema']}" if b else "")
                + f": {w['detail']}")
    parts = [f"{p['io']} {p['index']} {p['name']} {w['outcome']} ("
             + (" -> ".join(w["path"]) if w["outcome"] == "differentiable" else w["detail"])
             + ")" for p, w in found]
    return (f"function body ({b['schema']}, {b['kind']}, opset {b['opset']}): "
            + "; ".join(parts))
