"""Resize-10 and Upsample-9 `scales`, and Scan-8, decided by cases that compute what those
versions compute (issue 33, "decide the decidable").

The expectations come from outside the cases: onnxruntime's kernels of those versions run
on hand-built nodes (central finite differences measured here, independently of the
engine), the asymmetric linear formula written out below, and the schemas (onnx.defs).
"""
from __future__ import annotations

import numpy as np
import onnx
import onnx.defs
import onnx.helper as oh
import onnxruntime as ort
import pytest
import torch

from conftest import param
from torch_prover.cases import all_cases
from torch_prover.conventions import Convention
from torch_prover.vocab import Tag, Verdict

SCALES = (1.68, 1.52)          # the cases' point: a 3 x 4 X resized to 5 x 6
OUT = (5, 6)
CAT = onnx.defs.OpSchema.DifferentiationCategory


def _x(shape, dtype=np.float32, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _session(nodes, inputs, outputs, opset: int) -> ort.InferenceSession:
    graph = oh.make_graph(nodes, "g", inputs, outputs)
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)], ir_version=7)
    onnx.checker.check_model(model)
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _resample(op: str, opset: int, x: np.ndarray, scales, mode: str) -> np.ndarray:
    """onnxruntime's kernel of ``op``-``opset`` (Resize-10 or Upsample-9) on one node."""
    f = onnx.TensorProto.FLOAT
    sess = _session([oh.make_node(op, ["X", "scales"], ["Y"], mode=mode)],
                    [oh.make_tensor_value_info("X", f, list(x.shape)),
                     oh.make_tensor_value_info("scales", f, [len(scales)])],
                    [oh.make_tensor_value_info("Y", f, [None] * x.ndim)], opset)
    return sess.run(None, {"X": x, "scales": np.asarray(scales, np.float32)})[0]


def _asymmetric_linear(x: np.ndarray, scales) -> np.ndarray:
    """The schema's linear mode before Resize-11, written out: output (i, j) of a
    floor(L * scale) grid samples X at (i / s_h, j / s_w), clamped to the last pixel,
    bilinearly between its four neighbours."""
    h, w = x.shape
    out = np.zeros((int(h * scales[0]), int(w * scales[1])))
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            p, q = min(i / scales[0], h - 1), min(j / scales[1], w - 1)
            i0, j0 = int(p), int(q)
            i1, j1 = min(i0 + 1, h - 1), min(j0 + 1, w - 1)
            a, b = p - i0, q - j0
            out[i, j] = ((1 - a) * (1 - b) * x[i0, j0] + (1 - a) * b * x[i0, j1]
                         + a * (1 - b) * x[i1, j0] + a * b * x[i1, j1])
    return out


def _case(name: str):
    return next(c for c in all_cases() if c.name == name)


# ------------------------------------------------------------- Resize-10, Upsample-9 scales
RESAMPLERS = [("Resize", 10, "resize_linear_scales_10"), ("Upsample", 9, "upsample_linear_scales")]


@pytest.mark.parametrize("op,opset,case_name", RESAMPLERS)
def test_the_kernel_is_the_asymmetric_formula_and_the_case_computes_it(op, opset, case_name):
    """onnxruntime's kernel of that version computes the asymmetric formula at the case's
    point, and so does the case's module (the reference it proves with)."""
    x = _x((3, 4))
    y = _resample(op, opset, x, SCALES, "linear")
    assert y.shape == OUT
    np.testing.assert_allclose(y, _asymmetric_linear(x.astype(np.float64), SCALES), atol=1e-5)
    module = _case(case_name).model
    got = module(torch.from_numpy(x), torch.tensor(SCALES, dtype=torch.float32))
    np.testing.assert_allclose(got.detach().numpy(), y, atol=1e-5)


