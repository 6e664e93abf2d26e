"""The proof record: the one JSON shape of proof.json, ``--format json`` and the batch report.

Format 3 (docs/design.md, "The proof record"; schema: ``schemas/proof.json``): every
parameter carries its witnesses (``autograd``, ``numeric`` and ``function_body``, each an
outcome and a one-line detail; the body's also the ``path`` it found), the tag its
evidence ``supports``
(or null), the ``rule`` of the verdict table that decided, ``through`` (computing ops
between the PyTorch tensor and the node, when any), ``vjp`` (PyTorch's VJP against the
model's finite differences, when compared), and, when the latest schema's tag differs
from the one at the export opset, ``tag_latest`` and ``verdict_latest``. ``test_data``
says how to re-run the evidence files (``engine/test_data.py``): the runtime that
reproduces the outputs, the forward tolerance, and each output's check.
Nothing in a record is floating-point noise: error magnitudes are bounds
(``numeric.shown_error``), so any machine writes the same bytes.
"""
from __future__ import annotations

import importlib.metadata
import hashlib
from dataclasses import dataclass, field
from typing import Any

import onnx

from ..case import Case
from ..vocab import DocKind, Evidence, Tag, Verdict
from .numeric import node_witness
from .numeric import numeric as numeric_mod
from .versions.fidelity import Fidelity
from .bodies.function_body import BodyResult
from . import test_data
from .numeric.numeric import NumericResult, VjpCheck, shown_error, shown_value
from .probe import ProbeResult
from .rules.verdict import Rule, Vjp, is_failure, judge
from .witnesses import Parameter

RECORD_FORMAT = 3
"""3: ``kind`` says what the document is (``"proof"``; the case's natural / reference is
``case_kind``), and ``versions`` no longer holds torch-prover's own version."""

EVIDENCE_DISTRIBUTIONS = ("torch", "onnx", "onnxruntime", "onnxscript")
"""The packages whose versions determine the evidence. torch-prover's own version is not
among them: a release that changes no verdict must not rewrite every committed record
(the engine's source is what the result cache keys on)."""


_VERSIONS: dict[str, str] = {}


def versions() -> dict[str, str]:
    """The evidence packages' installed versions, read once per process (they do not change
    under it; forked workers inherit them): reading their metadata per proof was ~5% of a
    worker's CPU."""
    if not _VERSIONS:
        for dist in EVIDENCE_DISTRIBUTIONS:
            try:
                _VERSIONS[dist] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                _VERSIONS[dist] = "not installed"
    return dict(_VERSIONS)


@dataclass(frozen=True)
class Proof:
    case: Case
    opset: int
    exporter: str
    schema_version: int
    latest_version: int
    parameters: tuple[Parameter, ...]
    numeric: numeric_mod.NumericResult | None
    model: onnx.ModelProto
    invalid: str | None
    probe: ProbeResult
    graph_inputs: tuple[str, ...]
    graph_outputs: tuple[str, ...]
    tag_source: str = "onnx.defs"
    versions: dict[str, str] = field(default_factory=versions)
    witness: tuple[node_witness.NodeWitness, ...] = ()   # one per probe seed
    helper_nodes: tuple[str, ...] = ()   # other nodes of the target's type (not proved)
    route_note: str = ""     # a relabelled export (export.export_case): how and why
    adaptations: tuple[Any, ...] = ()    # adapters.Adaptation: what relabelling changed
    body: BodyResult | None = None       # the op's function body, expanded for the node
    notes: tuple[str, ...] = ()          # what the mapping cost, with the stricter proof
    node: int | None = None              # the proved node's index in the graph (not recorded)
    fidelity: Fidelity | None = None     # whether the run was one of its schema version

    @property
    def op(self) -> str:
        return self.case.op

    @property
    def model_bytes(self) -> bytes:
        return self.model.SerializeToString(deterministic=True)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.model_bytes).hexdigest()

    def count(self, verdict: Verdict) -> int:
        return sum(p.verdict == verdict for p in self.parameters)

    @property
    def status(self) -> str:
        """invalid | failed | disagree | inconclusive | proved (``status_of``)."""
        return status_of(bool(self.invalid),
                         [(p.verdict, p.rule, p.expected) for p in self.parameters])

    @property
    def failures(self) -> list[Parameter]:
        """What makes a proof fail: invalid, or a disagreement or an inconclusive verdict on
        evidence that should have decided -- unless the case declares exactly that verdict
        with its reason (a reviewed, known finding: docs/design.md §1.2, "unwaived")."""
        if self.invalid:
            return list(self.parameters) or [None]  # type: ignore[list-item]
        return [p for p in self.parameters if is_failure(p.verdict, p.rule, p.expected)]

    @property
    def unexpected(self) -> list[Parameter]:
        """Parameters whose verdict differs from what the case and the schema lead one to
        expect (``expected_verdict``): never derived from the verdict itself."""
        return [p for p in self.parameters if p.verdict != expected_verdict(self.case, p)]

    def record(self) -> dict[str, Any]:
        return record(self)


