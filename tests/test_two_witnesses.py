"""Two witnesses: every verdict rests on PyTorch autograd and the ONNX node's own derivative.

The scan reads the session's full verify-all report (conftest ``full_run``): no `agree`,
`disagree` or `proposed` may rest on a PyTorch refusal, on a tensor that reached the node
through a computing op, or on a check that compared nothing; each shows both witnesses or
says why one could not run. The named outcomes are scripts in the classic style, proved
through the library; each expectation is the math, written out beside it.
"""
from __future__ import annotations

import pytest
import torch

from torch_prover import prove

DECIDED = ("agree", "disagree", "proposed")
AUTOGRAD_DECIDES = ("grad", "zero", "none", "detached")
NUMERIC_DECIDES = ("smooth", "flat", "jump", "none")


def _decided(report):
    for rec in report["cases"]:
        for p in rec["parameters"]:
            if p["verdict"] in DECIDED:
                yield rec, p


def test_every_decided_verdict_shows_its_witnesses(full_run):
    bad = []
    for rec, p in _decided(full_run["report"]):
        a, n = p["witnesses"]["autograd"], p["witnesses"]["numeric"]
        where = f"{rec['case']} {p['io']} {p['index']} ({p['rule']})"
        if not (a["detail"] and n["detail"]):
            bad.append(f"{where}: a witness without a word")
        if p["rule"] == "by type":
            continue   # the schema's types decide; no evidence could differ
        if p["supports"] is None:
            bad.append(f"{where}: decided, but supports nothing")
        if p["rule"] == "both witnesses" and not (a["outcome"] in AUTOGRAD_DECIDES
                                                   and n["outcome"] in NUMERIC_DECIDES):
            bad.append(f"{where}: 'both' without two deciding witnesses")
        if p["rule"] == "autograd only" and n["outcome"] != "not run":
            bad.append(f"{where}: autograd alone although the numeric witness ran")
    assert not bad, "\n".join(bad[:20])


def test_no_decided_verdict_rests_on_a_refusal_a_computing_path_or_an_empty_check(full_run):
    bad = []
    for rec, p in _decided(full_run["report"]):
        a = p["witnesses"]["autograd"]["outcome"]
        where = f"{rec['case']} {p['io']} {p['index']}"
        uses_autograd = p["rule"] in ("both witnesses", "autograd only")
        if uses_autograd and a in ("unsupported", "not exercised"):
            bad.append(f"{where}: rests on autograd '{a}'")
        if uses_autograd and p.get("through"):
            bad.append(f"{where}: autograd counted through {p['through']}")
        if p.get("vjp") in ("compared nothing", "failed") and p.get("expected") is None:
            bad.append(f"{where}: VJP {p['vjp']}")
    assert not bad, "\n".join(bad[:20])


