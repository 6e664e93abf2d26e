"""Which runtime computes which schema version (engine/versions/runtimes.py): every data entry backed
by a node run in that runtime at each version's opset, against that version's definition
computed here from the schema's text (numpy), or against onnxruntime's kernel of that
version (float32: its kernel registered for the version in force at the opset).

Where an op's versions compute differently, the node tells them apart: Hardmax-11 with
axis=0 coerces a [2, 2, 3] input to [1, 12] (one hot over all twelve), Hardmax-13 takes it
per position along axis 0; Resize-10's linear mode samples at x / scale ("asymmetric": the
only transformation it has), Resize-11's default at (x + 0.5) / scale - 0.5
("half_pixel"); Sum-6 requires one shape, Sum-8 broadcasts.
"""
from __future__ import annotations

import math

import numpy as np
import onnx
import onnx.defs
import onnx.helper as oh
import onnx.numpy_helper as nh
import onnxruntime as ort
import pytest
from onnx import TensorProto
from onnx.reference import ReferenceEvaluator

from torch_prover.engine.versions import runtimes
from torch_prover.engine.numeric.numeric import choose_runtime

F32 = TensorProto.FLOAT
ORT_FAIL = ort.capi.onnxruntime_pybind11_state.Fail


def _model(op, opset, inputs, attrs=None, inits=(), n_out=1):
    """One ``op`` node at ``opset``: graph inputs ``inputs`` (name -> array), then the
    initializers ``inits`` (name -> array), in node input order; '' for an absent one."""
    names = [n for n in list(inputs) + [n for n, _ in inits]]
    node = oh.make_node(op, names, [f"y{j}" for j in range(n_out)], **(attrs or {}))
    graph = oh.make_graph(
        [node], "g", [oh.make_tensor_value_info(n, F32, a.shape) for n, a in inputs.items()],
        [oh.make_tensor_value_info(f"y{j}", F32, None) for j in range(n_out)],
        initializer=[nh.from_array(a, n) for n, a in inits if n])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)])
    model.ir_version = 8 if opset >= 7 else 3
    return model


def _reference(model, feeds):
    return ReferenceEvaluator(model).run(None, feeds)[0]


def _onnxruntime(model, feeds):
    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    return ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]


X3 = np.array([[[1, 5, 2], [3, 2, 0]], [[4, 0, 7], [6, 1, 1]]], np.float32)


def _coerced(x, axis, f):
    """``f`` over the input coerced to 2-D at ``axis`` (versions 1 and 11)."""
    rows = int(np.prod(x.shape[:axis], dtype=int))
    return f(x.reshape(rows, -1), 1).reshape(x.shape)


def _hardmax(x, axis):
    out = np.zeros_like(x)
    idx = np.expand_dims(np.argmax(x, axis=axis), axis)
    np.put_along_axis(out, idx, 1.0, axis=axis)
    return out


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax(x, axis):
    return np.log(_softmax(x, axis))


COERCING = {"Hardmax": _hardmax, "Softmax": _softmax, "LogSoftmax": _log_softmax}


