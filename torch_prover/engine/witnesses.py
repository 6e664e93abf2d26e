"""From the stages' outputs to one Parameter per node input/output: the witnesses, scoped.

Stage 5's inputs, assembled: for node input/output ``i``, what PyTorch autograd says
(scoped by the mapping: a tensor that reached the node through a computing op is not
evidence about this node), what the node's own finite differences say
(``node_witness``) and what the op's ONNX function body says (``function_body``: it
decides nothing alone), then ``verdict.decide``. Nothing here branches on message text.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..case import Case
from ..errors import CaseError
from .attribution.mapping import ABSENT, CONSTANT, Attribution, NodeMapping, is_float_dtype
from .numeric.measure import InputWitness, NodeWitness, OutputWitness
from .numeric.numeric import STEP, NumericResult, shown_error, shown_value
from .probe import ProbeResult, TensorEvidence
from ..tags.markdown import MissingFromDocs
from ..tags.schema import Formal, SchemaTags
from .rules.by_type import type_reason
from .bodies.function_body import BodyResult
from .pytorch_source import DerivativeFact, derivative_fact
from .rules.verdict import AUTOGRAD_SAYS, NO_BODY, Decision, Rule, Vjp, Witness, decide, judge, under_convention
from ..conventions import Convention
from ..vocab import AutogradOutcome as A
from ..vocab import Evidence as E
from ..vocab import NumericOutcome as N
from ..vocab import Tag, Verdict


@dataclass(frozen=True)
class Parameter:
    """One entry of the proof record: one index of one formal parameter."""

    io: str
    index: int
    name: str
    source: str
    evidence: E
    tag: Tag
    verdict: Verdict
    reason: str
    autograd: Witness
    numeric: Witness
    supports: Tag | None
    rule: Rule
    tag_latest: Tag | None = None
    verdict_latest: Verdict | None = None
    path: tuple[str, ...] = ()
    by_type: bool = False                    # the schema allows no gradient-carrying type
    through: tuple[str, ...] = ()            # computing ops between the tensor and the node
    vjp: Vjp = Vjp.NOT_RUN                   # PyTorch's VJP against the model's differences
    expected: Verdict | None = None          # verdict the case declares
    expected_reason: str | None = None
    function_body: Witness = NO_BODY          # the third witness: the op's ONNX function body
    convention: Convention | None = None     # the case declares it under this convention


_AUTOGRAD_OF = {E.GRAD: A.GRAD, E.ZERO_GRAD: A.ZERO, E.NO_GRAD: A.NONE,
                E.UNSUPPORTED: A.UNSUPPORTED, E.INTEGER: A.INTEGER, E.DETACHED: A.DETACHED,
                E.UNTRACKED: A.NOT_EXERCISED}


def _subject(src: str, params: set[str]) -> str:
    return f"param {src}" if src in params else src


@dataclass(frozen=True)
class _Input:
    evidence: E
    source: str
    autograd: Witness
    reaches: A | None = None   # what the tensor's gradient says of the node's outputs, when
    # it is not this input's alone (shared by several inputs): only a nonzero gradient

    @property
    def for_outputs(self) -> A:
        """The outcome an output's autograd witness may lean on (``_output_side``)."""
        return self.autograd.outcome if self.reaches is None else self.reaches


def _combined(parts: Sequence[TensorEvidence]) -> TensorEvidence:
    """One node input assembled by glue from several tensors: its gradient is theirs side
    by side, so it is nonzero if any part's is, zero if every part's is."""
    if len(parts) == 1:
        return parts[0]
    evs = [t.evidence for t in parts]
    for ev, holds in ((E.GRAD, E.GRAD in evs), (E.ZERO_GRAD, set(evs) == {E.ZERO_GRAD}),
                      (E.UNSUPPORTED, E.UNSUPPORTED in evs), (E.NO_GRAD, set(evs) == {E.NO_GRAD}),
                      (E.INTEGER, set(evs) == {E.INTEGER})):
        if holds:
            which = [t for t in parts if t.evidence == ev]
            detail = "; ".join(f"{t.label}: {t.detail}" for t in which)
            return TensorEvidence(" + ".join(t.label for t in parts), which[0].dtype, (),
                                  ev, detail)
    return TensorEvidence(" + ".join(t.label for t in parts), parts[0].dtype, (), E.UNTRACKED,
                          "not every part is tracked")


