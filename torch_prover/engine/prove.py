"""One proof, end to end: case -> probe -> export -> mapping -> numeric -> verdicts.

Data flows one way; each stage takes and returns plain data. ``Proof.record()`` is the
versioned JSON shape of docs/design.md §3.1, identical for identical inputs and versions.
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable, Sequence

import torch

from .versions import fidelity
from .bodies import function_body
from .numeric import node_witness
from .numeric import numeric as numeric_mod
from ..case import Case, FunctionModule, Spec, Fixed
from ..errors import CaseError
from .export import Exported, export_case
from .versions.float32_copy import CopyError, narrow_types, widened_copy
from .attribution.folding import folded_parameters
from .attribution.guard import guard_note
from .attribution.mapping import NodeMapping, map_node
from .probe import ProbeResult, TensorEvidence, probe
from .pytorch_source import aten_target, autograd_source
from .versions.runtimes import Target
from .record import RECORD_FORMAT, Proof, expected_verdict, versions
from .test_data import random_sources
from ..tags.schema import SchemaTags, canonical_op, schema_tags
from .rules.verdict import Rule
from ..vocab import Evidence, Verdict
from .witnesses import parameters

__all__ = ["Proof", "prove", "prove_case", "expected_verdict", "versions", "RECORD_FORMAT",
           "TagSource"]

TagSource = Callable[[str, int | None, str], SchemaTags]


def default_tags(op: str, opset: int | None, domain: str) -> SchemaTags:
    return schema_tags(op, opset, domain)


# ----------------------------------------------------------------------------- stages
def _numeric_stage(case: Case, pr: ProbeResult, exported: Exported, mapping: NodeMapping,
                   evidence_of: dict[str, TensorEvidence],
                   feeds: Sequence[dict[str, Any]]) -> numeric_mod.NumericResult:
    """The whole model against PyTorch: forward on the first seed; PyTorch's VJP against
    the model's finite difference on every seed (a gradient zero on one seed and not on
    another is checked where it is not)."""
    model = exported.model
    gout = [o.name for o in model.graph.output]
    sources = {}
    for a in mapping.inputs:
        if a.problem or a.through:
            continue
        for src in a.all_sources:
            ev = evidence_of.get(src)
            if ev is not None and ev.evidence in (Evidence.GRAD, Evidence.ZERO_GRAD):
                sources[src] = ev.evidence
    zero = {s for s, e in sources.items() if e == Evidence.ZERO_GRAD}
    points = []
    for run, run_feeds in zip(pr.runs, feeds):
        grads = {}
        for s in sources:
            g = (run.input_grads[case.names.index(s)] if s in case.names
                 else run.param_grads.get(s))
            if g is not None:
                grads[s] = g
        points.append(numeric_mod.SeedPoint(
            run.seed, run_feeds, [run.dy[exported.output_names.index(o)] for o in gout], grads))
    first = pr.runs[0]
    outs = [first.outputs[exported.output_names.index(o)] for o in gout]
    random = {} if case.fixed_draw else random_sources(model)
    drawn = {j: random[o] for j, o in enumerate(gout) if o in random}
    return numeric_mod.check(
        model, feeds=points[0].feeds, expected_outputs=outs, dy=points[0].dy,
        grads=points[0].grads, zero_grads=zero, initializers=set(first.params),
        float_dtype=_least_precise(case.float_dtype, outs), seed=case.seeds[0],
        fwd_tol=case.fwd_tol, vjp_tol=case.vjp_tol, more=points[1:], drawn=drawn,
        target=Target(case.op, case.domain))


def _witness_stage(pr: ProbeResult, exported: Exported, mapping: NodeMapping,
                   feeds: Sequence[dict[str, Any]]) -> tuple[node_witness.NodeWitness, ...]:
    """The node's own finite differences at each probe seed's point: autograd's evidence
    from any seed is met by a measurement at that seed (Min's second input is the minimum
    somewhere on seed 1 only)."""
    return tuple(node_witness.witness(exported.model, mapping.node_index, run_feeds,
                                      seed=run.seed)
                 for run, run_feeds in zip(pr.runs, feeds))


def _feeds(case: Case, pr: ProbeResult, exported: Exported, widen: bool = False
           ) -> list[dict[str, Any]]:
    """Each probe seed's inputs by graph input name, as the runtimes take them: what both
    numeric stages run the exported model on (``widen``: its float32 copy)."""
    names = [i.name for i in exported.model.graph.input]
    by_seed = [dict(zip(case.names, run.inputs)) for run in pr.runs]
    return [{n: numeric_mod.as_numpy(by_name[n], widen) for n in names} for by_name in by_seed]


def _widened(exported: Exported) -> tuple[Exported, str | None]:
    """The model the numeric stages run: a float32 copy of a float16 / bfloat16 model
    (``float32_copy.widened_copy``: numpy has no bfloat16, and float16's resolution cannot
    tell a derivative from rounding), with the note the record carries; else the model."""
    narrow = narrow_types(exported.model)
    if not narrow:
        return exported, None
    try:
        widened = widened_copy(exported.model)
    except CopyError:   # a BitCast: its float32 copy reinterprets other bits; measured as is
        return exported, None
    kinds = " and ".join(narrow)
    return dataclasses.replace(exported, model=widened), (
        f"the numeric witnesses ran on a float32 copy of the {kinds} model (its values "
        f"crossed to numpy through float32, which holds each exactly); PyTorch's {kinds} "
        f"outputs and gradients were compared with it at {kinds}'s tolerances")


_PRECISION = {torch.float64: 3, torch.complex128: 3, torch.float32: 2, torch.complex64: 2,
              torch.float16: 1, torch.bfloat16: 0}


def _least_precise(float_dtype: torch.dtype, outs: Sequence[torch.Tensor]) -> str:
    """The float dtype whose step and tolerances the numeric check must use: a float64
    input feeding a float32 output cannot be differenced at float64's step."""
    dtypes = [float_dtype] + [o.dtype for o in outs if o.dtype in _PRECISION]
    worst = min(dtypes, key=lambda d: _PRECISION.get(d, 3))
    return str(worst).removeprefix("torch.").replace("complex128", "float64").replace(
        "complex64", "float32")