@pytest.mark.parametrize("op", sorted(COERCING))
def test_onnx_reference_computes_the_newest_softmax_family_whatever_the_opset(op):
    f = COERCING[op]
    old, new = _coerced(X3, 0, f), f(X3, 0)
    assert not np.allclose(old, new)          # the node tells the versions apart
    for opset, want in ((11, old), (13, new)):
        model = _model(op, opset, {"x": X3}, {"axis": 0})
        np.testing.assert_allclose(_onnxruntime(model, {"x": X3}), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(_reference(model, {"x": X3}), new, rtol=1e-5, atol=1e-6)
    assert runtimes.REFERENCE_FOLLOWS[op].versions == (13,)
    assert not runtimes.reference_follows(op, 11) and not runtimes.reference_follows(op, 1)


def _resize_linear(x, scale, half_pixel):
    """1-D linear resize along the last axis, the schema's formula: x_original =
    (x_resized + 0.5) / scale - 0.5 (half_pixel, clamped at 0) or x_resized / scale."""
    n = x.shape[-1]
    out = []
    for i in range(int(n * scale)):
        pos = (i + 0.5) / scale - 0.5 if half_pixel else i / scale
        pos = min(max(pos, 0.0), n - 1)
        lo = int(math.floor(pos))
        hi = min(lo + 1, n - 1)
        out.append(x[..., lo] * (1 - (pos - lo)) + x[..., hi] * (pos - lo))
    return np.stack(out, axis=-1)


XR = np.array([[[[0, 1, 2], [3, 4, 5]]]], np.float32)
SCALES = np.array([1, 1, 1, 2], np.float32)


def _resize(opset):
    if opset == 10:
        return _model("Resize", opset, {"x": XR}, {"mode": "linear"}, [("scales", SCALES)])
    return _model("Resize", opset, {"x": XR}, {"mode": "linear"},
                  [("roi", np.array([], np.float32)), ("scales", SCALES)])


def test_resize_10_and_11_compute_differently_and_each_runtime_says_which_it_ran():
    asymmetric, half = _resize_linear(XR, 2, False), _resize_linear(XR, 2, True)
    assert not np.allclose(asymmetric, half)
    np.testing.assert_allclose(_onnxruntime(_resize(10), {"x": XR}), asymmetric, atol=1e-6)
    np.testing.assert_allclose(_onnxruntime(_resize(11), {"x": XR}), half, atol=1e-6)
    for opset in runtimes.REFERENCE_FOLLOWS["Resize"].versions:   # 11, 13, 18, 19
        np.testing.assert_allclose(_reference(_resize(opset), {"x": XR}), half, atol=1e-6)
    with pytest.raises(ValueError):   # onnx.reference cannot even run a Resize-10 node
        _reference(_resize(10), {"x": XR})
    assert not runtimes.reference_follows("Resize", 10)


def test_gridsample_16_modes_are_not_onnx_references():
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    grid = np.zeros((1, 2, 3, 2), np.float32)
    # grid 0 is the image's centre (align_corners=0): column 1, between rows 0 and 1
    want = np.full((1, 1, 2, 3), (x[0, 0, 0, 1] + x[0, 0, 1, 1]) / 2, np.float32)
    np.testing.assert_allclose(_onnxruntime(_model("GridSample", 16, {"x": x, "g": grid},
                                                   {"mode": "bilinear"}), {"x": x, "g": grid}),
                               want, atol=1e-6)
    # GridSample-20 renamed bilinear to linear: onnx.reference knows only the new name
    with pytest.raises(RuntimeError, match="linear"):
        _reference(_model("GridSample", 16, {"x": x, "g": grid}, {"mode": "bilinear"}),
                   {"x": x, "g": grid})
    for opset in runtimes.REFERENCE_FOLLOWS["GridSample"].versions:
        got = _reference(_model("GridSample", opset, {"x": x, "g": grid}, {"mode": "linear"}),
                         {"x": x, "g": grid})
        np.testing.assert_allclose(got, want, atol=1e-6)
    assert not runtimes.reference_follows("GridSample", 16)


def test_clip_6_takes_its_bounds_as_attributes_and_onnx_reference_follows_it():
    x = np.array([[-2, -0.5, 0.3, 1.5]], np.float32)
    want = np.clip(x, -1, 1)
    for opset in (6, 10):   # Clip-6: min and max are attributes
        got = _reference(_model("Clip", opset, {"x": x}, {"min": -1.0, "max": 1.0}), {"x": x})
        np.testing.assert_allclose(got, want)
    for opset in (11, 12, 13):   # Clip-11 on: inputs (an attribute would be refused)
        got = _reference(_model("Clip", opset, {"x": x}, None,
                                [("lo", np.array(-1, np.float32)),
                                 ("hi", np.array(1, np.float32))]), {"x": x})
        np.testing.assert_allclose(got, want)
    assert runtimes.REFERENCE_FOLLOWS["Clip"].versions == (6, 11, 12, 13)


VARIADIC = {"Sum": np.add, "Max": np.maximum, "Min": np.minimum, "Mean": None}


@pytest.mark.parametrize("op", sorted(VARIADIC))
def test_version_6_of_the_variadic_ops_refuses_broadcasting_which_onnx_reference_does(op):
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.array([2, -1, 4], np.float32)
    f = VARIADIC[op] or (lambda p, q: (p + q) / 2)
    at7 = _model(op, 7, {"a": a, "b": b})   # version 6 is in force at opset 7
    with pytest.raises(ORT_FAIL, match="same shape"):   # onnxruntime's v6 kernel
        _onnxruntime(at7, {"a": a, "b": b})
    np.testing.assert_allclose(_reference(at7, {"a": a, "b": b}), f(a, b))   # broadcast
    # on a node version 6 accepts (one shape) every version computes the same
    c = a[::-1].copy()
    for version in runtimes.REFERENCE_FOLLOWS[op].versions:
        got = _reference(_model(op, max(version, 7), {"a": a, "c": c}), {"a": a, "c": c})
        np.testing.assert_allclose(got, f(a, c))
    from torch_prover.engine.versions.fidelity import SAME_SHAPE
    assert (op, 6) in SAME_SHAPE   # so a broadcast node never reaches a runtime as v6


def test_rnn_14_layout_is_onnx_references_as_it_is_onnxruntimes():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 1, 3)).astype(np.float32)       # [seq, batch, input]
    w = rng.standard_normal((1, 4, 3)).astype(np.float32)
    r = rng.standard_normal((1, 4, 4)).astype(np.float32)
    for opset in (7, 14, 22):
        m = _model("RNN", opset, {"x": x}, {"hidden_size": 4}, [("w", w), ("r", r)])
        np.testing.assert_allclose(_reference(m, {"x": x}), _onnxruntime(m, {"x": x}),
                                   rtol=1e-5, atol=1e-6)
    # RNN-14's layout=1 is the same recurrence on batch-first tensors (onnxruntime has no
    # kernel for it): [batch, seq, input] in, [batch, seq, directions, hidden] out
    seq_first = _onnxruntime(_model("RNN", 14, {"x": x}, {"hidden_size": 4},
                                    [("w", w), ("r", r)]), {"x": x})   # [seq, dir, batch, h]
    x2 = np.concatenate([x, -x], axis=1)                          # two sequences
    xb = np.swapaxes(x2, 0, 1).copy()
    m = _model("RNN", 14, {"x": xb}, {"hidden_size": 4, "layout": 1}, [("w", w), ("r", r)])
    got = _reference(m, {"x": xb})
    assert got.shape == (2, 2, 1, 4)
    np.testing.assert_allclose(got[0], seq_first[:, :, 0, :], rtol=1e-5, atol=1e-6)


