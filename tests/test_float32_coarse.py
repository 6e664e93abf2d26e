"""The precision guard (issue 33): a finite difference taken only at float32's steps that
reads flat while autograd gives a gradient is ``inconclusive (float32 too coarse)``, never
non-differentiable.

The edge: LSTM's initial_c into Y_h (LSTM-7 and -14, which onnxruntime runs only in
float32). With the forget gate nearly shut, Y_h = o * tanh(f * c0 + i * g) moves with c0
by o * (1 - tanh^2(c1)) * f -- small but nonzero (the math, computed here in float64) --
and float32's finite difference reads it flat.
"""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from torch_prover.engine.numeric.node_witness import witness
from torch_prover.engine.rules.verdict import Rule, Witness, decide, is_failure
from torch_prover.engine.witnesses import measured_coarse
from torch_prover.vocab import AutogradOutcome as A
from torch_prover.vocab import NumericOutcome as N
from torch_prover.vocab import Tag, Verdict

H, I = 2, 1
INITIAL_C = 6   # LSTM's input 6 (onnx.defs: X, W, R, B, sequence_lens, initial_h, initial_c)


def _lstm_y_h_only(opset: int):
    """One LSTM node whose only output is Y_h (output 1), float32."""
    node = helper.make_node("LSTM", ["X", "W", "R", "B", "", "initial_h", "initial_c"],
                            ["", "Y_h"], hidden_size=H)
    f = TensorProto.FLOAT
    ins = [helper.make_tensor_value_info(n, f, s) for n, s in (
        ("X", [1, 1, I]), ("W", [1, 4 * H, I]), ("R", [1, 4 * H, H]), ("B", [1, 8 * H]),
        ("initial_h", [1, 1, H]), ("initial_c", [1, 1, H]))]
    graph = helper.make_graph([node], "lstm", ins,
                              [helper.make_tensor_value_info("Y_h", f, [1, 1, H])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def _feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    b = np.zeros((1, 8 * H), np.float32)
    b[0, 2 * H:3 * H] = -8.0   # the forget gate's bias (ONNX's gate order: i, o, f, c)
    return {"X": rng.standard_normal((1, 1, I)).astype(np.float32),
            "W": (0.5 * rng.standard_normal((1, 4 * H, I))).astype(np.float32),
            "R": (0.5 * rng.standard_normal((1, 4 * H, H))).astype(np.float32),
            "B": b, "initial_h": rng.standard_normal((1, 1, H)).astype(np.float32),
            "initial_c": rng.standard_normal((1, 1, H)).astype(np.float32)}


def _dy_h_dc0(feeds: dict[str, np.ndarray]) -> np.ndarray:
    """d Y_h / d initial_c (diagonal), in float64, from LSTM's equations (ONNX's defaults:
    sigmoid gates, tanh cell): o * (1 - tanh(c1)^2) * f."""
    x, w, r = (feeds[k].astype(np.float64)[0] for k in ("X", "W", "R"))
    b = feeds["B"].astype(np.float64)[0]
    h0, c0 = feeds["initial_h"].astype(np.float64)[0, 0], feeds["initial_c"].astype(
        np.float64)[0, 0]
    z = w @ x[0] + r @ h0 + b[:4 * H] + b[4 * H:]
    i, o, f, c = (z[k * H:(k + 1) * H] for k in range(4))
    sig = lambda t: 1 / (1 + np.exp(-t))   # noqa: E731
    c1 = sig(f) * c0 + sig(i) * np.tanh(c)
    return sig(o) * (1 - np.tanh(c1) ** 2) * sig(f)


@pytest.mark.parametrize("opset", [7, 14])
def test_lstm_initial_c_into_y_h_reads_flat_in_float32_and_is_too_coarse(opset):
    feeds = _feeds()
    math = _dy_h_dc0(feeds)
    assert np.all(np.abs(math) > 1e-6), math          # a derivative: weak, not zero
    w = witness(_lstm_y_h_only(opset), 0, feeds)
    c = w.input(INITIAL_C)
    assert (c.name, c.outcome) == ("initial_c", N.FLAT), c.detail   # float32 reads it flat
    coarse = measured_coarse(w, "input", c)
    assert coarse
    d = decide(autograd=Witness(A.GRAD, "initial_c: nonzero gradient"),
               numeric=Witness(c.outcome, c.detail, coarse=coarse), tag=Tag.NONDIFF)
    assert (d.verdict, d.supports, d.rule) == (Verdict.INCONCLUSIVE, None, Rule.COARSE)
    assert "float32 too coarse" in d.reason
    assert not is_failure(d.verdict, d.rule, None)


def test_a_float64_flat_against_a_gradient_is_still_a_conflict():
    """At float64's steps a flat difference is evidence: the surrogate-gradient row."""
    d = decide(autograd=Witness(A.GRAD, "x: nonzero gradient"),
               numeric=Witness(N.FLAT, "flat", coarse=False), tag=Tag.NONDIFF)
    assert (d.verdict, d.rule) == (Verdict.INCONCLUSIVE, Rule.CONFLICT)