def _input_side(a: Attribution | None, i: int, evidence_of: dict[str, TensorEvidence],
                params: set[str], folded: Sequence[str], keep_option: str,
                surrogate: str | None = None, holds: str | None = None) -> _Input:
    """The autograd witness of node input ``i`` and the source it names (``holds``: the
    folded module parameter whose value the constant is, ``engine.attribution.folding``)."""
    if a is None or a.kind == ABSENT:
        return _Input(E.ABSENT, "absent", Witness(A.NOT_EXERCISED, f"input {i} is not given"))
    dtype = a.dtype or "float"
    if holds is not None and a.kind == CONSTANT:
        return _Input(E.CONSTANT, f"folded parameter {holds}", Witness(
            A.NOT_EXERCISED, f"module parameter {holds}, folded into a constant of type "
                             f"{dtype} by the exporter: export with {keep_option} to keep it "
                             "an initializer"))
    if a.kind == CONSTANT or (a.source is not None and a.source not in evidence_of):
        note = ""
        if folded and is_float_dtype(a.dtype):
            note = (f"; the exporter folded module parameter {', '.join(folded)} into "
                    f"constants: export with {keep_option} to keep it an initializer")
        where = f" ({a.source})" if a.source else ""
        return _Input(E.CONSTANT, f"constant {dtype}{where}", Witness(
            A.NOT_EXERCISED, f"a constant of type {dtype} folded into the graph{note}"))
    if not a.all_sources:
        return _Input(E.AMBIGUOUS, "several tensors", Witness(A.NOT_EXERCISED, a.problem or ""))
    te = _combined([evidence_of[s] for s in a.all_sources])
    subject = " + ".join(_subject(s, params) for s in a.all_sources)
    source = subject + (f" via {'/'.join(a.path)}" if a.path else "")
    ev = te.evidence
    if ev in (E.GRAD, E.ZERO_GRAD, E.NO_GRAD, E.UNSUPPORTED) and not is_float_dtype(a.dtype) \
            and a.dtype:
        return _Input(E.INTEGER, source, Witness(
            A.INTEGER, f"{subject} reaches the node as {a.dtype}"))
    if surrogate:
        return _Input(ev, source, Witness(
            A.UNSUPPORTED, f"PyTorch's backward for {subject} is a surrogate: {surrogate}"))
    if a.through:
        return _Input(ev, source, Witness(
            A.NOT_EXERCISED, f"{subject} reaches the node through {', '.join(a.through)}: "
                             "its gradient is about that computation, not this node"))
    if a.shared:
        tensor, idxs = a.shared
        others = ", ".join(str(k) for k in idxs if k != i)
        # a nonzero sum over the inputs still shows the dy reaching them (the outputs' witness)
        return _Input(ev, source, Witness(
            A.NOT_EXERCISED, f"{subject} also feeds input{'s' * (len(idxs) > 2)} {others} of "
                             f"the node: its gradient is the sum over them, not input {i}'s "
                             "alone"), reaches=A.GRAD if ev == E.GRAD else A.NOT_EXERCISED)
    detail = te.detail
    if ev == E.UNTRACKED:
        detail = f"no gradient requested for {subject}"
    elif ev in (E.GRAD, E.ZERO_GRAD, E.NO_GRAD, E.UNSUPPORTED):
        detail = te.detail if len(a.all_sources) > 1 else f"{subject}: {te.detail}"
    elif ev == E.INTEGER:
        detail = f"{subject} is {te.dtype}"
    return _Input(ev, source, Witness(_AUTOGRAD_OF[ev], detail))