UNARY = {
    "Softplus": ({}, lambda x: np.log1p(np.exp(x))),
    "Softsign": ({}, lambda x: x / (1 + np.abs(x))),
    "Elu": ({"alpha": 0.7}, lambda x: np.where(x > 0, x, 0.7 * (np.exp(x) - 1))),
    "Selu": ({}, lambda x: 1.0507009873554805 * np.where(
        x > 0, x, 1.6732632423543772 * (np.exp(x) - 1))),
    "LeakyRelu": ({"alpha": 0.2}, lambda x: np.where(x > 0, x, 0.2 * x)),
    "HardSwish": ({}, lambda x: x * np.clip(x / 6 + 0.5, 0, 1)),
    "Mish": ({}, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    "HardSigmoid": ({"alpha": 0.3, "beta": 0.4}, lambda x: np.clip(0.3 * x + 0.4, 0, 1)),
    "ThresholdedRelu": ({"alpha": 0.5}, lambda x: np.where(x > 0.5, x, 0)),
    "Acos": ({}, np.arccos), "Asin": ({}, np.arcsin), "Atan": ({}, np.arctan),
    "Tan": ({}, np.tan), "Asinh": ({}, np.arcsinh), "Atanh": ({}, np.arctanh),
    "Cosh": ({}, np.cosh), "Sinh": ({}, np.sinh),
    "Acosh": ({}, np.arccosh),
    "GlobalAveragePool": ({}, lambda x: x.mean(axis=(2, 3), keepdims=True)),
    "GlobalMaxPool": ({}, lambda x: x.max(axis=(2, 3), keepdims=True)),
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_versions_that_differ_in_types_only_compute_the_schemas_function(op):
    """Each listed version, run in onnx.reference at its own opset, computes the function
    the schema defines (numpy here), as onnxruntime's kernel of that version does."""
    attrs, f = UNARY[op]
    rng = np.random.default_rng(1)
    x = rng.uniform(-0.9, 0.9, (1, 2, 3, 3)).astype(np.float32)
    if op == "HardSwish":   # both kinks (at -3 and 3) inside the sample
        x = x * 5
    if op == "Acosh":
        x = x + 2.0
    for version in runtimes.REFERENCE_FOLLOWS[op].versions:
        m = _model(op, max(version, 7), {"x": x}, attrs)
        np.testing.assert_allclose(_reference(m, {"x": x}), f(x), rtol=1e-5, atol=1e-6)
        if version < 22:   # onnxruntime's float32 kernel of the same version agrees
            np.testing.assert_allclose(_onnxruntime(m, {"x": x}), f(x), rtol=1e-5, atol=1e-6)


def test_upsample_9_nearest():
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    m = _model("Upsample", 9, {"x": x}, {"mode": "nearest"},
               [("s", np.array([1, 1, 2, 2], np.float32))])
    np.testing.assert_allclose(_reference(m, {"x": x}), x.repeat(2, axis=2).repeat(2, axis=3))


def test_every_entry_is_backed_by_a_test_here():
    tested = set(COERCING) | set(VARIADIC) | set(UNARY) | {
        "Resize", "GridSample", "Clip", "RNN", "Upsample"}
    assert set(runtimes.REFERENCE_FOLLOWS) == tested
    for entry in runtimes.REFERENCE_FOLLOWS.values():
        known = {s.since_version for s in onnx.defs.get_all_schemas_with_history()
                 if s.name == entry.op and s.domain == ""}
        assert set(entry.versions) <= known, entry


def test_an_op_without_an_entry_counts_for_its_newest_version_only():
    assert runtimes.reference_follows("Relu", 14)
    assert not runtimes.reference_follows("Relu", 6)
    assert "Relu-14" in runtimes.why_not_reference("Relu", 6)


def test_choose_runtime_never_takes_onnx_reference_for_a_version_it_does_not_follow():
    """Hardmax-11 with axis=0 in float64: onnxruntime has no float64 kernel, and
    onnx.reference would compute Hardmax-13 -- so onnxruntime's Hardmax-11 runs on a float32
    copy (engine/versions/float32_copy.py), with both reasons: one hardmax over all 12 elements of the
    input coerced to [1, 12], where Hardmax-13 (onnx.reference at opset 13) takes one per
    column."""
    x = X3.astype(np.float64)
    node = oh.make_node("Hardmax", ["x"], ["y"], axis=0)
    graph = oh.make_graph([node], "g", [oh.make_tensor_value_info("x", TensorProto.DOUBLE,
                                                                  x.shape)],
                          [oh.make_tensor_value_info("y", TensorProto.DOUBLE, None)])
    whys, ones = {}, {}
    for opset, kind, copy in ((11, "onnxruntime", True), (13, "reference", False)):
        model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)])
        model.ir_version = 8
        runner, got, whys[opset] = choose_runtime(model, {"x": x})
        assert (runner.kind, runner.copy is not None) == (kind, copy), whys[opset]
        ones[opset] = int(got[0].sum())
    assert ones == {11: 1, 13: x[0].size}
    assert "onnx.reference computes Hardmax-13, not Hardmax-11" in whys[11]
    assert whys[11].startswith("onnxruntime: ")


def test_below_opset_7_no_runtime_implements_any_version():
    """What prove --opset and verify-all --versions assume (no route below opset 7, only
    equivalence): onnxruntime guarantees opsets 7 and above, and no version in force only
    below opset 7 is one onnx.reference follows. `run` applies the same rule."""
    from torch_prover.batch.versions import Band, all_schema_versions
    below = [v for v in all_schema_versions() if v.band is Band.BELOW_RUNTIME]
    assert below
    assert not [v.label() for v in below if runtimes.reference_follows(v.op, v.version)]
    model = _model("Relu", 6, {"x": np.ones((2,), np.float32)})
    assert "opsets 7 and above only (the model is opset 6)" in runtimes.unfaithful(
        runtimes.ONNXRUNTIME, model, None)
    assert runtimes.unfaithful(runtimes.REFERENCE, model, None)
