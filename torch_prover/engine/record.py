"""The proof record: the one JSON shape of proof.json, ``--format json`` and the batch report.

Format 2 (DESIGN §3): every parameter carries its two witnesses (``autograd`` and
``numeric``, each an outcome and a one-line detail), the tag its evidence ``supports``
(or null), the ``rule`` of the verdict table that decided, ``through`` (computing ops
between the PyTorch tensor and the node, when any), ``vjp`` (PyTorch's VJP against the
model's finite differences, when compared), and, when the latest schema's tag differs
from the one at the export opset, ``tag_latest`` and ``verdict_latest``.
Nothing in a record is floating-point noise: error magnitudes are bounds
(``numeric.shown_error``), so any machine writes the same bytes.
"""
from __future__ import annotations

import importlib.metadata
from typing import TYPE_CHECKING, Any

from .numeric import NumericResult, VjpCheck, shown_error, shown_value
from .verdict import Vjp
from .witnesses import Parameter

if TYPE_CHECKING:
    from .prove import Proof

RECORD_FORMAT = 2


def versions() -> dict[str, str]:
    out = {}
    for dist in ("torch", "onnx", "onnxruntime", "onnxscript", "torch-prover"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def record(proof: "Proof") -> dict[str, Any]:
    w = proof.witness[0] if proof.witness else None
    return {
        "format": RECORD_FORMAT,
        "op": proof.op, "domain": proof.case.domain, "case": proof.case.name,
        "kind": proof.case.kind, "opset": proof.opset, "exporter": proof.exporter,
        "schema_version": proof.schema_version, "latest_schema_version": proof.latest_version,
        "tags_from": proof.tag_source,
        "versions": proof.versions, "seeds": list(proof.case.seeds),
        "status": proof.status, "invalid": proof.invalid,
        "parameters": [parameter_record(p) for p in proof.parameters],
        "numeric": numeric_record(proof.numeric),
        "witness": None if w is None else {
            "runtime": w.runtime, "why": w.why or None, "node": w.node_name,
            "reproduces": w.reproduces},
        "model": {"path": "model.onnx", "sha256": proof.sha256},
        **({"helper_nodes": list(proof.helper_nodes)} if proof.helper_nodes else {}),
    }


def numeric_record(n: NumericResult | None) -> dict[str, Any] | None:
    if n is None:
        return None
    return {
        "runtime": n.runtime, "why": n.why or None,
        "forward_max_abs_err": (None if n.forward_max_abs_err is None else
                                shown_error(n.forward_max_abs_err, n.fwd_bound)),
        "forward_ok": n.forward_ok, "forward_detail": n.forward_detail,
        "vjp_rel_err": {k: shown_error(c.rel_err, n.vjp_tol) for k, c in sorted(n.vjp.items())},
        "vjp": {k: _vjp_record(c, n.vjp_tol, n.vjp_all.get(k, ()))
                for k, c in sorted(n.vjp.items())},
        "step": n.step, "fwd_tol": n.fwd_tol, "vjp_tol": n.vjp_tol}


def _vjp_record(worst: VjpCheck, tol: float, every) -> dict[str, Any]:
    """One source's VJP checks as committed: pass/fail, the seeds, the error bound; the two
    derivative values only when they disagree (a passing pair is noise in its late digits)."""
    rec: dict[str, Any] = {"ok": worst.ok, "seeds": sorted({c.seed for c in every}),
                           "rel_err": shown_error(worst.rel_err, tol)}
    if not worst.ok:
        rec["seed"] = worst.seed
        rec["fd"] = shown_value(worst.fd)
        rec["analytic"] = shown_value(worst.analytic)
    return rec


def parameter_record(p: Parameter) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "io": p.io, "index": p.index, "name": p.name, "source": p.source,
        "evidence": p.evidence, "tag": p.tag, "verdict": p.verdict,
        "supports": p.supports, "rule": p.rule,
        "witnesses": {"autograd": {"outcome": p.autograd.outcome, "detail": p.autograd.detail},
                      "numeric": {"outcome": p.numeric.outcome, "detail": p.numeric.detail}},
        "reason": p.reason}
    if p.tag_latest is not None:
        rec["tag_latest"] = p.tag_latest
        rec["verdict_latest"] = p.verdict_latest
    if p.path:
        rec["path"] = list(p.path)
    if p.through:
        rec["through"] = list(p.through)
    if p.vjp != Vjp.NOT_RUN:
        rec["vjp"] = p.vjp
    if p.expected is not None:
        rec["expected"] = {"verdict": p.expected, "reason": p.expected_reason}
    return rec