def status_of(invalid: bool, verdicts: list[tuple[Verdict, Rule, Verdict | None]]) -> str:
    """A proof's status from its parameters' (verdict, rule, declared verdict): invalid |
    failed | disagree | inconclusive | proved -- and exactly ``failed`` or ``invalid`` (or
    an undeclared ``disagree``) is what makes the exit code 1. One rule for a proof and
    for a record read back (``engine/recheck.py``)."""
    if invalid:
        return "invalid"
    failing = [v for v, rule, expected in verdicts if is_failure(v, rule, expected)]
    if Verdict.DISAGREE in failing:
        return "disagree"
    if failing:
        return "failed"
    seen = [v for v, _, _ in verdicts]
    if Verdict.DISAGREE in seen:
        return "disagree"
    if Verdict.INCONCLUSIVE in seen and not (Verdict.AGREE in seen or Verdict.PROPOSED in seen):
        return "inconclusive"
    return "proved"


def expected_verdict(case: Case, p: Parameter) -> Verdict:
    """What a parameter's verdict should be, from outside the engine: the case's declaration
    (``expect=``, ``unexercised=``), the schema (a parameter allowing no gradient-carrying
    type is non-differentiable by type), the graph's structure (an input the node does not
    have is not exercised), and otherwise the schema's tag (unknown: proposed; else agree)."""
    key = f"{p.io} {p.index}"
    if key in case.expect:
        return Verdict(case.expect[key].verdict)
    if key in case.conventions and case.conventions[key].rule.founded_for(case.op):
        # the declared convention's tag against the schema's (one without a precedent
        # outside this op decides nothing: its case declares the math's verdict, expect=)
        return judge(case.conventions[key].rule.implies, p.tag)
    if p.by_type:   # decided by the schema's types alone: non-differentiable
        return {Tag.NONDIFF: Verdict.AGREE, Tag.DIFF: Verdict.DISAGREE}.get(p.tag,
                                                                           Verdict.PROPOSED)
    if key in case.unexercised or p.evidence == Evidence.ABSENT:
        return Verdict.INCONCLUSIVE
    return Verdict.PROPOSED if p.tag == Tag.UNKNOWN else Verdict.AGREE



def record(proof: Proof) -> dict[str, Any]:
    w = proof.witness[0] if proof.witness else None
    return {
        "kind": DocKind.PROOF, "format": RECORD_FORMAT,
        "op": proof.op, "domain": proof.case.domain, "case": proof.case.name,
        "case_kind": proof.case.kind, "opset": proof.opset, "exporter": proof.exporter,
        "schema_version": proof.schema_version, "latest_schema_version": proof.latest_version,
        "tags_from": proof.tag_source,
        "versions": proof.versions, "seeds": list(proof.case.seeds),
        "status": proof.status, "invalid": proof.invalid,
        "parameters": [parameter_record(p) for p in proof.parameters],
        "numeric": numeric_record(proof.numeric),
        "witness": None if w is None else {
            "runtime": w.runtime, "why": w.why or None, "node": w.node_name,
            "reproduces": w.reproduces, **({"copy": "float32"} if w.copy else {})},
        "function_body": body_record(proof.body),
        "model": {"path": "model.onnx", "sha256": proof.sha256},
        "test_data": test_data.record(
            proof.case, proof.model, proof.graph_outputs, proof.numeric, proof.parameters,
            test_data.INVALID_OFF if proof.invalid else test_data.NUMERIC_OFF),
        **({"helper_nodes": list(proof.helper_nodes)} if proof.helper_nodes else {}),
        **({"variant_of": proof.case.variant_of} if proof.case.variant_of else {}),
        **({"route": "relabelled", "route_note": proof.route_note} if proof.route_note else {}),
        **({"adaptations": [{"node": a.node, "op": a.op, "from": a.source, "to": a.target,
                             "change": a.change} for a in proof.adaptations]}
           if proof.adaptations else {}),
        **({"notes": list(proof.notes)} if proof.notes else {}),
        **({"fidelity": proof.fidelity.record()}
           if proof.fidelity is not None and not proof.fidelity.faithful else {}),
    }


def body_record(b: BodyResult | None) -> dict[str, Any] | None:
    """Which function body the third witness read: the schema version, ``function`` or
    ``context-dependent``, the opset of its primitive ops; null kind when there is none."""
    if b is None:
        return None
    return {"schema": f"{b.op}-{b.since_version}", "kind": b.kind, "opset": b.opset}


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
        "step": n.step, "fwd_tol": n.fwd_tol, "vjp_tol": n.vjp_tol,
        **({"vjp_skipped": n.vjp_skipped} if n.vjp_skipped else {}),
        **({"drawn": {str(j): op for j, op in n.drawn}} if n.drawn else {}),
        **({"precision": n.precision.record()} if n.precision is not None else {}),
        **({"copy": n.copy.record()} if n.copy is not None else {})}


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
        "witnesses": {"autograd": {"outcome": p.autograd.outcome, "detail": p.autograd.detail,
                                   **({"source": p.autograd.source} if p.autograd.source
                                      else {})},
                      "numeric": {"outcome": p.numeric.outcome, "detail": p.numeric.detail},
                      "function_body": {"outcome": p.function_body.outcome,
                                        "detail": p.function_body.detail,
                                        **({"path": list(p.function_body.path)}
                                           if p.function_body.path else {})}},
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
    if p.convention is not None:
        rec["convention"] = p.convention
    if p.expected is not None:
        rec["expected"] = {"verdict": p.expected, "reason": p.expected_reason}
    return rec
