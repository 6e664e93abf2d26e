"""One proof, end to end: case -> probe -> export -> mapping -> numeric -> verdicts.

Data flows one way; each stage takes and returns plain data. ``Proof.record()`` is the
versioned JSON shape of DESIGN §3, identical for identical inputs and versions.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import onnx
import torch

from . import numeric as numeric_mod
from .case import Case, CaseError, Spec, T
from .export import Exported, export_case
from .mapping import ABSENT, CONSTANT, Mapping, map_node
from .probe import ProbeResult, TensorEvidence, probe
from .tags import SchemaTags, canonical_op, schema_tags
from .verdict import (AGREE, DISAGREE, INCONCLUSIVE, NOT_EXERCISED, PROPOSED, Gate, Parameter,
                      decide, is_failure, is_integer_dtype, not_exercised)

RECORD_FORMAT = 1
TagSource = Callable[[str, int | None, str], SchemaTags]


def versions() -> dict[str, str]:
    out = {}
    for dist in ("torch", "onnx", "onnxruntime", "onnxscript", "torch-prover"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


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

    @property
    def op(self) -> str:
        return self.case.op

    @property
    def model_bytes(self) -> bytes:
        return self.model.SerializeToString(deterministic=True)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.model_bytes).hexdigest()

    def count(self, verdict: str) -> int:
        return sum(p.verdict == verdict for p in self.parameters)

    @property
    def status(self) -> str:
        """invalid | disagree | inconclusive | proved (every verdict agree/proposed)."""
        if self.invalid:
            return "invalid"
        if self.count(DISAGREE):
            return "disagree"
        if self.count(INCONCLUSIVE) and not (self.count(AGREE) or self.count(PROPOSED)):
            return "inconclusive"
        return "proved"

    @property
    def failures(self) -> list[Parameter]:
        """What makes a proof fail: invalid, or a disagreement or an inconclusive verdict on
        evidence that should have decided -- unless the case declares exactly that verdict
        with its reason (a reviewed, known finding: DESIGN's "unwaived")."""
        if self.invalid:
            return list(self.parameters) or [None]  # type: ignore[list-item]
        return [p for p in self.parameters if is_failure(p.verdict, p.reason, p.expected)]

    @property
    def unexpected(self) -> list[Parameter]:
        """Parameters whose verdict differs from what the case declares."""
        return [p for p in self.parameters if p.verdict != _default_expectation(p)]

    def record(self) -> dict[str, Any]:
        n = self.numeric
        return {
            "format": RECORD_FORMAT,
            "op": self.op, "domain": self.case.domain, "case": self.case.name,
            "kind": self.case.kind, "opset": self.opset, "exporter": self.exporter,
            "schema_version": self.schema_version, "latest_schema_version": self.latest_version,
            "tags_from": self.tag_source,
            "versions": self.versions, "seeds": list(self.case.seeds),
            "status": self.status, "invalid": self.invalid,
            "parameters": [_param_record(p) for p in self.parameters],
            "numeric": None if n is None else {
                "runtime": n.runtime, "why": n.why or None,
                "forward_max_abs_err": (None if n.forward_max_abs_err is None else
                                        numeric_mod.shown_error(n.forward_max_abs_err,
                                                                n.fwd_bound)),
                "forward_ok": n.forward_ok, "forward_detail": n.forward_detail,
                "vjp_rel_err": {k: numeric_mod.shown_error(c.rel_err, n.vjp_tol)
                                for k, c in sorted(n.vjp.items())},
                "vjp": {k: _vjp_record(c, n.vjp_tol) for k, c in sorted(n.vjp.items())},
                "step": n.step, "fwd_tol": n.fwd_tol, "vjp_tol": n.vjp_tol},
            "model": {"path": "model.onnx", "sha256": self.sha256},
        }


def _vjp_record(c: numeric_mod.VjpCheck, tol: float) -> dict[str, Any]:
    """One VJP check as committed: pass/fail and the error bound; the two derivative values
    only when they disagree (a passing pair is noise in its late digits, see shown_error)."""
    rec: dict[str, Any] = {"ok": c.ok, "rel_err": numeric_mod.shown_error(c.rel_err, tol)}
    if not c.ok:
        rec["fd"] = numeric_mod.shown_value(c.fd)
        rec["analytic"] = numeric_mod.shown_value(c.analytic)
    return rec


def _param_record(p: Parameter) -> dict[str, Any]:
    rec = {"io": p.io, "index": p.index, "name": p.name, "source": p.source,
           "evidence": p.evidence, "tag": p.tag, "verdict": p.verdict, "reason": p.reason}
    if p.tag_latest is not None:
        rec["tag_latest"] = p.tag_latest
    if p.path:
        rec["path"] = list(p.path)
    if p.expected is not None:
        rec["expected"] = {"verdict": p.expected, "reason": p.expected_reason}
    return rec


def _default_expectation(p: Parameter) -> str:
    if p.expected is not None:
        return p.expected
    if p.evidence in ("absent", "untracked") or (
            p.evidence in ("constant", "integer") and p.verdict == INCONCLUSIVE
            and not_exercised(p.reason)):
        return INCONCLUSIVE
    return PROPOSED if p.tag == "unknown" else AGREE


def _default_tags(op: str, opset: int | None, domain: str) -> SchemaTags:
    return schema_tags(op, opset, domain)


# ----------------------------------------------------------------------------- stages
def _numeric_stage(case: Case, pr: ProbeResult, exported: Exported, mapping: Mapping,
                   evidence_of: dict[str, TensorEvidence]) -> numeric_mod.NumericResult:
    run = pr.runs[0]
    model = exported.model
    gin = [i.name for i in model.graph.input]
    by_name = dict(zip(case.names, run.inputs))
    feeds = {n: by_name[n].detach().numpy() for n in gin}
    gout = [o.name for o in model.graph.output]
    outs = [run.outputs[exported.output_names.index(o)] for o in gout]
    dy = [run.dy[exported.output_names.index(o)] for o in gout]
    grads: dict[str, torch.Tensor] = {}
    zero: set[str] = set()
    for a in mapping.inputs:
        if a.source is None or a.problem:
            continue
        ev = evidence_of.get(a.source)
        if ev is None or ev.evidence not in ("grad", "zero-grad"):
            continue
        g = (run.input_grads[case.names.index(a.source)] if a.source in case.names
             else run.param_grads.get(a.source))
        if g is not None:
            grads[a.source] = g
            if ev.evidence == "zero-grad":
                zero.add(a.source)
    return numeric_mod.check(
        model, feeds=feeds, expected_outputs=outs, dy=dy, grads=grads, zero_grads=zero,
        initializers=set(run.params), float_dtype=_least_precise(case.float_dtype, outs),
        seed=case.seeds[0], fwd_tol=case.fwd_tol, vjp_tol=case.vjp_tol)


def _forward_gate(numeric: numeric_mod.NumericResult | None) -> Gate | None:
    """A forward mismatch taints every verdict: the graph is not the PyTorch model."""
    if numeric is None or numeric.runtime is None or numeric.forward_ok:
        return None
    return Gate("forward-mismatch", f"ONNX forward differs from PyTorch "
                                    f"({numeric.forward_detail}, tolerance {numeric.fwd_tol:g}) "
                                    f"in {numeric.runtime}")


_PRECISION = {torch.float64: 3, torch.complex128: 3, torch.float32: 2, torch.complex64: 2,
              torch.float16: 1, torch.bfloat16: 0}


def _least_precise(float_dtype: torch.dtype, outs: Sequence[torch.Tensor]) -> str:
    """The float dtype whose step and tolerances the numeric check must use: a float64
    input feeding a float32 output cannot be differenced at float64's step."""
    dtypes = [float_dtype] + [o.dtype for o in outs if o.dtype in _PRECISION]
    worst = min(dtypes, key=lambda d: _PRECISION.get(d, 3))
    return str(worst).removeprefix("torch.").replace("complex128", "float64").replace(
        "complex64", "float32")


def _gate(numeric: numeric_mod.NumericResult | None, sources: Sequence[str]) -> Gate:
    if numeric is None:
        return Gate("off", "numeric check off")
    if numeric.runtime is None:
        return Gate("no-runtime", numeric.why)
    mismatch = _forward_gate(numeric)
    if mismatch is not None:
        return mismatch
    checks = [numeric.vjp[s] for s in sources if s in numeric.vjp]
    bad = [c for c in checks if not c.ok]
    if bad:
        c = bad[0]
        return Gate("failed", f"finite difference {numeric_mod.shown_value(c.fd)} vs autograd "
                              f"{numeric_mod.shown_value(c.analytic)} for {c.source} (rel err "
                              f"{numeric_mod.shown_error(c.rel_err, numeric.vjp_tol)} > "
                              f"{numeric.vjp_tol:g}, {numeric.runtime})")
    if not checks:
        return Gate("passed", f"ONNX forward matches ({numeric.runtime})")
    return Gate("passed", f"finite differences agree in {numeric.runtime} (rel err "
                          f"{numeric_mod.shown_error(max(c.rel_err for c in checks), numeric.vjp_tol)})")


def _subject(src: str, params: set[str]) -> str:
    return f"param {src}" if src in params else src


def _verdicts(case: Case, pr: ProbeResult, mapping: Mapping, tags: SchemaTags,
              latest: SchemaTags, numeric_res, evidence_of: dict[str, TensorEvidence],
              exported: Exported) -> tuple[Parameter, ...]:
    params = set(pr.params)
    out: list[Parameter] = []
    n_in = max(len(mapping.inputs), sum(f.option != "variadic" for f in tags.inputs))
    n_out = max(len(mapping.outputs), sum(f.option != "variadic" for f in tags.outputs))
    grad_sources = [a.source for a in mapping.inputs if a.source]
    initializers = {t.name for t in exported.model.graph.initializer}
    folded = [n for n, e in pr.params.items() if n not in initializers and e.evidence == "grad"]
    for io, attrs, count in (("input", mapping.inputs, n_in), ("output", mapping.outputs, n_out)):
        for i in range(count):
            formal = tags.formal(io, i)
            if formal is None:
                raise CaseError(f"{case.op}/{case.name}: the {case.op} node has {io} {i}, which "
                                f"schema version {tags.since_version} does not define")
            latest_formal = latest.formal(io, i)
            a = attrs[i] if i < len(attrs) else None
            dtype, path, problem = (a.dtype, a.path, a.problem) if a else (None, (), None)
            if a is None or a.kind == ABSENT:
                ev, detail, source = "absent", "", "absent"
                if a is not None and io == "output" and a.dtype:
                    detail, source = "reaches no graph output", "unused"
            elif a.kind == CONSTANT:
                ev, detail, source = "constant", "", f"constant {dtype}"
                if folded and not is_integer_dtype(dtype):
                    source += " (a folded module parameter?)"
            elif io == "input":
                if a.source is None:
                    ev, detail, source = "ambiguous", "", "several tensors"
                else:
                    te = evidence_of.get(a.source)
                    if te is None:
                        ev, detail, source = "constant", "", f"constant {dtype} ({a.source})"
                    else:
                        ev, detail, source = te.evidence, te.detail, _subject(a.source, params)
                        if a.path:
                            source += f" via {'/'.join(a.path)}"
                        if ev in ("grad", "zero-grad", "no-grad") and dtype and not dtype.startswith(("float", "complex")):
                            ev, detail = "integer", f"reaches the node as {dtype}"
            else:
                j = exported.output_names.index(a.source)
                te = pr.outputs[j]
                ev, detail, source = te.evidence, te.detail, f"output {j}"
            if ev == "absent" and detail:
                verdict, reason = INCONCLUSIVE, f"{NOT_EXERCISED}: {io} {i} {detail} in this case"
            else:
                gate = None
                if ev in ("grad", "zero-grad"):
                    gate = _gate(numeric_res, grad_sources if io == "output" else [a.source])
                elif ev not in ("absent", "ambiguous"):
                    gate = _forward_gate(numeric_res)
                verdict, reason = decide(
                    evidence=ev, detail=detail, dtype=dtype, tag=formal.tag,
                    subject=source.split(" via ")[0] if io == "input" else source,
                    problem=problem, gate=gate, reference=case.kind == "reference",
                    float_capable=formal.float_capable)
            if ev == "constant" and folded and not is_integer_dtype(dtype):
                keep = ("do_constant_folding=False" if exported.exporter == "torchscript"
                        else "optimize=False")
                reason += (f"; the exporter folded module parameter {', '.join(folded)} into "
                           f"constants: export with {keep} to keep it an initializer")
            key = f"{io} {i}"
            exp = case.expect.get(key)
            out.append(Parameter(
                io, i, formal.name, source, "ambiguous" if problem else ev, formal.tag,
                verdict, reason,
                tag_latest=(latest_formal.tag if latest_formal and latest_formal.tag != formal.tag
                            else None),
                path=path, expected=exp.verdict if exp else None,
                expected_reason=exp.reason if exp else None))
    return tuple(out)


def prove_case(case: Case, *, numeric: bool = True, tags: TagSource | None = None,
               tag_source: str = "onnx.defs", exported: Exported | None = None) -> Proof:
    """Prove one catalogue case. Raises CaseError when the case itself is broken.

    ``exported``: a model exported elsewhere (a proof script's own file) to prove instead
    of exporting the case here; everything else is the same.
    """
    tags = tags or _default_tags
    pr = probe(case)
    run = pr.runs[0]
    if exported is None:
        exported = export_case(case, case.build_module(), run.inputs, len(run.outputs))
    gin = tuple(i.name for i in exported.model.graph.input)
    stray = [n for n in gin if n not in case.names]
    if stray:
        raise CaseError(f"{case.op}/{case.name}: exported graph inputs {stray} are not case inputs "
                        f"{list(case.names)}")
    gout = tuple(o.name for o in exported.model.graph.output)
    stray = [n for n in gout if n not in exported.output_names]
    if stray:
        raise CaseError(f"{case.op}/{case.name}: exported graph outputs {stray} are not model "
                        f"outputs {list(exported.output_names)}")
    evidence_of: dict[str, TensorEvidence] = dict(zip(case.names, pr.inputs))
    evidence_of.update(pr.params)
    mapping = map_node(exported.model, case.op, case.domain, evidence_of.keys())
    schema = tags(case.op, exported.opset, case.domain)
    latest = tags(case.op, None, case.domain)
    if mapping.invalid:
        return Proof(case, exported.opset, exported.exporter, schema.since_version,
                     latest.since_version, (), None, exported.model,
                     f"{case.op}/{case.name}: {mapping.invalid}", pr, gin, gout, tag_source)
    numeric_res = _numeric_stage(case, pr, exported, mapping, evidence_of) if numeric else None
    params = _verdicts(case, pr, mapping, schema, latest, numeric_res, evidence_of, exported)
    problems = mapping.problems
    invalid = None
    if problems:
        # one unattributable tensor taints the whole case: nothing in it may say agree
        invalid = f"{case.op}/{case.name}: ambiguous attribution: {problems[0]}"
        params = tuple(p if p.verdict == INCONCLUSIVE else dataclasses.replace(
            p, verdict=INCONCLUSIVE, reason=f"case invalid ({problems[0]}); evidence was: {p.reason}")
            for p in params)
    return Proof(case, exported.opset, exported.exporter, schema.since_version,
                 latest.since_version, params, numeric_res, exported.model, invalid, pr, gin,
                 gout, tag_source)


def prove(model: Callable[..., Any] | torch.nn.Module, inputs: Sequence[torch.Tensor], *,
          op: str, dy: Any = None, opset: int | None = None, exporter: str = "dynamo",
          name: str | None = None, numeric: bool = True, **case_fields: Any) -> Proof:
    """Library surface: prove ``model(*inputs)`` exports ``op`` with the schema's tags.

    ``model`` is a function, a Module class, or a Module instance (used as is). Inputs
    are used exactly as given on every seed; floating ones get ``requires_grad``.
    """
    if dy is not None:
        raise CaseError("prove(): a custom dy is not supported yet; the probe draws a seeded dy")
    op = canonical_op(op)
    if isinstance(model, torch.nn.Module):
        instance = model
        factory: Callable[..., Any] = lambda: instance  # noqa: E731 - keep the caller's module
    else:
        factory = model
    specs: tuple[Spec, ...] = tuple(
        T(t.detach().clone(), dtype=t.dtype) for t in inputs)
    floats = {t.dtype for t in inputs if t.is_floating_point()}
    float_dtype = floats.pop() if len(floats) == 1 else torch.float64
    case = Case(op, name or f"{op.lower()}_adhoc", factory, specs, opset=opset,
                exporter=exporter, float_dtype=float_dtype, **case_fields)
    return prove_case(case, numeric=numeric)