def test_the_named_findings_of_the_audit(full_run):
    by = {(r["case"], p["io"], p["index"]): p for r in full_run["report"]["cases"]
          for p in r["parameters"]}

    def v(case, io, i):
        p = by[(case, io, i)]
        return p["verdict"], p["supports"]
    D, N = "differentiable", "non-differentiable"
    # Unique's Y is X gathered: a refusal in PyTorch is no evidence of a flat function; the
    # math (the numeric witness) says differentiable; the data-dependent-shape convention
    # the case declares has no precedent outside Unique's own tags (issue 26 part 7), so it
    # cannot decide: a disagreement under the convention's label, both halves in the reason
    for key in (("unique_sorted", "input", 0), ("unique_sorted", "output", 0)):
        p = by[key]
        assert v(*key) == ("disagree", D) and p["convention"] == "data-dependent shape"
        assert p["rule"] == "convention without precedent"
        assert p["reason"].startswith("math: numeric witness only") and "smooth" in p["reason"]
    # Range: output = start + i * delta, smooth in start and delta, whose output length
    # jumps with start, limit and delta: the question Resize's scales raise, under one
    # convention ('shape-setting input'). Its precedent, Resize-13's tag, is one the tool's
    # own evidence refutes (a Resize case declares it a disagreement): no precedent, so the
    # math decides (issue 41 item 4) -- smooth differentiable, a jump non-differentiable
    for i, shape, tag in ((0, "smooth", D), (2, "smooth", D), (1, "jump", N)):
        p = by[("range_float", "input", i)]
        assert v("range_float", "input", i) == ("proposed", tag)
        assert p["convention"] == "shape-setting input"
        assert p["rule"] == "convention without precedent"
        assert p["reason"].startswith("math: numeric witness only") and shape in p["reason"]
    assert v("range_float", "output", 0) == ("proposed", D)
    # DequantizeLinear: y = (x - zero_point) * x_scale is linear in x_scale
    assert v("dequantizelinear_decomposed", "output", 0) == ("proposed", D)
    # BatchNormalization (inference): y is smooth in the running mean and variance
    assert v("batchnormalization_eval", "input", 3) == ("agree", D)
    assert v("batchnormalization_eval", "input", 4) == ("agree", D)
    # tags the math contradicts, shown by the node's own finite differences
    for case, i in (("negativeloglikelihoodloss_weight_none", 2),
                    ("softmaxcrossentropyloss_weight_none", 2), ("pad_constant", 2)):
        p = by[(case, "input", i)]
        assert (p["verdict"], p["supports"]) == ("disagree", D), case
        assert "numeric witness" in p["reason"]


def cumsum_of_floor(x):
    return torch.cumsum(torch.floor(4 * x), 1)


def test_a_computing_op_upstream_is_not_evidence_about_the_node():
    """cumsum(floor(4x)) proved as CumSum: floor makes x's gradient zero, but CumSum is a
    sum, differentiable in its input; the numeric witness says so."""
    proof = prove(cumsum_of_floor, [torch.randn(2, 3, dtype=torch.float64)], op="CumSum")
    x = proof.parameters[0]
    assert (x.verdict, x.supports, x.rule) == ("agree", "differentiable", "numeric witness only")
    assert "Floor" in x.reason and x.through == ("Mul", "Floor")
    assert proof.status == "proved"


def round_(x):
    return torch.round(x)


def test_round_sampled_on_a_jump_agrees_and_says_so():
    """Round is piecewise constant: non-differentiable. 3.5 sits on a jump, where a central
    difference is huge; the numeric witness moves the point and says why."""
    proof = prove(round_, [torch.tensor([0.2, 1.7, -2.4, 3.5], dtype=torch.float64)],
                  op="Round")
    x = proof.parameters[0]
    assert (x.verdict, x.supports) == ("agree", "non-differentiable")
    assert "moved" in x.reason and "1/step" in x.reason


def reduce_max(x):
    return torch.amax(x, dim=1)


def test_reduce_max_with_tied_inputs_agrees_and_names_the_tie():
    """Max is differentiable almost everywhere; at a tie autograd gives a subgradient a
    finite difference cannot match. The witness moves off the tie and the reason says so."""
    proof = prove(reduce_max, [torch.tensor([[1., 1., 0.], [2., 2., 2.]], dtype=torch.float64)],
                  op="ReduceMax")
    x = proof.parameters[0]
    assert (x.verdict, x.supports, x.vjp) == ("agree", "differentiable", "at a jump")
    assert "tie" in x.reason and "subgradient" in x.reason
    assert proof.status == "proved"


@pytest.mark.parametrize("case,param", [("min_three_broadcast", ("input", 1))])
def test_evidence_from_any_seed_is_measured_at_that_seed(case, param, proof_of):
    """Min's b is the minimum somewhere only on seed 1: the numeric witness measures at
    every seed's point, so the two witnesses meet."""
    from conftest import param as get
    p = get(proof_of(case), *param)
    assert (p.verdict, p.rule, p.numeric.outcome) == ("agree", "both witnesses", "smooth")