def _output_side(a: Attribution | None, j: int, pr: ProbeResult, output_names: Sequence[str],
                 inputs: Sequence[_Input], all_tracked: bool) -> tuple[E, str, Witness]:
    """The autograd witness of node output ``j``: does its dy reach a tensor that feeds the
    node directly? (A gradient that reaches an input only through a computing op before
    the node -- a fake-quantizer's straight-through estimator -- is not about this node.)"""
    if a is not None and a.kind == ABSENT and a.dtype:   # produced, but no graph output uses it
        return E.UNTRACKED, "unused", Witness(
            A.NOT_EXERCISED, f"output {j} reaches no graph output, so PyTorch never sees it")
    if a is None or a.kind == ABSENT:
        return E.ABSENT, "absent", Witness(A.NOT_EXERCISED, f"output {j} is not produced")
    k = output_names.index(a.source)
    te = pr.outputs[k]
    label = f"output {k}"
    if a.through:
        return te.evidence, label, Witness(
            A.NOT_EXERCISED, f"{label} is computed from the node through "
                             f"{', '.join(a.through)}: its dy says nothing about this node")
    direct = [s.for_outputs for s in inputs]
    if (te.evidence == E.GRAD and A.GRAD not in direct) or (
            te.evidence in (E.ZERO_GRAD, E.NO_GRAD) and not {A.GRAD, A.ZERO, A.NONE} & set(direct)):
        return te.evidence, label, Witness(
            A.NOT_EXERCISED, f"{label}'s dy reaches PyTorch tensors only through computing ops "
                             "before the node, or through inputs whose evidence is not about it")
    if te.evidence == E.DETACHED and not all_tracked:
        return te.evidence, label, Witness(
            A.NOT_EXERCISED, f"{label} is not connected by autograd, but not every floating "
                             "input of the node was tracked, so it could not have been")
    return te.evidence, label, Witness(_AUTOGRAD_OF.get(te.evidence, A.NOT_EXERCISED),
                                       f"{label}: {te.detail}")


_DECIDES = (N.SMOOTH, N.JUMP, N.FLAT, N.NONE, N.INTEGER, N.ABSENT, N.NOT_RUN)
"""Which seed's measurement speaks for a parameter: a derivative seen at any seed's point
exists (SMOOTH first); otherwise a discontinuity; otherwise flat everywhere measured."""


def _numeric(witness: Sequence, io: str, i: int, off: str | None) -> tuple[Witness, bool]:
    """(numeric witness of node input/output ``i`` over the seeds' points, whether a point
    was moved off a tie or jump)."""
    if off is not None:
        return Witness(N.NOT_RUN, off), False
    seen, coarse = [], []
    for w in witness:
        items = w.inputs if io == "input" else w.outputs
        if i < len(items):
            seen.append((w.seed, items[i]))
            coarse.append(measured_coarse(w, io, items[i]))
    if not seen:
        return Witness(N.NOT_RUN, f"{io} {i} is not given"), False
    seed, best = min(seen, key=lambda s: _DECIDES.index(s[1].outcome))
    others = sorted({item.outcome for _, item in seen} - {best.outcome})
    detail = best.detail
    if others:
        detail += f" (seed {seed}; {', '.join(others)} at another seed's point)"
    return Witness(best.outcome, detail, coarse=all(coarse)), any(
        bool(getattr(item, "moved", False)) for _, item in seen)


def measured_coarse(w: NodeWitness, io: str, item: InputWitness | OutputWitness) -> bool:
    """Whether this measurement was differenced at float32's steps or coarser (a float32
    copy, a float32 case, a runtime computing in float32): an input by its own step, an
    output by every measured input's."""
    steps = [item.step] if io == "input" else [x.step for x in w.inputs]
    steps = [s for s in steps if s is not None]
    return bool(steps) and min(steps) > STEP["float64"]


