"""Issue 21, part 2: words that match the evidence -- statuses, rules, the autograd witness's
source, refusal reasons, HammingWindow's mismatch, units, the cache count, the source column.

Expectations come from the cases (their kind, their declarations), PyTorch's own
derivatives.yaml facts named in the issue (clamp differentiates min/max; nll_loss has no
weight derivative), hand-built graphs and hand-written records.
"""
from __future__ import annotations

import json
from pathlib import Path

import onnx
from onnx import TensorProto, helper

from torch_prover import cli
from torch_prover.batch import summary
from torch_prover.cases import all_cases
from torch_prover.engine.attribution.mapping import map_node
from torch_prover.engine.pytorch_source import REFERENCE
from torch_prover.engine.rules.verdict import Rule, Witness, decide
from torch_prover.output import batch_report
from torch_prover.output.explain import explain, explain_text
from torch_prover.output.html_report import render_html
from torch_prover.tags.schema import schema_tags
from torch_prover.vocab import AutogradOutcome as A
from torch_prover.vocab import NumericOutcome as N
from torch_prover.vocab import Tag

MODELS = Path(__file__).resolve().parent.parent / "models"


def _rec(op: str, case: str) -> dict:
    return json.loads((MODELS / op / case / "proof.json").read_text())


def _p(rec: dict, io: str, index: int) -> dict:
    return next(p for p in rec["parameters"] if (p["io"], p["index"]) == (io, index))


# ----------------------------------------------------------------------------- op status
def _case(name: str, verdicts: list[str]) -> dict:
    return {"op": "X", "case": name, "status": "proved", "parameters": [
        {"io": "input", "index": i, "name": f"p{i}", "verdict": v, "reason": "r"}
        for i, v in enumerate(verdicts)]}


def test_proved_only_when_every_parameter_is_decided():
    assert summary.op_status([_case("a", ["agree", "agree"])])[0] == "proved"
    status, reason = summary.op_status([_case("a", ["agree", "inconclusive"]),
                                        _case("b", ["agree", "inconclusive"])])
    assert status == batch_report.PARTLY and reason.startswith("partly decided (1 inconclusive)")
    assert "input 1 (p1)" in reason
    # another case deciding it makes the op proved
    assert summary.op_status([_case("a", ["agree", "inconclusive"]),
                              _case("b", ["agree", "agree"])])[0] == "proved"


def test_index_says_partly_decided_for_bitcast_and_dropout():
    ops = {o["op"]: o for o in json.loads((MODELS / "index.json").read_text())["ops"]}
    for op in ("BitCast", "Dropout"):   # some parameter inconclusive in every case
        assert ops[op]["status"] == batch_report.PARTLY, ops[op]


# ----------------------------------------------------------------------------- rules
def test_both_witnesses_only_when_both_measured():
    d = decide(autograd=Witness(A.NONE, "x: no gradient"),
               numeric=Witness(N.NONE, "the node has no floating output to measure"),
               tag=Tag.NONDIFF)
    assert d.rule == Rule.NOTHING_TO_MEASURE and "both" not in d.rule
    p = _p(_rec("BitCast", "bitcast_float_to_int32"), "input", 0)
    assert p["witnesses"]["numeric"]["outcome"] == "none"
    assert p["rule"] == Rule.NOTHING_TO_MEASURE


def test_autograd_witness_names_its_source():
    for c in all_cases():
        if c.op not in ("Hardmax", "BatchNormalization", "Abs", "NegativeLogLikelihoodLoss"):
            continue
        rec = _rec(c.op, c.name)
        sources = {p["witnesses"]["autograd"]["source"] for p in rec["parameters"]}
        if c.kind == "reference":
            assert sources == {REFERENCE}, c.name
        elif c.exporter == "dynamo":
            assert len(sources) == 1 and next(iter(sources)).startswith("pytorch operator aten.")
    assert _p(_rec("Abs", "abs_basic"), "input", 0)["witnesses"]["autograd"]["source"] == \
        "pytorch operator aten.abs"


def test_refusal_says_whose_gap_it_is():
    untracked = decide(autograd=Witness(A.NOT_EXERCISED, "no gradient requested for w"),
                       numeric=Witness(N.SMOOTH, "smooth"), tag=Tag.DIFF)
    refused = decide(autograd=Witness(A.UNSUPPORTED, "PyTorch refuses"),
                     numeric=Witness(N.SMOOTH, "smooth"), tag=Tag.DIFF)
    assert "this case's module does not track it" in untracked.reason
    assert "PyTorch has no derivative for it" in refused.reason
    nll = _p(_rec("NegativeLogLikelihoodLoss", "negativeloglikelihoodloss_weight_none"),
             "input", 2)["reason"]
    assert "PyTorch has no derivative for weight (derivatives.yaml: nll_loss_forward" in nll
    clip = _p(_rec("Clip", "clip_scalar_bounds"), "input", 1)["reason"]
    assert "this case's module does not track it" in clip
    assert "PyTorch does differentiate min" in clip


def test_hammingwindow_mismatch_is_explained():
    p = _p(_rec("HammingWindow", "hammingwindow_periodic"), "output", 0)
    assert p["rule"] == Rule.FORWARD and "25/46" in p["reason"] and "0.54" in p["reason"]