def _runtime_gap(result: numeric_mod.NumericResult | None) -> str | None:
    """Why no runtime that implements the node's schema version ran the model (None: one
    did, or numeric checks are off)."""
    if result is None or result.runtime is not None:
        return None
    return result.why


def prove_case(case: Case, *, numeric: bool = True, tags: TagSource | None = None,
               tag_source: str = "onnx.defs", exported: Exported | None = None,
               node: int | None = None, redraw: bool = False) -> Proof:
    """Prove one catalogue case. Raises CaseError when the case itself is broken.

    ``exported``: a model exported elsewhere (a proof script's own file) to prove instead
    of exporting the case here; everything else is the same. ``node``: which node of the
    case's op (its index in the graph), when the graph has several (``run --all-ops``).
    ``redraw``: the inputs are a script's own, not a case's chosen ones: a parameter flat
    at them is measured again at re-drawn values before it is called non-differentiable
    (:func:`_not_exercised`).
    """
    tags = tags or default_tags
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
    mapping = map_node(exported.model, case.op, case.domain, evidence_of.keys(), node)
    schema = tags(case.op, domain_opset(exported.model, case.domain, exported.opset),
                  case.domain)
    latest = tags(case.op, None, case.domain)
    if mapping.invalid:
        return Proof(case, exported.opset, exported.exporter, schema.since_version,
                     latest.since_version, (), None, exported.model,
                     f"{case.op}/{case.name}: {mapping.invalid}", pr, gin, gout, tag_source,
                     route_note=exported.route_note, adaptations=exported.adaptations)
    numeric_res, witness, off = None, None, "numeric checks off (--no-numeric)"
    measured, widened = _widened(exported)
    if numeric:
        feeds = _feeds(case, pr, measured, widen=widened is not None)
        numeric_res = _numeric_stage(case, pr, measured, mapping, evidence_of, feeds)
        witness = _witness_stage(pr, measured, mapping, feeds)
        off = None
        guarded = tuple(guard_note(measured.model, g, feeds, [r.seed for r in pr.runs])
                        for g in mapping.guards)
    else:
        guarded = tuple(g.text for g in mapping.guards)
    keep = ("do_constant_folding=False" if exported.exporter == "torchscript"
            else "optimize=False")
    body = (None if mapping.node_index is None
            else function_body.for_node(exported.model, mapping.node_index))
    node = (exported.model.graph.node[mapping.node_index]
            if mapping.node_index is not None else None)
    initializers = {t.name for t in exported.model.graph.initializer}
    faithful = fidelity.check(exported.model, mapping.node_index, case.op, _runtime_gap(
        numeric_res))
    params = parameters(case, pr, mapping, schema, latest, numeric_res, witness, off,
                        evidence_of, exported.output_names,
                        initializers, keep, body,
                        autograd_source(case.kind, exported.exporter, node), aten_target(node),
                        folded_parameters(exported.model, mapping.node_index, run.params, [
                            n for n in pr.params if n not in initializers]),
                        unfaithful=None if faithful.faithful else faithful.reason())
    if redraw and numeric and mapping.node_index is not None:
        params = _not_exercised(params, measured.model, mapping.node_index, feeds,
                                case.seeds[0])
    problems = mapping.problems
    invalid = None
    if problems:
        # one unattributable tensor taints the whole case: nothing in it may say agree
        invalid = f"{case.op}/{case.name}: ambiguous attribution: {problems[0]}"
        params = tuple(p if p.verdict == Verdict.INCONCLUSIVE else dataclasses.replace(
            p, verdict=Verdict.INCONCLUSIVE, supports=None, rule=Rule.AMBIGUOUS,
            reason=f"case invalid ({problems[0]}); evidence was: {p.reason}")
            for p in params)
    return Proof(case, exported.opset, exported.exporter, schema.since_version,
                 latest.since_version, params, numeric_res, exported.model, invalid, pr, gin,
                 gout, tag_source, witness=witness, helper_nodes=mapping.others, body=body,
                 route_note=exported.route_note, adaptations=exported.adaptations,
                 notes=tuple(mapping.shared_notes) + guarded + ((widened,) if widened and numeric
                                                               else ()),
                 node=mapping.node_index,
                 fidelity=faithful)