@pytest.mark.parametrize("op,opset,case_name", RESAMPLERS)
def test_linear_moves_with_scales_at_a_fixed_size_and_nearest_does_not(op, opset, case_name):
    """Central differences of the kernel in each scale, h = 1e-3: the output size stays 5 x 6
    on both sides; linear mode moves (dY/ds = -(i / s^2) (x1 - x0) between neighbours),
    nearest mode does not move at all."""
    x = _x((3, 4))
    h = 1e-3
    for k in range(2):
        for mode, moves in (("linear", True), ("nearest", False)):
            up = list(SCALES)
            down = list(SCALES)
            up[k] += h
            down[k] -= h
            yp, ym = (_resample(op, opset, x, s, mode) for s in (up, down))
            assert yp.shape == ym.shape == OUT
            fd = (yp.astype(np.float64) - ym) / (2 * h)
            if moves:
                assert np.abs(fd).max() > 0.05, (op, k, mode)
            else:
                assert np.abs(fd).max() == 0.0, (op, k, mode)


def test_resize10_scales_is_proposed_differentiable_under_the_resize_label(proof_of):
    """Resize-10's scales: the math decides (the 'shape-setting input' convention's only
    precedent is Resize's own later tag), differentiable, with the label Resize-11+'s
    scales carries in resize_bilinear_scale."""
    proof = proof_of("resize_linear_scales_10")
    assert (proof.opset, proof.schema_version) == (10, 10)
    assert onnx.defs.get_schema("Resize", 10).inputs[1].name == "scales"
    scales = param(proof, "input", 1)
    assert (scales.name, scales.tag) == ("scales", Tag.UNKNOWN)
    assert (scales.verdict, scales.supports) == (Verdict.PROPOSED, Tag.DIFF)
    later = param(proof_of("resize_bilinear_scale"), "input", 2)
    assert later.name == "scales"
    assert scales.convention == later.convention == Convention.SHAPE_SETTING
    assert scales.supports == later.supports


def test_upsample9_scales_is_the_math_under_the_same_label(proof_of):
    """Upsample-9's scales: Resize-13 tags its scales non-differentiable (onnx.defs), but the
    catalogue's own evidence refutes that tag (resize_bilinear_scale declares it a
    disagreement), so it is no precedent (issue 41): the math proposes differentiable, as
    for Resize-10 -- the same function of scales, one answer."""
    precedent = onnx.defs.get_schema("Resize", 13).inputs[2]
    assert precedent.name == "scales"
    assert precedent.differentiation_category == CAT.NonDifferentiable
    proof = proof_of("upsample_linear_scales")
    assert (proof.opset, proof.schema_version) == (9, 9)
    scales = param(proof, "input", 1)
    assert (scales.name, scales.tag) == ("scales", Tag.UNKNOWN)
    assert (scales.verdict, scales.supports) == (Verdict.PROPOSED, Tag.DIFF)
    assert scales.convention == Convention.SHAPE_SETTING
    x = param(proof, "input", 0)
    assert (x.verdict, x.supports) == (Verdict.PROPOSED, Tag.DIFF)


# ------------------------------------------------------------------------------------ Scan-8
def _scan8(body_op: str | None, init: np.ndarray, xs: np.ndarray) -> tuple[np.ndarray, ...]:
    """onnxruntime's Scan-8 on one node, sequence_lens absent: batch axis 0, sequence axis
    1; body total = state + x (then ``body_op`` on it, if given), out = total + total."""
    d = onnx.TensorProto.DOUBLE
    vi = oh.make_tensor_value_info
    nodes = [oh.make_node("Add", ["s", "x"], ["t0"])]
    nodes.append(oh.make_node(body_op, ["t0"], ["t"]) if body_op else
                 oh.make_node("Identity", ["t0"], ["t"]))
    nodes.append(oh.make_node("Add", ["t", "t"], ["o"]))
    body = oh.make_graph(nodes, "body", [vi("s", d, [3]), vi("x", d, [3])],
                         [vi("t", d, [3]), vi("o", d, [3])])
    scan = oh.make_node("Scan", ["", "init", "xs"], ["final", "outs"], body=body,
                        num_scan_inputs=1)
    sess = _session([scan], [vi("init", d, [2, 3]), vi("xs", d, [2, 4, 3])],
                    [vi("final", d, [2, 3]), vi("outs", d, [2, 4, 3])], 8)
    return tuple(sess.run(None, {"init": init, "xs": xs}))


