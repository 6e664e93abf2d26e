"""One question, one answer (issue 41 item 4): the same math under the same convention gives
the same supported tag in every op and version of the committed per-version table
(models/versions.json), and the types decide before any convention.

The expectations come from the math: finite differences of hand-built ONNX nodes run in
onnx.reference, and the schemas' own types (onnx.defs), never from the tool's output.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnx.defs
import onnx.helper as oh
import pytest
from onnx.reference import ReferenceEvaluator

from torch_prover.conventions import RULES, Convention, TagPrecedent

ROOT = Path(__file__).resolve().parent.parent
H = 1e-4


def _cells() -> dict[tuple[str, int, str, str], dict]:
    table = json.loads((ROOT / "models" / "versions.json").read_text())
    return {(o["op"], v["version"], c["io"], c["name"]): c
            for o in table["ops"] for v in o["versions"] for c in v["cells"]}


def _model(node: onnx.NodeProto, inputs: dict[str, np.ndarray], opset: int) -> ReferenceEvaluator:
    vi = [oh.make_tensor_value_info(n, oh.np_dtype_to_tensor_dtype(x.dtype), x.shape)
          for n, x in inputs.items()]
    outs = [oh.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in node.output]
    g = oh.make_graph([node], "g", vi, outs)
    return ReferenceEvaluator(oh.make_model(g, opset_imports=[oh.make_opsetid("", opset)]))


class _Ort:
    """onnxruntime on the same one-node model (onnx.reference lacks linear Upsample)."""

    def __init__(self, node, inputs, opset):
        import onnxruntime as ort
        vi = [oh.make_tensor_value_info(n, oh.np_dtype_to_tensor_dtype(x.dtype), x.shape)
              for n, x in inputs.items()]
        outs = [oh.make_tensor_value_info(o, onnx.TensorProto.FLOAT, None)
                for o in node.output]
        m = oh.make_model(oh.make_graph([node], "g", vi, outs),
                          opset_imports=[oh.make_opsetid("", opset)])
        m.ir_version = 7
        self.s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])

    def run(self, _, feeds):
        return self.s.run(None, feeds)


def _fd(node, inputs, opset, wrt, out=0, v=None, h=H, ort=False) -> np.ndarray | None:
    """The central difference of output ``out`` along ``v`` in input ``wrt`` (None: the
    output's shape changed)."""
    ev = _Ort(node, inputs, opset) if ort else _model(node, inputs, opset)
    x = inputs[wrt]
    v = np.ones_like(x) if v is None else v.astype(x.dtype)
    plus = ev.run(None, {**inputs, wrt: (x + h * v).astype(x.dtype)})[out]
    minus = ev.run(None, {**inputs, wrt: (x - h * v).astype(x.dtype)})[out]
    if plus.shape != minus.shape:
        return None
    return (plus.astype(np.float64) - minus) / (2 * h)


X = (np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4) / 7.0) ** 2
SCALES = np.array([1.0, 1.0, 1.68, 1.52], dtype=np.float32)


def test_resize_and_upsample_scales_are_the_same_math_and_get_one_answer():
    """Linear-mode Resize-10 and Upsample-9 compute the same function of scales (the same
    finite differences, nonzero at a fixed output size); Resize-13 likewise: every one of
    their scales cells supports the same tag under the same label."""
    up = _fd(oh.make_node("Upsample", ["X", "scales"], ["Y"], mode="linear"),
             {"X": X, "scales": SCALES}, 9, "scales", v=np.array([0, 0, 1.0, 1.0]), h=1e-3,
             ort=True)
    rs10 = _fd(oh.make_node("Resize", ["X", "scales"], ["Y"], mode="linear"),
               {"X": X, "scales": SCALES}, 10, "scales", v=np.array([0, 0, 1.0, 1.0]),
               h=1e-3, ort=True)
    assert up is not None and rs10 is not None
    assert np.abs(up).max() > 1e-2 and np.allclose(up, rs10, atol=1e-3)
    math = "differentiable"       # smooth at a fixed output size, for both
    cells = _cells()
    scales = {k: c for k, c in cells.items() if k[0] in ("Resize", "Upsample")
              and k[3] == "scales" and c.get("supports")}
    assert {("Resize", 10), ("Upsample", 9), ("Resize", 13)} <= {k[:2] for k in scales}
    assert {c["supports"] for c in scales.values()} == {math}, scales
    assert {c.get("convention") for c in scales.values()} == {"shape-setting input"}


