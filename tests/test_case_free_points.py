"""Case-free: zero at ONNX's points is not the op's math, and a graph op is body-dependent
(issue 41 item 5, batch/case_free.py, engine/onnx_points/judge.case_free; the float64
re-measure, engine/numeric/redraw.py).

Expectations from the math: finite differences of hand-built nodes in onnx.reference
(float64), never the tool's output. RNN's Y depends on R wherever the hidden state is
nonzero and tanh is not saturated; an If whose branch reads an outer-scope tensor is
differentiable in it, one whose branch is a constant is not -- so no tag follows from the
op alone (unknown).
"""
from __future__ import annotations

import json

import numpy as np
import onnx
import onnx.helper as oh
from onnx.reference import ReferenceEvaluator

from torch_prover import cli

D = onnx.TensorProto.DOUBLE


def _rnn_dy_dr() -> float:
    """|d Y / d R| by central differences at a random point (two steps, float64)."""
    rng = np.random.default_rng(0)
    x, w, r = (rng.standard_normal(s) * 0.5 for s in ((3, 1, 2), (1, 4, 2), (1, 4, 4)))
    node = oh.make_node("RNN", ["X", "W", "R"], ["Y"], hidden_size=4)
    g = oh.make_graph([node], "g", [oh.make_tensor_value_info(n, D, None) for n in "XWR"],
                      [oh.make_tensor_value_info("Y", D, None)])
    ev = ReferenceEvaluator(oh.make_model(g, opset_imports=[oh.make_opsetid("", 22)]))
    v, h = rng.standard_normal(r.shape), 1e-6
    plus = ev.run(None, {"X": x, "W": w, "R": r + h * v})[0]
    minus = ev.run(None, {"X": x, "W": w, "R": r - h * v})[0]
    return float(np.abs((plus - minus) / (2 * h)).max())


def _if_dy_dt(constant: bool) -> float:
    """|d out / d t| of If(cond) { then: t * 2 (outer scope t) or a constant } at cond=True."""
    body = oh.make_graph(
        [oh.make_node("Constant", [], ["y"], value=oh.make_tensor("c", D, [2], [1.0, 2.0]))]
        if constant else [oh.make_node("Add", ["t", "t"], ["y"])],
        "then", [], [oh.make_tensor_value_info("y", D, [2])])
    other = oh.make_graph([oh.make_node("Identity", ["t"], ["y"])], "else", [],
                          [oh.make_tensor_value_info("y", D, [2])])
    node = oh.make_node("If", ["c"], ["out"], then_branch=body, else_branch=other)
    g = oh.make_graph([node], "g", [oh.make_tensor_value_info("c", onnx.TensorProto.BOOL, []),
                                    oh.make_tensor_value_info("t", D, [2])],
                      [oh.make_tensor_value_info("out", D, [2])])
    ev = ReferenceEvaluator(oh.make_model(g, opset_imports=[oh.make_opsetid("", 11)]))
    t, h = np.array([0.3, -0.7]), 1e-6
    c = np.array(True)
    return float(np.abs((ev.run(None, {"c": c, "t": t + h})[0]
                         - ev.run(None, {"c": c, "t": t - h})[0]) / (2 * h)).max())


def test_rnn_r_and_graph_ops_case_free(capsys, tmp_path):
    assert _rnn_dy_dr() > 1e-3                    # R is differentiable: never "N"
    assert _if_dy_dt(constant=False) > 1.0 and _if_dy_dt(constant=True) == 0.0
    code = cli.main(["verify-all", "--case-free", "--ops", "RNN,If,Loop,Scan,Sign", "--versions",
                     "all", "--format", "json", "--cache-dir", str(tmp_path), "--no-write"])
    rep = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    cells = {(o["op"], v["version"], c["name"]): c for o in rep["case_free"]["ops"]
             for v in o["versions"] for c in v["cells"]}
    # flat in float32 at ONNX's points, smooth in float64 there, each number's precision and
    # runtime named; Sign flat in both (the math: tests/test_float64_remeasure.py)
    r = cells[("RNN", 22, "R")]
    assert (r["supports"], r["rule"]) == ("differentiable", "case-free: ONNX's points in float64")
    assert "smooth in float64 (" in r["precision"] and "RNN-22" in r["precision"]
    assert "flat in float32 in onnxruntime" in r["precision"]
    sign = cells[("Sign", 13, "input")]
    assert sign["supports"] == "non-differentiable" and "flat in float64 (" in sign["precision"]
    graph = {k: c for k, c in cells.items() if k[0] in ("If", "Loop", "Scan")}
    assert graph and ("If", 11, "outputs") in graph
    for (op, v, _name), c in graph.items():
        if c["rule"] == "by type":                # cond, M, sequence_lens: types first
            continue
        assert (c["supports"], c["rule"]) == ("unknown", "case-free: body-dependent"), (op, v, c)
