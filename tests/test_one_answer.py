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


def _scales_fd() -> tuple[np.ndarray | None, np.ndarray | None]:
    """d Y / d scales of linear-mode Upsample-9 and Resize-10 at a fixed output size."""
    up = _fd(oh.make_node("Upsample", ["X", "scales"], ["Y"], mode="linear"),
             {"X": X, "scales": SCALES}, 9, "scales", v=np.array([0, 0, 1.0, 1.0]), h=1e-3,
             ort=True)
    rs10 = _fd(oh.make_node("Resize", ["X", "scales"], ["Y"], mode="linear"),
               {"X": X, "scales": SCALES}, 10, "scales", v=np.array([0, 0, 1.0, 1.0]),
               h=1e-3, ort=True)
    return up, rs10


def test_resize_and_upsample_scales_are_the_same_math_and_get_one_answer():
    """Linear-mode Resize-10 and Upsample-9 compute the same function of scales (the same
    finite differences, nonzero at a fixed output size); Resize-13 likewise: every one of
    their scales cells supports the same tag under the same label."""
    up, rs10 = _scales_fd()
    assert up is not None and rs10 is not None
    assert np.abs(up).max() > 1e-2 and np.allclose(up, rs10, atol=1e-3)
    # nearest mode (ONNX's only Upsample test) is flat in scales at a fixed output size: a
    # mode that selects a piecewise-constant branch, where case-free's points sit
    nearest = _fd(oh.make_node("Upsample", ["X", "scales"], ["Y"], mode="nearest"),
                  {"X": X, "scales": SCALES}, 9, "scales", v=np.array([0, 0, 1.0, 1.0]),
                  h=1e-3, ort=True)
    assert nearest is not None and not nearest.any()
    math = "differentiable"       # smooth at a fixed output size, for both
    cells = _cells()
    scales = {k: c for k, c in cells.items() if k[0] in ("Resize", "Upsample")
              and k[3] == "scales" and c.get("supports")}
    assert {("Resize", 10), ("Upsample", 9), ("Resize", 13)} <= {k[:2] for k in scales}
    assert {c["supports"] for c in scales.values()} == {math}, scales
    assert {c.get("convention") for c in scales.values()} == {"shape-setting input"}


def _range_fd(name: str) -> np.ndarray | None:
    f = oh.make_node("Range", ["start", "limit", "delta"], ["y"])
    point = {"start": np.array(0.3), "limit": np.array(5.0), "delta": np.array(0.7)}
    return _fd(f, point, 11, name)


def test_range_start_and_delta_are_smooth_at_a_fixed_length_and_so_supported():
    for name in ("start", "delta"):
        d = _range_fd(name)
        assert d is not None and np.abs(d).max() > 0.5, name
    cells = _cells()
    for name in ("start", "delta"):
        got = {v: c["supports"] for (op, v, io, n), c in cells.items()
               if op == "Range" and n == name and c.get("supports")}
        assert got and set(got.values()) == {"differentiable"}, (name, got)


def test_state_outputs_are_smooth_in_x_and_get_one_answer():
    """BatchNormalization-15's running_mean (training mode) and LayerNormalization-17's Mean
    both move with X: the same question (a statistic handed on) and the same math."""
    for d in _state_fd():
        assert d is not None and np.abs(d).max() > 1e-3
    cells = _cells()
    stats = {k: c for k, c in cells.items() if c.get("supports") and (
        (k[0] == "BatchNormalization" and k[3] in ("running_mean", "running_var")) or
        (k[0] == "LayerNormalization" and k[3] in ("Mean", "InvStdDev")))}
    assert {("BatchNormalization", 15), ("LayerNormalization", 17)} <= {k[:2] for k in stats}
    assert {c["supports"] for c in stats.values()} == {"differentiable"}, stats


def _state_fd() -> tuple[np.ndarray | None, np.ndarray | None]:
    """d running_mean / d X of BatchNormalization-15 (training) and d Mean / d X of
    LayerNormalization-17."""
    c = 3
    x = np.random.default_rng(0).standard_normal((2, c, 2))
    bn = oh.make_node("BatchNormalization", ["X", "s", "b", "m", "v"],
                      ["Y", "running_mean", "running_var"], training_mode=1)
    ones, zeros = np.ones(c), np.zeros(c)
    d_bn = _fd(bn, {"X": x, "s": ones, "b": zeros, "m": zeros, "v": ones}, 15, "X", out=1)
    ln = oh.make_node("LayerNormalization", ["X", "s", "b"], ["Y", "Mean", "InvStdDev"],
                      axis=-1)
    d_ln = _fd(ln, {"X": x, "s": np.ones(2), "b": np.zeros(2)}, 17, "X", out=1,
               v=np.random.default_rng(1).standard_normal(x.shape))
    return d_bn, d_ln


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


def _smooth(d: np.ndarray | None) -> str:
    """The tag finite differences support: a derivative at a fixed shape -> differentiable."""
    return "differentiable" if d is not None and np.abs(d).max() > 1e-3 else "non-differentiable"


def test_fix_tags_gives_each_pair_one_answer_with_and_without_include_conventions():
    """fix-tags planned from the committed evidence (models/: the cases, their variants and
    the per-version table): without --include-conventions every cell of a pair under a label
    is withheld alike; with it, each is written with the tag its math supports -- the same
    for both members of a pair; the int-only DequantizeLinear x and zero points, decided by
    type, are planned alike either way and withheld from neither."""
    from fix_report import SRC
    from torch_prover.fix.locate import read_tree
    from torch_prover.fix.plan import Withheld, findings, plan, report_records
    up, rs10 = _scales_fd()
    bn, ln = _state_fd()
    math = {("Upsample", 9, "scales"): _smooth(up), ("Resize", 10, "scales"): _smooth(rs10),
            ("Resize", 13, "scales"): _smooth(rs10),
            ("Range", 11, "start"): _smooth(_range_fd("start")),
            ("Range", 11, "delta"): _smooth(_range_fd("delta")),
            ("BatchNormalization", 15, "running_mean"): _smooth(bn),
            ("BatchNormalization", 15, "running_var"): _smooth(bn),
            ("LayerNormalization", 17, "Mean"): _smooth(ln),
            ("LayerNormalization", 17, "InvStdDev"): _smooth(ln)}
    assert set(math.values()) == {"differentiable"}
    by_type = {("DequantizeLinear", v, n) for v in (10, 13) for n in ("x", "x_zero_point")}
    models = ROOT / "models"
    proofs = sorted(models.glob("*/*/proof.json"))
    doc = {"cases": [json.loads(p.read_text()) for p in proofs if "@" not in p.parent.name],
           "versions": {**json.loads((models / "versions.json").read_text()),
                        "cases": [json.loads(p.read_text()) for p in proofs
                                  if "@" in p.parent.name]}}
    found = findings(report_records(doc))
    tree = read_tree(SRC)
    for include in (False, True):
        p = plan(tree, found, include_conventions=include)
        planned = {(f.op, f.version, f.name): f for e in p.edits for f in e.findings}
        planned |= {(f.op, f.version, f.name): f for f, *_ in p.unlocated}
        withheld = {(f.op, f.version, f.name): why for f, why, _ in p.withheld}
        for key, tag in math.items():
            if include:
                assert key in planned and {t.value for t in planned[key].supports} == {tag}, key
            else:
                assert withheld.get(key) is Withheld.CONVENTION, key
        for key in by_type:
            assert key in planned and key not in withheld, key
            assert {t.value for t in planned[key].supports} == {"non-differentiable"}
            assert not planned[key].conventions