# ----------------------------------------------------------------------------- units, cache
def _batch(cache_hits: int = 0) -> dict:
    dis = _case("x_basic", ["disagree", "agree"])
    dis["parameters"][0].update(tag="differentiable", rule="both witnesses", evidence="grad",
                                source="x")
    conv = _case("x_conv", ["disagree", "agree"])
    conv["parameters"][0].update(tag="differentiable", rule="convention", evidence="zero-grad",
                                 source="x", convention="piecewise-constant")
    for r in (dis, conv):
        r.update(schema_version=13, exporter="dynamo", opset=25, kind="natural")
        r["parameters"][1].update(tag="non-differentiable", rule="by type", evidence="integer",
                                  source="i")
    cov = [{"op": "X", "status": "covered", "cases": []}]
    return summary.batch_report([dis, conv], cov, 1.0, cache_hits=cache_hits)


def test_counts_name_their_units_the_same_everywhere():
    rep = _batch()
    units = rep["summary"]["disagreement_units"]
    assert units["math"] == {"case_results": 1, "parameters": 1, "cases": 1, "ops": 1}
    assert units["convention"]["case_results"] == 1
    text = batch_report.batch_text(rep, None)
    assert "case results: 0 agree" not in text and "case results: 2 agree, 2 disagree" in text
    assert "1 parameter (1 case result, in 1 op) by the math" in text
    assert "1 parameter (1 case result, in 1 op) decided by a convention" in text
    dis = [line for line in text.splitlines() if line.startswith("  disagree (")]
    assert "convention" not in dis[0] and "convention: piecewise-constant" in dis[1]
    md = batch_report.batch_markdown(rep)
    assert "## Disagreements (1 parameter (1 case result, in 1 op))" in md
    assert "## Disagreements decided by a convention (1 parameter" in md
    html = render_html(rep)
    assert "1 parameter (1 case result, in 1 op)" in html and "Decided by a convention" in html


def test_html_says_how_many_cases_came_from_the_cache():
    assert "2 of 2 cases from the cache, 0 proved in this run" in render_html(_batch(2))
    assert "0 of 2 cases from the cache, 2 proved in this run" in render_html(_batch(0))


# ----------------------------------------------------------------------------- source column
def test_source_lists_only_the_glue_on_the_values_own_path():
    """ScatterND(data, indices, Reshape(updates, Concat(Slice(Shape(updates)), [-1]))): the
    updates value itself only went through Reshape."""
    f, i64 = TensorProto.DOUBLE, TensorProto.INT64
    c = lambda name, vals: helper.make_node(  # noqa: E731
        "Constant", [], [name], value=helper.make_tensor(name, i64, [len(vals)], vals))
    nodes = [c("s0", [0]), c("s1", [1]), c("m1", [-1]),
             helper.make_node("Shape", ["updates"], ["shp"]),
             helper.make_node("Slice", ["shp", "s0", "s1"], ["lead"]),
             helper.make_node("Concat", ["lead", "m1"], ["newshape"], axis=0),
             helper.make_node("Reshape", ["updates", "newshape"], ["upd"]),
             helper.make_node("ScatterND", ["data", "indices", "upd"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("data", f, [4, 3]),
                                       helper.make_tensor_value_info("indices", i64, [2, 1]),
                                       helper.make_tensor_value_info("updates", f, [2, 3])],
                          [helper.make_tensor_value_info("y", f, [4, 3])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(model)
    m = map_node(model, "ScatterND", "", ["data", "indices", "updates"])
    assert m.inputs[2].source == "updates" and m.inputs[2].path == ("Reshape",)


# ----------------------------------------------------------------------------- tags --explain
def test_explain_shows_tag_witnesses_and_convention_per_parameter():
    recs = [_rec("Hardmax", c) for c in ("hardmax_last", "hardmax_axis0")]
    data = explain(schema_tags("Hardmax"), recs, cached=2)
    (inp,) = [p for p in data["parameters"] if p["io"] == "input"]
    assert inp["tag"] == "differentiable" and len(inp["cases"]) == 2
    row = inp["cases"][0]
    assert row["convention"] == "piecewise-constant"
    assert row["witnesses"]["autograd"] == {"outcome": "zero", "source": REFERENCE}
    assert row["witnesses"]["numeric"] == {"outcome": "flat"}
    assert [c["name"] for c in data["conventions"]] == ["piecewise-constant"]
    text = explain_text(data, 100)
    assert "convention: piecewise-constant" in text and "autograd zero; numeric flat" in text
    assert "2 cases (2 from the cache)" in text and len(text.splitlines()) <= 40


def test_explain_an_extra_witness_is_printed_by_its_name():
    rec = _rec("Abs", "abs_basic")
    rec["parameters"][0]["witnesses"]["function body"] = {"outcome": "consistent"}
    text = explain_text(explain(schema_tags("Abs"), [rec], cached=0), 100)
    assert "function body consistent" in text


def test_explain_cli_for_an_op_without_a_case(capsys):
    assert cli.main(["tags", "StringConcat", "--explain", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cases"] == [] and all(
        c["rule"] == "by type" for p in data["parameters"] for c in p["cases"])


def test_explain_cli_proves_or_reuses_the_cases_of_the_op(capsys, tmp_path, monkeypatch):
    """`tags Hardmax --explain`: one screen, the convention and the witnesses of both cases
    (the catalogue declares piecewise-constant for both; nothing written under models/)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cli.main(["tags", "Hardmax", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "explained from 2 cases (0 from the cache)" in out
    assert out.count("convention: piecewise-constant") == 4   # 2 parameters x 2 cases
    assert "hardmax_last: autograd: reference implementation (case code)" in out
    assert len(out.splitlines()) <= 40
    assert cli.main(["tags", "Hardmax", "--explain"]) == 0     # the second run: the cache
    assert "explained from 2 cases (2 from the cache)" in capsys.readouterr().out
