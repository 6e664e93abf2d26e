"""The units every count names (``count``, ``UNITS``): the same words in every format.

A module of its own, below the renderings, so that ``report`` and ``run_totals`` (which
``report`` uses for a run's totals) can both name their counts without importing each
other.
"""
from __future__ import annotations

_PLURAL = {"op": "ops", "case": "cases", "parameter": "parameters", "case result": "case results",
           "proof": "proofs", "version variant": "version variants",
           "schema version": "schema versions"}
UNITS = ("ops: ai.onnx operators; cases: catalogue cases; parameters: one input or output of "
         "one schema version; case results: one parameter's verdict in one case")
"""The units every count names, the same words in every format (text, Markdown, HTML,
fix-tags): a count without its unit was read as 19, 30, 34, 39 and 57 'disagreements'."""


def count(n: int, unit: str) -> str:
    """``3 parameters``, ``1 case result``: a number with its unit (``_PLURAL``)."""
    return f"{n} {unit if n == 1 else _PLURAL[unit]}"