def _vjp(numeric: NumericResult | None, sources: Sequence[str], moved: bool,
         explained: Mapping[str, str] | None = None) -> tuple[Vjp, str]:
    """The VJP checks of ``sources`` over every seed, as one state and a stable detail.
    ``explained``: source -> the PyTorch gradient convention that makes its gradient differ
    from the op's derivative on purpose (``Case.gradient_conventions``): a mismatch there is
    named (``Vjp.EXPLAINED``), and the verdict rests on what both witnesses decide."""
    if numeric is None or numeric.runtime is None:
        return Vjp.NOT_RUN, ""
    if numeric.vjp_skipped:
        return Vjp.NOT_RUN, numeric.vjp_skipped
    checks = [c for s in sources for c in numeric.vjp_all.get(s, ())]
    if not checks:
        return Vjp.NOT_RUN, ""
    bad = [c for c in checks if not c.ok]
    if bad:
        c = bad[0]
        detail = (f"PyTorch's VJP {shown_value(c.analytic)} vs the ONNX model's finite "
                  f"difference {shown_value(c.fd)} for {c.source} on seed {c.seed} (rel err "
                  f"{shown_error(c.rel_err, numeric.vjp_tol)} > {numeric.vjp_tol:g})")
        named = [explained[b.source] for b in bad if b.source in (explained or {})]
        if len(named) == len(bad):
            return Vjp.EXPLAINED, (f"{detail}: explained by PyTorch's gradient convention "
                                   f"{'; '.join(dict.fromkeys(named))}, not a contradiction")
        if moved:
            return Vjp.AT_JUMP, (f"autograd's gradient at this point is a subgradient (a tie "
                                 f"or a jump: the numeric witness moved off it), so {detail} "
                                 "is not a contradiction")
        return Vjp.FAILED, detail
    if all(abs(c.analytic) <= c.noise for c in checks):
        return Vjp.EMPTY, "the VJP check compared zeros only (no evidence either way)"
    seeds = sorted({c.seed for c in checks if abs(c.analytic) > c.noise})
    return Vjp.PASSED, (f"VJP matches the ONNX model on seed{'s' * (len(seeds) > 1)} "
                        f"{', '.join(map(str, seeds))} ({numeric.ran_in}, rel err "
                        f"{shown_error(max(c.rel_err for c in checks), numeric.vjp_tol)})")


def _sourced(autograd: Witness, source: str, fact: DerivativeFact | None) -> Witness:
    """The autograd witness naming whose autograd it is; where the case's module does not
    track the tensor, what PyTorch's derivatives.yaml says of it (does PyTorch itself have
    a derivative there?)."""
    detail = autograd.detail
    if fact is not None and autograd.outcome in (A.NOT_EXERCISED, A.UNSUPPORTED):
        detail += f"; {fact.words()}"
    return Witness(autograd.outcome, detail, source=source)