def test_range_start_and_delta_are_smooth_at_a_fixed_length_and_so_supported():
    f = oh.make_node("Range", ["start", "limit", "delta"], ["y"])
    point = {"start": np.array(0.3), "limit": np.array(5.0), "delta": np.array(0.7)}
    for name in ("start", "delta"):
        d = _fd(f, point, 11, name)
        assert d is not None and np.abs(d).max() > 0.5, name
    cells = _cells()
    for name in ("start", "delta"):
        got = {v: c["supports"] for (op, v, io, n), c in cells.items()
               if op == "Range" and n == name and c.get("supports")}
        assert got and set(got.values()) == {"differentiable"}, (name, got)


def test_state_outputs_are_smooth_in_x_and_get_one_answer():
    """BatchNormalization-15's running_mean (training mode) and LayerNormalization-17's Mean
    both move with X: the same question (a statistic handed on) and the same math."""
    c = 3
    x = np.random.default_rng(0).standard_normal((2, c, 2))
    bn = oh.make_node("BatchNormalization", ["X", "s", "b", "m", "v"],
                      ["Y", "running_mean", "running_var"], training_mode=1)
    ones, zeros = np.ones(c), np.zeros(c)
    d = _fd(bn, {"X": x, "s": ones, "b": zeros, "m": zeros, "v": ones}, 15, "X", out=1)
    assert d is not None and np.abs(d).max() > 1e-3
    ln = oh.make_node("LayerNormalization", ["X", "s", "b"], ["Y", "Mean", "InvStdDev"],
                      axis=-1)
    d = _fd(ln, {"X": x, "s": np.ones(2), "b": np.zeros(2)}, 17, "X", out=1,
            v=np.random.default_rng(1).standard_normal(x.shape))
    assert d is not None and np.abs(d).max() > 1e-3
    cells = _cells()
    stats = {k: c for k, c in cells.items() if c.get("supports") and (
        (k[0] == "BatchNormalization" and k[3] in ("running_mean", "running_var")) or
        (k[0] == "LayerNormalization" and k[3] in ("Mean", "InvStdDev")))}
    assert {("BatchNormalization", 15), ("LayerNormalization", 17)} <= {k[:2] for k in stats}
    assert {c["supports"] for c in stats.values()} == {"differentiable"}, stats


@pytest.mark.parametrize("version", [10, 13])
def test_int_only_dequantize_x_is_decided_by_type_like_its_zero_point(version):
    """DequantizeLinear-10/-13's x allows int8/uint8/int32 only (onnx.defs): no gradient can
    flow, whatever convention a case names -- by type, unlabelled, as its zero point."""
    schema = onnx.defs.get_schema("DequantizeLinear", version)
    assert schema.since_version == version
    types = {t for c in schema.type_constraints for t in c.allowed_type_strs
             if c.type_param_str == schema.inputs[0].type_str}
    assert types and all("int" in t for t in types)
    cells = _cells()
    for name in ("x", "x_zero_point"):
        c = cells[("DequantizeLinear", version, "input", name)]
        assert (c["rule"], c["supports"], c.get("convention")) == (
            "by type", "non-differentiable", None), (name, c)


def test_a_refuted_precedent_is_no_precedent():
    """Resize-13's scales and BatchNormalization-15's statistics are tags the catalogue
    declares wrong (a case's expect=disagree): they decide no other op."""
    shape = RULES[Convention.SHAPE_SETTING]
    state = RULES[Convention.STATE_OUTPUT]
    assert all(isinstance(p, TagPrecedent) and p.refuted for p in shape.precedents)
    assert not shape.founded_for("Range") and not shape.founded_for("Upsample")
    assert not state.founded_for("LayerNormalization")
    assert RULES[Convention.PIECEWISE_CONSTANT].founded_for("Hardmax")