def _not_exercised(params: Sequence[Any], model: Any, node_index: int,
                   feeds: Sequence[dict[str, Any]], seed: int) -> tuple[Any, ...]:
    """A parameter the witnesses call non-differentiable because the node is flat at the
    script's inputs, yet smooth at re-drawn values of the same shapes and dtypes
    (``numeric/redraw``), is "not exercised" there: inconclusive, never a disagreement
    (a ``torch.maximum(a, b)`` whose ``a`` is never the maximum). A jump, a type, a
    convention, a declared case verdict keep their verdicts; so does what stays flat."""
    from ..vocab import NumericOutcome, Tag
    from .numeric.redraw import DRAWS, measure_redrawn
    flat = [p for p in params if p.supports == Tag.NONDIFF and not p.by_type
            and p.convention is None and p.rule in (Rule.BOTH, Rule.NUMERIC_ONLY)
            and p.numeric.outcome is NumericOutcome.FLAT]
    if not flat:
        return tuple(params)
    seen = measure_redrawn(model, node_index, feeds, seed, flat={(p.io, p.index) for p in flat})
    out = []
    for p in params:
        n = seen.exercised(p.io, p.index) if p in flat else 0
        if p in flat and seen.in_float64(p.io, p.index):
            out.append(dataclasses.replace(
                p, verdict=Verdict.INCONCLUSIVE, supports=None, rule=Rule.NOT_EXERCISED,
                reason=f"not exercised at the script's inputs in their own precision: flat at "
                       f"every point measured there ({p.reason}), but smooth at the same inputs "
                       f"in {seen.precision(p.io, p.index)}: a derivative below the inputs' "
                       "resolution, not a zero"))
            continue
        out.append(p if not n else dataclasses.replace(
            p, verdict=Verdict.INCONCLUSIVE, supports=None, rule=Rule.NOT_EXERCISED,
            reason=f"not exercised at the script's inputs: flat at every point measured "
                   f"there ({p.reason}), but smooth at {n} of {DRAWS} re-drawn points of the "
                   f"same shapes and dtypes ({seen.precision(p.io, p.index)}): the inputs "
                   "never select it, which says nothing of the op's derivative"))
    return tuple(out)


def _module_factory(model: Any) -> Callable[[], torch.nn.Module] | type:
    """What ``Case.model`` takes, for ``prove``'s ``model``: a Module instance (used as is), a
    Module class, a zero-argument factory, or a function of the inputs -- a Python function or
    a builtin such as ``torch.nn.functional.gelu``, whose signature ``inspect`` cannot read
    (it was called with no arguments: a TypeError traceback)."""
    if isinstance(model, torch.nn.Module):
        return lambda: model
    if inspect.isclass(model) and issubclass(model, torch.nn.Module):
        return model
    if not callable(model):
        raise CaseError(f"prove(): model must be a function, a torch.nn.Module or a Module "
                        f"class, not {type(model).__name__}")
    try:
        takes = len(inspect.signature(model).parameters)
    except (TypeError, ValueError):   # a builtin: a function of the inputs
        takes = None
    if takes == 0:
        return model
    return lambda: FunctionModule(model)


def prove(model: Callable[..., Any] | torch.nn.Module, inputs: Sequence[torch.Tensor], *,
          op: str, dy: Any = None, opset: int | None = None, exporter: str = "dynamo",
          name: str | None = None, numeric: bool = True, **case_fields: Any) -> Proof:
    """Library surface: prove ``model(*inputs)`` exports ``op`` with the schema's tags.

    ``model`` is a function of the inputs (a builtin such as ``torch.nn.functional.gelu``
    included), a Module class, or a Module instance (used as is). Inputs are used exactly as
    given on every seed; floating ones get ``requires_grad``.
    """
    if dy is not None:
        raise CaseError("prove(): a custom dy is not supported yet; the probe draws a seeded dy")
    op = canonical_op(op)
    factory = _module_factory(model)
    specs: tuple[Spec, ...] = tuple(
        Fixed(t.detach().clone(), dtype=t.dtype) for t in inputs)
    floats = {t.dtype for t in inputs if t.is_floating_point()}
    float_dtype = floats.pop() if len(floats) == 1 else torch.float64
    case = Case(op, name or f"{op.lower()}_adhoc", factory, specs, opset=opset,
                exporter=exporter, float_dtype=float_dtype, **case_fields)
    return prove_case(case, numeric=numeric)


def domain_opset(model, domain: str, opset: int) -> int:
    """The opset the model imports for ``domain``: the export opset for ai.onnx, else the
    model's own import of that domain (an ai.onnx.ml node at ml opset 2 is LabelEncoder-2,
    whatever ai.onnx's opset; docs/table.md, "Other domains")."""
    if domain in ("", "ai.onnx"):
        return opset
    return next((o.version for o in model.opset_import if o.domain == domain), opset)