def parameters(case: Case, pr: ProbeResult, mapping: NodeMapping, tags: SchemaTags,
               latest: SchemaTags, numeric: NumericResult | None, witness,
               witness_off: str | None, evidence_of: dict[str, TensorEvidence],
               output_names: Sequence[str], initializers: set[str],
               keep_option: str, body: BodyResult | None = None, autograd_source: str = "",
               aten: tuple[str, str] | None = None,
               folded_from: Mapping[int, str] | None = None,
               unfaithful: str | None = None) -> tuple[Parameter, ...]:
    """Every node input and output as a Parameter with its witnesses and its verdict
    (``autograd_source``, ``aten``: ``engine.pytorch_source``; ``unfaithful``: why the run
    is not one of the schema version in ``tags``, ``engine.versions.fidelity``)."""
    params = set(pr.params)
    folded = [n for n, e in pr.params.items() if n not in initializers and e.evidence == E.GRAD]
    n_in = max(len(mapping.inputs), sum(f.option != "variadic" for f in tags.inputs))
    n_out = max(len(mapping.outputs), sum(f.option != "variadic" for f in tags.outputs))
    forward = None
    if numeric is not None and numeric.runtime is not None and not numeric.forward_ok:
        forward = (f"ONNX forward differs from PyTorch ({numeric.forward_detail}) in "
                   f"{numeric.ran_in}")
    ins = [_input_side(mapping.inputs[i] if i < len(mapping.inputs) else None, i, evidence_of,
                       params, folded, keep_option, case.surrogate.get(f"input {i}"),
                       (folded_from or {}).get(i))
           for i in range(n_in)]
    floating = [(a, side) for a, side in zip(mapping.inputs, ins) if is_float_dtype(a.dtype)]
    all_tracked = all(side.for_outputs in (A.GRAD, A.ZERO, A.NONE, A.UNSUPPORTED)
                      for _, side in floating)
    direct = list(dict.fromkeys(src for a, side in floating
                                if AUTOGRAD_SAYS[side.for_outputs] is not None
                                for src in a.all_sources))
    out: list[Parameter] = []
    moved_inputs: dict[int, bool] = {}
    for io, count in (("input", n_in), ("output", n_out)):
        for i in range(count):
            formal = tags.formal(io, i)
            if formal is None:
                if tags.source != "onnx.defs":   # --tags-from an older docs version
                    raise MissingFromDocs(
                        f"{tags.source} documents {case.op}-"
                        f"{tags.since_version}, which has no {io} {i}; the node exported at "
                        f"opset {case.export_opset} has one (another version's signature), "
                        f"so there are no tags to compare it with")
                raise CaseError(f"{case.op}/{case.name}: the {case.op} node has {io} {i}, "
                                f"which schema version {tags.since_version} does not define")
            attrs = mapping.inputs if io == "input" else mapping.outputs
            a = attrs[i] if i < len(attrs) else None
            if io == "input":
                side = ins[i]
                evidence, source, autograd = side.evidence, side.source, side.autograd
                sources = list(a.all_sources) if a is not None else []
            else:
                evidence, source, autograd = _output_side(a, i, pr, output_names, ins,
                                                          all_tracked)
                sources = direct
                if f"output {i}" in case.surrogate:
                    autograd = Witness(A.UNSUPPORTED, "PyTorch's backward here is a surrogate: "
                                                      + case.surrogate[f"output {i}"])
            if io == "input":
                autograd = _sourced(autograd, autograd_source, None if evidence == E.ABSENT
                                    else derivative_fact(aten, formal.name))
            else:
                autograd = _sourced(autograd, autograd_source, None)
            num, moved = _numeric(witness, io, i, witness_off)
            if io == "input":
                moved_inputs[i] = moved
            else:   # an output's VJP is taken at its inputs' points
                moved = any(moved_inputs.values())
            vjp, vjp_detail = _vjp(numeric, sources if autograd.outcome == A.GRAD else [],
                                   moved, case.gradient_conventions)
            # outputs: the witnesses measure them (engine.rules.by_type says why)
            why = type_reason(tags, formal, outputs_from_inputs=False)
            third = NO_BODY
            if body is not None:
                f = body.finding(io, i)
                third = Witness(f.outcome, f.detail, f.path)
            decision = decide(autograd=autograd, numeric=num, tag=formal.tag,
                              by_type=None if why is None else why.reason,
                              problem=a.problem if a is not None else None,
                              unfaithful=unfaithful, forward=forward,
                              vjp=vjp, vjp_detail=vjp_detail,
                              reference=case.kind == "reference", body=third)
            declared = case.expect.get(f"{io} {i}")
            if decision.rule == Rule.FORWARD and declared is not None and \
                    declared.verdict == decision.verdict:   # the case knows why: say it
                decision = dataclasses.replace(decision,
                                               reason=f"{decision.reason}: {declared.reason}")
            applies = case.conventions.get(f"{io} {i}")
            if applies is not None and why is not None and why.convention is None:
                applies = None    # by type before any convention: the types alone decide
            if applies is not None:
                decision = under_convention(decision, applies, formal.tag, case.op)
            out.append(_parameter(case, io, i, formal, latest.formal(io, i), evidence, source,
                                  autograd, num, decision, a, why is not None, vjp, third,
                                  applies.convention if applies is not None
                                  else why.convention if why is not None else None))
    return tuple(out)


def _parameter(case: Case, io: str, i: int, formal: Formal, latest: Formal | None,
               evidence: E, source: str, autograd: Witness, num: Witness,
               d: Decision, a: Attribution | None, by_type: bool, vjp: Vjp,
               body: Witness, convention: Convention | None) -> Parameter:
    """``convention``: the case's declaration, else the one a by-type decision rests on
    (``engine.rules.by_type.TypeReason.convention``)."""
    key = f"{io} {i}"
    exp = case.expect.get(key)
    tag_latest = latest.tag if latest is not None and latest.tag != formal.tag else None
    return Parameter(
        io, i, formal.name, source, E.AMBIGUOUS if a is not None and a.problem else evidence,
        formal.tag, d.verdict, d.reason, autograd, num, d.supports, d.rule,
        tag_latest=tag_latest,
        verdict_latest=judge(d.supports, tag_latest) if tag_latest is not None and
        d.supports is not None else None,
        path=a.path if a is not None else (),
        by_type=by_type, through=a.through if a is not None else (), vjp=vjp,
        expected=Verdict(exp.verdict) if exp else None,
        expected_reason=exp.reason if exp else None, function_body=body,
        convention=convention)