def _scan8_jacobian(body_op: str | None, h: float = 1e-6) -> tuple[float, float]:
    """Largest |d output / d input| by central differences, for init and for xs."""
    init, xs = _x((2, 3), np.float64, 1), _x((2, 4, 3), np.float64, 2)
    largest = []
    for which in (0, 1):
        base = [init, xs]
        flat = base[which].reshape(-1)
        worst = 0.0
        for e in range(flat.size):
            step = np.zeros_like(flat)
            step[e] = h
            plus, minus = list(base), list(base)
            plus[which] = (flat + step).reshape(base[which].shape)
            minus[which] = (flat - step).reshape(base[which].shape)
            yp, ym = _scan8(body_op, *plus), _scan8(body_op, *minus)
            worst = max(worst, *(float(np.abs((a - b) / (2 * h)).max()) for a, b in zip(yp, ym)))
        largest.append(worst)
    return largest[0], largest[1]


def test_scan8_kernel_has_a_batch_axis_and_is_body_dependent():
    """Scan-8 in onnxruntime at opset 8: batch axis 0, scan axis 1; with the smooth body
    every output moves with init and xs (the final state by 1, the scan output by 2: the
    formula), with a Floor after the Add nothing moves."""
    init, xs = _x((2, 3), np.float64, 1), _x((2, 4, 3), np.float64, 2)
    final, outs = _scan8(None, init, xs)
    totals = init[:, None, :] + np.cumsum(xs, axis=1)
    np.testing.assert_allclose(final, totals[:, -1], atol=1e-12)
    np.testing.assert_allclose(outs, 2 * totals, atol=1e-12)
    d_init, d_xs = _scan8_jacobian(None)
    assert d_init == pytest.approx(2.0, rel=1e-6) and d_xs == pytest.approx(2.0, rel=1e-6)
    assert _scan8_jacobian("Floor") == (0.0, 0.0)


def test_scan8_is_decided_by_its_batch_case(proof_of):
    """The case proves Scan-8 itself (opset 8), its module is the kernel's function, and its
    parameters are decided: sequence_lens by its int64 type, the variadic state and scan
    inputs and outputs as Scan-9+'s, under the 'body-dependent' convention (the tag unknown
    in onnx.defs, as the Floor body shows it must be)."""
    schema = onnx.defs.get_schema("Scan", 8)
    assert [p.name for p in schema.inputs] == ["sequence_lens", "initial_state_and_scan_inputs"]
    assert set(schema.inputs[0].types) == {"tensor(int64)"}
    assert schema.inputs[1].differentiation_category == CAT.Unknown
    init, xs = _x((2, 3), np.float64, 1), _x((2, 4, 3), np.float64, 2)
    got = _case("scan8_batch_running_sum").model(torch.from_numpy(init), torch.from_numpy(xs))
    for mine, kernel in zip(got, _scan8(None, init, xs)):
        np.testing.assert_allclose(mine.numpy(), kernel, atol=1e-12)
    proof = proof_of("scan8_batch_running_sum")
    assert (proof.opset, proof.schema_version) == (8, 8)
    seq = param(proof, "input", 0)
    assert (seq.verdict, seq.supports, seq.by_type) == (Verdict.PROPOSED, Tag.NONDIFF, True)
    for io, index in (("input", 1), ("input", 2), ("output", 0), ("output", 1)):
        p = param(proof, io, index)
        assert p.name == ("initial_state_and_scan_inputs" if io == "input"
                          else "final_state_and_scan_outputs")
        assert (p.verdict, p.supports) == (Verdict.AGREE, Tag.UNKNOWN), (io, index)
        assert p.convention == Convention.BODY_DEPENDENT
        assert p.evidence.value == "grad"
