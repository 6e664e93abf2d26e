"""The float32 copy (engine/versions/float32_copy.py): every kind of float64 carrier made float32, the
copy run in onnxruntime, and the witnesses that run on it.

Expectations from the math and the spec, not from the code under test: each small model
below computes a function written out in numpy (float64), and the copy must compute it
within float32 rounding; that nothing float64 is left is read by a walker written here;
Conv is linear in X, W and B (smooth in each); onnxruntime has no float64 Conv kernel at
opset 11 (its NOT_IMPLEMENTED refusal), while onnx.reference implements Conv at its newest
version only (engine/versions/runtimes.py).
"""
from __future__ import annotations

import numpy as np
import onnx
import onnx.defs
import onnx.helper as oh
import onnx.numpy_helper as nh
import pytest
from onnx import AttributeProto, TensorProto

from torch_prover.engine.numeric import node_witness, numeric
from torch_prover.engine.versions.float32_copy import (ELEMENT_TYPE, NOT_COPIED, CopyError, KernelGap,
                                              float32_copy, float64_gap)
from torch_prover.vocab import NumericOutcome

D, F = TensorProto.DOUBLE, TensorProto.FLOAT
RNG = np.random.default_rng(7)
X = RNG.standard_normal((2, 3))


def _model(nodes, inputs, outputs, opset=18, **kw) -> onnx.ModelProto:
    graph = oh.make_graph(nodes, "g", inputs, outputs, **kw)
    m = oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)], ir_version=8)
    onnx.checker.check_model(m)
    return m


def _io(name, elem=D, shape=(2, 3)):
    return oh.make_tensor_value_info(name, elem, shape)


def _doubles(m) -> list[str]:
    """Every float64 left anywhere in a model (a walker of its own, not the copier's)."""
    found = []

    def tp(t, where):
        which = t.WhichOneof("value")
        if which == "tensor_type" and t.tensor_type.elem_type == D:
            found.append(where)
        elif which == "sequence_type":
            tp(t.sequence_type.elem_type, where)
        elif which == "optional_type":
            tp(t.optional_type.elem_type, where)

    def graph(g, where):
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            tp(vi.type, f"{where}/{vi.name}")
        found.extend(f"{where}/{t.name}" for t in g.initializer if t.data_type == D)
        found.extend(f"{where}/{s.values.name}" for s in g.sparse_initializer
                     if s.values.data_type == D)
        nodes(g.node, where)

    def nodes(ns, where):
        for n in ns:
            for a in n.attribute:
                here = f"{where}/{n.op_type}.{a.name}"
                if a.type == AttributeProto.TENSOR and a.t.data_type == D:
                    found.append(here)
                if a.type == AttributeProto.SPARSE_TENSOR and a.sparse_tensor.values.data_type == D:
                    found.append(here)
                if a.type == AttributeProto.INT and a.name in ("to", "dtype", "stash_type",
                                                               "output_datatype") and a.i == D:
                    found.append(here)
                if a.type == AttributeProto.TYPE_PROTO:
                    tp(a.tp, here)
                if a.type == AttributeProto.GRAPH:
                    graph(a.g, here)
    graph(m.graph, "")
    for f in m.functions:
        nodes(f.node, f.name)
    return found


def _run_copy(m, feeds):
    import onnxruntime as ort
    c = float32_copy(m)
    assert not _doubles(c), _doubles(c)
    assert _doubles(m), "the model under test carries no float64"
    sess = ort.InferenceSession(c.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {k: (v.astype(np.float32) if v.dtype == np.float64 else v)
                           for k, v in feeds.items()})


def _close(got, want):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-5, atol=1e-6)


W = RNG.standard_normal((2, 3))


def _inputs_outputs_value_info():
    nodes = [oh.make_node("Mul", ["x", "x"], ["t"]), oh.make_node("Add", ["t", "x"], ["y"])]
    return _model(nodes, [_io("x")], [_io("y")], value_info=[_io("t")]), X * X + X


def _initializer():
    return _model([oh.make_node("Add", ["x", "w"], ["y"])], [_io("x")], [_io("y")],
                  initializer=[nh.from_array(W, "w")]), X + W


def _sparse_initializer():
    sparse = oh.make_sparse_tensor(nh.from_array(np.array([2.5, -1.25]), "w"),
                                   nh.from_array(np.array([1, 4], dtype=np.int64), "i"), [2, 3])
    dense = np.zeros(6)
    dense[[1, 4]] = [2.5, -1.25]
    return _model([oh.make_node("Add", ["x", "w"], ["y"])], [_io("x")], [_io("y")],
                  sparse_initializer=[sparse]), X + dense.reshape(2, 3)


def _constant():
    nodes = [oh.make_node("Constant", [], ["c"], value=nh.from_array(W, "c")),
             oh.make_node("Mul", ["x", "c"], ["y"])]
    return _model(nodes, [_io("x")], [_io("y")]), X * W


def _constant_of_shape():
    nodes = [oh.make_node("Shape", ["x"], ["s"]),
             oh.make_node("ConstantOfShape", ["s"], ["c"],
                          value=nh.from_array(np.array([2.5]), "v")),
             oh.make_node("Add", ["x", "c"], ["y"])]
    return _model(nodes, [_io("x")], [_io("y")]), X + 2.5


def _cast_to():
    nodes = [oh.make_node("Cast", ["k"], ["c"], to=D), oh.make_node("Mul", ["x", "c"], ["y"])]
    k = np.arange(6, dtype=np.int64).reshape(2, 3)
    return _model(nodes, [_io("x"), _io("k", TensorProto.INT64)], [_io("y")]), X * k, {"k": k}


def _eye_like():
    nodes = [oh.make_node("EyeLike", ["k"], ["e"], dtype=D, k=1),
             oh.make_node("Add", ["x", "e"], ["y"])]
    k = np.zeros((2, 3), dtype=np.int64)
    return (_model(nodes, [_io("x"), _io("k", TensorProto.INT64)], [_io("y")]),
            X + np.eye(2, 3, k=1), {"k": k})


def _random_normal():
    # scale 1e-20: every draw rounds to the mean in float32, so the function is known (a
    # scale of 0 aborts onnxruntime's normal distribution)
    nodes = [oh.make_node("RandomNormal", [], ["r"], dtype=D, shape=[2, 3], mean=3.0,
                          scale=1e-20),
             oh.make_node("RandomNormalLike", ["x"], ["q"], dtype=D, mean=-1.0, scale=1e-20),
             oh.make_node("Add", ["r", "q"], ["s"]), oh.make_node("Add", ["x", "s"], ["y"])]
    return _model(nodes, [_io("x")], [_io("y")]), X + 2.0


def _random_uniform():
    nodes = [oh.make_node("RandomUniform", [], ["r"], dtype=D, shape=[2, 3], low=0.5,
                          high=0.5),
             oh.make_node("RandomUniformLike", ["x"], ["q"], dtype=D, low=2.0, high=2.0),
             oh.make_node("Mul", ["r", "q"], ["s"]), oh.make_node("Mul", ["x", "s"], ["y"])]
    return _model(nodes, [_io("x")], [_io("y")]), X * 1.0


def _bernoulli():
    # probabilities 0 and 1: one draw only. onnxruntime 1.31.1 draws 1 with probability
    # 1 - p (a mean of 0.1 over 10,000 draws at p = 0.9; onnx.reference: 0.9), so the
    # float64 model's function is what onnxruntime's float64 kernel computes (None)
    p = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    nodes = [oh.make_node("Bernoulli", ["p"], ["b"], dtype=D),
             oh.make_node("Mul", ["x", "b"], ["y"])]
    return _model(nodes, [_io("x"), _io("p")], [_io("y")]), None, {"p": p}


def _multinomial():
    # log-probabilities 0 and -100: class 0 every time (probability 1 - e^-100)
    logits = np.array([[0.0, -100.0], [0.0, -100.0]])
    nodes = [oh.make_node("Multinomial", ["l"], ["c"], dtype=TensorProto.INT64, sample_size=3),
             oh.make_node("Cast", ["c"], ["d"], to=D), oh.make_node("Add", ["x", "d"], ["y"])]
    return (_model(nodes, [_io("x", shape=(2, 3)), _io("l", shape=(2, 2))], [_io("y")]),
            X + 0.0, {"l": logits})


def _stash_type():
    scale = RNG.standard_normal(3)
    nodes = [oh.make_node("LayerNormalization", ["x", "s"], ["y"], axis=-1, epsilon=1e-5,
                          stash_type=D)]
    mean = X.mean(-1, keepdims=True)
    want = (X - mean) / np.sqrt(((X - mean) ** 2).mean(-1, keepdims=True) + 1e-5) * scale
    return (_model(nodes, [_io("x")], [_io("y")], opset=17,
                   initializer=[nh.from_array(scale, "s")]), want)


def _window():
    nodes = [oh.make_node("HannWindow", ["n"], ["w"], output_datatype=D, periodic=0),
             oh.make_node("Add", ["x", "w"], ["y"])]
    n = np.array(3, dtype=np.int64)
    hann = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(3) / 2)
    return (_model(nodes, [_io("x"), oh.make_tensor_value_info("n", TensorProto.INT64, [])],
                   [_io("y")], opset=17, initializer=[nh.from_array(n, "n")]), X + hann)


def _sequence_empty():
    nodes = [oh.make_node("SequenceEmpty", [], ["e"], dtype=D),
             oh.make_node("SequenceInsert", ["e", "x"], ["s"]),
             oh.make_node("SequenceAt", ["s", "i"], ["y"])]
    return (_model(nodes, [_io("x")], [_io("y")],
                   initializer=[nh.from_array(np.array(0, dtype=np.int64), "i")]), X)


def _optional_type():
    elem = oh.make_tensor_type_proto(D, [2, 3])
    nodes = [oh.make_node("Optional", [], ["o"], type=elem),
             oh.make_node("OptionalHasElement", ["o"], ["h"]),
             oh.make_node("Cast", ["h"], ["d"], to=D), oh.make_node("Add", ["x", "d"], ["y"])]
    return _model(nodes, [_io("x")], [_io("y")]), X + 0.0


def _if_subgraph():
    then = oh.make_graph([oh.make_node("Constant", [], ["a"], value=nh.from_array(W, "a")),
                          oh.make_node("Mul", ["x", "a"], ["t"])], "then", [], [_io("t")])
    other = oh.make_graph([oh.make_node("Neg", ["x"], ["e"])], "else", [], [_io("e")])
    nodes = [oh.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)]
    cond = oh.make_tensor_value_info("c", TensorProto.BOOL, [])
    return _model(nodes, [cond, _io("x")], [_io("y")]), X * W, {"c": np.array(True)}


def _loop_subgraph():
    # three iterations of s <- s * 0.5 + x, from s = 0
    body = oh.make_graph(
        [oh.make_node("Constant", [], ["h"], value=nh.from_array(np.array(0.5), "h")),
         oh.make_node("Mul", ["s_in", "h"], ["m"]), oh.make_node("Add", ["m", "x"], ["s_out"]),
         oh.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [oh.make_tensor_value_info("i", TensorProto.INT64, []),
                 oh.make_tensor_value_info("cond_in", TensorProto.BOOL, []), _io("s_in")],
        [oh.make_tensor_value_info("cond_out", TensorProto.BOOL, []), _io("s_out")])
    nodes = [oh.make_node("Loop", ["n", "", "s0"], ["y"], body=body)]
    s = np.zeros((2, 3))
    for _ in range(3):
        s = s * 0.5 + X
    return (_model(nodes, [_io("x")], [_io("y")],
                   initializer=[nh.from_array(np.array(3, dtype=np.int64), "n"),
                                nh.from_array(np.zeros((2, 3)), "s0")]), s)


def _scan_subgraph():
    # a running sum over the rows of x
    body = oh.make_graph([oh.make_node("Add", ["acc", "row"], ["nxt"]),
                          oh.make_node("Identity", ["nxt"], ["out"])], "body",
                         [_io("acc", shape=(3,)), _io("row", shape=(3,))],
                         [_io("nxt", shape=(3,)), _io("out", shape=(3,))])
    nodes = [oh.make_node("Scan", ["a0", "x"], ["last", "y"], body=body, num_scan_inputs=1)]
    return (_model(nodes, [_io("x")], [_io("last", shape=(3,)), _io("y")],
                   initializer=[nh.from_array(np.zeros(3), "a0")]), np.cumsum(X, axis=0))


def _function_body():
    f = oh.make_function("local", "Twice", ["a"], ["b"],
                         [oh.make_node("Constant", [], ["k"],
                                       value=nh.from_array(np.array(2.0), "k")),
                          oh.make_node("Mul", ["a", "k"], ["b"])],
                         [oh.make_opsetid("", 18)])
    graph = oh.make_graph([oh.make_node("Twice", ["x"], ["y"], domain="local")], "g",
                          [_io("x")], [_io("y")])
    m = oh.make_model(graph, functions=[f], ir_version=8,
                      opset_imports=[oh.make_opsetid("", 18), oh.make_opsetid("local", 1)])
    onnx.checker.check_model(m)
    return m, 2 * X


CARRIERS = {
    "graph inputs, outputs and value_info": _inputs_outputs_value_info,
    "an initializer": _initializer,
    "a sparse initializer": _sparse_initializer,
    "a Constant node's tensor": _constant,
    "ConstantOfShape's value": _constant_of_shape,
    "Cast's to": _cast_to,
    "EyeLike's dtype": _eye_like,
    "RandomNormal(Like)'s dtype": _random_normal,
    "RandomUniform(Like)'s dtype": _random_uniform,
    "Bernoulli's dtype": _bernoulli,
    "Multinomial's float64 input": _multinomial,
    "LayerNormalization's stash_type": _stash_type,
    "HannWindow's output_datatype": _window,
    "SequenceEmpty's dtype (a sequence type)": _sequence_empty,
    "Optional's type attribute": _optional_type,
    "an If branch": _if_subgraph,
    "a Loop body": _loop_subgraph,
    "a Scan body": _scan_subgraph,
    "a function body": _function_body,
}


@pytest.mark.parametrize("carrier", list(CARRIERS))
def test_the_copy_computes_the_float64_models_function_in_float32(carrier):
    built = CARRIERS[carrier]()
    m, want = built[0], built[1]
    feeds = {"x": X, **(built[2] if len(built) > 2 else {})}
    if want is None:    # the float64 model run in onnxruntime, which has its kernel
        import onnxruntime as ort
        want = ort.InferenceSession(m.SerializeToString(), providers=[
            "CPUExecutionProvider"]).run(None, feeds)[-1]
    got = _run_copy(m, feeds)
    _close(got[-1], want)
    assert np.asarray(got[-1]).dtype == np.float32


def test_the_copy_is_deterministic_and_leaves_the_model_alone():
    m, _ = _loop_subgraph()
    before = m.SerializeToString(deterministic=True)
    a, b = float32_copy(m), float32_copy(m)
    assert a.SerializeToString(deterministic=True) == b.SerializeToString(deterministic=True)
    assert m.SerializeToString(deterministic=True) == before


def test_a_bitcast_has_no_float32_copy():
    node = oh.make_node("BitCast", ["k"], ["y"], to=D)
    m = oh.make_model(oh.make_graph([node], "g", [_io("k", TensorProto.INT64)], [_io("y")]),
                      opset_imports=[oh.make_opsetid("", 26)])
    with pytest.raises(CopyError, match="BitCast"):
        float32_copy(m)


NOT_A_TYPE = {("Attention", "qk_matmul_output_mode"): "a mode, 0 to 3, whose text names the "
                                                        "softmax's precision"}


def test_every_element_type_attribute_of_the_schemas_is_copied():
    """An ai.onnx INT attribute whose schema text says it holds a data type or a precision
    (``TensorProto`` / "data type" / "precision") must be one the copy converts, or an op it
    refuses."""
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain not in ("", "ai.onnx"):
            continue
        for name, a in s.attributes.items():
            text = a.description.lower()
            if a.type != AttributeProto.INT or (s.name, name) in NOT_A_TYPE or not any(
                    w in text for w in ("data type", "datatype", "tensorproto", "precision")):
                continue
            assert name in ELEMENT_TYPE.get(s.name, ()) or s.name in NOT_COPIED, \
                (s.name, s.since_version, name)


# ----------------------------------------------------------------------------- detection
def _conv(opset: int, elem=D) -> onnx.ModelProto:
    node = oh.make_node("Conv", ["x", "w", "b"], ["y"], name="conv")
    return _model([node], [_io("x", elem, (1, 2, 5, 5)), _io("w", elem, (3, 2, 3, 3)),
                           _io("b", elem, (3,))], [_io("y", elem, (1, 3, 3, 3))], opset=opset)


CONV_FEEDS = {"x": RNG.standard_normal((1, 2, 5, 5)), "w": RNG.standard_normal((3, 2, 3, 3)),
              "b": RNG.standard_normal(3)}


def _conv_ref(x, w, b):
    out = np.zeros((1, 3, 3, 3))
    for o in range(3):
        for i in range(3):
            for j in range(3):
                out[0, o, i, j] = (x[0, :, i:i + 3, j:j + 3] * w[o]).sum() + b[o]
    return out


def _refusal(m, feeds):
    import onnxruntime as ort
    try:
        ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
            None, feeds)
    except Exception as exc:
        return exc
    raise AssertionError("onnxruntime ran it")


def test_onnxruntimes_missing_float64_kernel_is_a_typed_gap():
    gap = float64_gap(_refusal(_conv(11), CONV_FEEDS), _conv(11))
    assert gap == KernelGap("Conv", 11)
    assert gap.words() == "onnxruntime has no float64 kernel for Conv-11"
    # not onnxruntime's refusal, or a model with no float64 to copy: no gap
    assert float64_gap(ValueError("Could not find an implementation for Conv(11) node"),
                       _conv(11)) is None
    f32 = {k: v.astype(np.float32) for k, v in CONV_FEEDS.items()}
    bad = {**f32, "w": f32["w"][:, :1]}        # a wrong shape: refused, but not for a kernel
    assert float64_gap(_refusal(_conv(11, F), bad), _conv(11, F)) is None


def test_a_gru_that_refuses_double_when_run_is_a_gap():
    """onnxruntime's GRU registers a kernel for double and refuses it when run."""
    node = oh.make_node("GRU", ["x", "w", "r"], ["y"], hidden_size=2)
    m = _model([node], [_io("x", shape=(2, 1, 3)), _io("w", shape=(1, 6, 3)),
                        _io("r", shape=(1, 6, 2))], [_io("y", shape=(2, 1, 1, 2))], opset=14)
    feeds = {"x": RNG.standard_normal((2, 1, 3)), "w": RNG.standard_normal((1, 6, 3)),
             "r": RNG.standard_normal((1, 6, 2))}
    assert float64_gap(_refusal(m, feeds), m) == KernelGap("GRU", 14)
    runner, got, why = numeric.choose_runtime(m, feeds)
    assert runner is not None and runner.copy == KernelGap("GRU", 14)


def test_the_order_is_onnxruntime_then_a_faithful_reference_then_the_copy():
    # Conv-11: onnxruntime lacks float64, onnx.reference computes Conv-22 -> the copy
    runner, got, why = numeric.choose_runtime(_conv(11), CONV_FEEDS)
    assert (runner.kind, runner.copy) == ("onnxruntime", KernelGap("Conv", 11))
    assert got[0].dtype == np.float64            # handed back as the float64 model's
    _close(got[0], _conv_ref(**CONV_FEEDS))
    # Conv-22 is onnx.reference's own (newest) version: it runs the float64 model
    runner, got, _ = numeric.choose_runtime(_conv(22), CONV_FEEDS)
    assert (runner.kind, runner.copy) == ("reference", None)
    # a float64 kernel onnxruntime has: the model itself
    m, _ = _initializer()
    runner, _, _ = numeric.choose_runtime(m, {"x": X})
    assert (runner.kind, runner.copy) == ("onnxruntime", None)


def test_a_conv11_node_measures_smooth_in_x_w_and_b_on_the_copy():
    """Conv is linear in X, in W and in B: smooth in each. At opset 11 only onnxruntime's
    Conv-11 kernel runs Conv-11, in float32: the witness says so and takes float32 steps."""
    w = node_witness.witness(_conv(11), 0, CONV_FEEDS)
    assert (w.runtime, w.copy) == ("onnxruntime", KernelGap("Conv", 11))
    assert [i.outcome for i in w.inputs] == [NumericOutcome.SMOOTH] * 3
    for i in w.inputs:
        assert i.step == numeric.STEP["float32"]
        assert "onnxruntime ran a float32 copy of these float64 values (no float64 kernel " \
               "for Conv-11)" in i.detail


def test_the_whole_model_check_is_at_float32s_tolerance_and_says_so():
    y = _conv_ref(**CONV_FEEDS)
    import torch
    res = numeric.check(_conv(11), feeds=CONV_FEEDS, expected_outputs=[torch.from_numpy(y)],
                        dy=[torch.ones(1, 3, 3, 3, dtype=torch.float64)],
                        grads={"b": torch.full((3,), 9.0, dtype=torch.float64)},
                        zero_grads=set(), initializers=set(), float_dtype="float64")
    assert res.forward_ok and res.copy == KernelGap("Conv", 11)
    assert (res.step, res.fwd_tol, res.vjp_tol) == (numeric.STEP["float32"],
                                                    numeric.FWD_TOL["float32"],
                                                    numeric.VJP_TOL["float32"])
    assert res.vjp["b"].ok     # dY/db_o sums over the 9 output pixels of channel o
    assert res.precision.computed == "float32"
    assert res.ran_in == "onnxruntime's float32 copy"


def test_prove_at_opset_11_says_it_ran_a_float32_copy(capsys):
    """docs/versions.md's example: Conv-11 at opset 11, float64, runs only as onnxruntime's
    float32 Conv-11; Conv is linear in X, W and B, so every tag is confirmed."""
    from docs_examples import assert_example

    from torch_prover import cli
    code = cli.main(["prove", "Conv", "--case", "conv2d_bias", "--opset", "11", "--no-write"])
    out = capsys.readouterr().out
    words = " ".join(out.split())
    assert code == 0 and "status: proved" in out
    assert words.count("onnxruntime ran a float32 copy of these float64 values (no float64 "
                       "kernel for Conv-11)") >= 4       # X, W, B and the numeric check
    assert_example("versions-prove-conv-11-float32-copy",
                   "$ torch-prover prove Conv --case conv2d_bias --opset 11 --no-write\n" + out)


# ----------------------------------------------------------------------------- its evidence
@pytest.fixture(scope="module")
def conv11(tmp_path_factory):
    """conv2d_bias@11's evidence directory (a float32-copy record)."""
    from torch_prover import cli
    root = tmp_path_factory.mktemp("f32")
    assert cli.main(["prove", "Conv", "--case", "conv2d_bias", "--opset", "11", "--out",
                     str(root / "models"), "--format", "json"]) == 0
    return root / "models"


def _check(tree):
    from torch_prover.output.check_evidence import check_tree
    (c,) = check_tree(tree)
    return c


def test_check_evidence_reruns_the_copy_and_matches(conv11):
    import json
    rec = json.loads((conv11 / "Conv" / "conv2d_bias@11" / "proof.json").read_text())
    assert rec["test_data"]["copy"] == "float32" and rec["numeric"]["copy"]["op"] == "Conv"
    c = _check(conv11)
    assert (c.status, c.runtime, c.outputs_compared, c.gradients_rechecked) == (
        "match", "onnxruntime", 1, 1)
    assert "a float32 copy of model.onnx ran" in c.detail


@pytest.mark.parametrize("forge", ["output", "gradient"])
def test_check_evidence_on_a_forged_copy_directory_mismatches(conv11, tmp_path, forge):
    """Output 0 moved by 1% of its scale (far beyond float32 rounding, within nothing the
    record allows), or the saved gradient of x moved by 5%: both must be caught."""
    import shutil
    tree = tmp_path / "models"
    shutil.copytree(conv11, tree)
    data = tree / "Conv" / "conv2d_bias@11" / "test_data_set_0"
    name = "output_0.pb" if forge == "output" else "grad_input_0.pb"
    t = TensorProto()
    t.ParseFromString((data / name).read_bytes())
    a = nh.to_array(t)
    a = a + 0.01 * np.abs(a).max() if forge == "output" else a * 1.05
    (data / name).write_bytes(nh.from_array(a, t.name).SerializeToString())
    c = _check(tree)
    assert c.status == "mismatch", c.detail
    assert ("output_0.pb" if forge == "output" else "gradient of x") in c.detail


def test_a_record_whose_copy_does_not_add_up_is_not_trusted(conv11):
    """The cache (and every reader that re-checks a record) re-derives the copy's fields."""
    import copy as _c
    import json

    from torch_prover.cases import all_cases
    from torch_prover.engine.recheck import record_problem
    from torch_prover.tags.schema import schema_tags
    from torch_prover.batch.versions import at_opset
    rec = json.loads((conv11 / "Conv" / "conv2d_bias@11" / "proof.json").read_text())
    case = at_opset(next(c for c in all_cases() if c.name == "conv2d_bias"), 11)
    assert record_problem(rec, case, schema_tags) is None
    forged = []
    for path, value in ((("numeric", "step"), 1e-6), (("numeric", "copy", "version"), 1),
                        (("test_data", "runtime"), "onnx.reference"),
                        (("numeric", "precision", "computed"), "float64")):
        r = _c.deepcopy(rec)
        *head, last = path
        node = r
        for k in head:
            node = node[k]
        node[last] = value
        forged.append(record_problem(r, case, schema_tags))
    r = _c.deepcopy(rec)
    del r["numeric"]["copy"]
    forged.append(record_problem(r, case, schema_tags))
    assert all(forged), forged


def test_node_tests_writes_the_copy_and_onnxs_runner_passes_it(conv11, tmp_path):
    import json

    from torch_prover import cli
    out = tmp_path / "node"
    code = cli.main(["node-tests", str(conv11), "-o", str(out), "--run", "--format", "json"])
    assert code == 0
    doc = json.loads((out / "node-tests.json").read_text())
    (entry,) = doc["directories"]
    assert (entry["status"], entry["kind"], entry["copy"]) == ("written", "onnxruntime",
                                                                "float32")
    test = out / "onnxruntime" / "test_conv2d_bias_opset11"
    model = onnx.load(str(test / "model.onnx"))
    assert [i.type.tensor_type.elem_type for i in model.graph.input] == [F]
    t = TensorProto()
    t.ParseFromString((test / "test_data_set_0" / "input_0.pb").read_bytes())
    assert t.data_type == F
    rec = json.loads((conv11 / "Conv" / "conv2d_bias@11" / "proof.json").read_text())
    y = nh.to_array(_pb(conv11 / "Conv" / "conv2d_bias@11" / "test_data_set_0" / "output_0.pb"))
    assert json.loads((test / "data.json").read_text()) == {
        "atol": rec["test_data"]["fwd_tol"] * max(1.0, float(np.abs(y).max()))}
    from torch_prover.ci.node_tests_run import run_tree
    (ran,) = run_tree(out, ["onnxruntime"])
    assert ran.passed, ran.detail


def _pb(path):
    t = TensorProto()
    t.ParseFromString(path.read_bytes())
    return t


def test_a_float32_run_of_another_function_is_explained_not_written(tmp_path, capsys):
    """maxunpool_output_shape at opset 10 (MaxUnpool-9; the case declares it, fails_at):
    given output_shape, onnxruntime's MaxUnpool reads the indices in the output_shape grid,
    where PyTorch (and ONNX's own backend test) read them in the inferred grid, so its
    float32 copy does not reproduce PyTorch's outputs: node-tests explains the directory
    (the proof failed on it) rather than writing a test that must fail. (hardmax_axis0@10,
    the first example, is now refused before any run: no adapter turns Hardmax-13's axis
    into Hardmax-1's coerced 2-D, engine/versions/adapter_table.py.)"""
    import json

    from torch_prover import cli
    models = tmp_path / "models"
    assert cli.main(["prove", "MaxUnpool", "--case", "maxunpool_output_shape", "--opset", "10",
                     "--out", str(models), "--format", "json"]) == 1
    d = models / "MaxUnpool" / "maxunpool_output_shape@10"
    rec = json.loads((d / "proof.json").read_text())
    assert rec["numeric"]["copy"]["op"] == "MaxUnpool" and rec["numeric"]["forward_ok"] is False
    capsys.readouterr()
    assert cli.main(["node-tests", str(models), "-o", str(tmp_path / "node"), "--format",
                     "json"]) == 0
    capsys.readouterr()
    (entry,) = json.loads((tmp_path / "node" / "node-tests.json").read_text())["directories"]
    assert (entry["status"], entry["why"]) == (
        "explained", "the record's runtime does not reproduce its outputs")
    assert entry["detail"].startswith("forward mismatch in onnxruntime's float32 copy: ")
    # check-evidence sees the stated mismatch again: nothing confirmed, no finding (exit 0)
    assert cli.main(["check-evidence", str(models), "--format", "json"]) == 0
    (check,) = json.loads(capsys.readouterr().out)["directories"]
    assert check["status"] == "not compared"
    assert "(the failed forward check the record states)" in check["detail"]


def test_a_failed_forward_that_the_runtime_reproduces_is_a_finding():
    """A record stating its forward check failed, whose runtime gives the recorded outputs
    after all, is a mismatch; a difference it states is a note; any other record's
    difference stays a finding."""
    from torch_prover.output.check_evidence import _Findings, _recorded_forward
    failed = {"numeric": {"forward_ok": False, "forward_detail": "max abs error 2"}}
    found = _Findings()
    assert _recorded_forward(failed, 1, [], found) == 1
    assert found.problems and "says its forward check failed" in found.problems[0]
    found = _Findings()
    assert _recorded_forward(failed, 1, ["output_0.pb: max abs error 2"], found) == 0
    assert not found.problems and found.notes
    found = _Findings()
    assert _recorded_forward({"numeric": {"forward_ok": True}}, 1,
                             ["output_0.pb: max abs error 2"], found) == 1
    assert found.problems == ["output_0.pb: max abs error 2"]


def test_a_run_with_overrides_copies_the_model_once_and_runs_the_overridden_copy(monkeypatch):
    """Runner.run with initializer overrides on a float32 copy: the overridden model's values
    (Conv is computed by _conv_ref), from one copy of the model per run (it deep-copied the
    float64 model, then float32_copy deep-copied that again)."""
    import copy
    node = oh.make_node("Conv", ["x", "w", "b"], ["y"], name="conv")
    m = _model([node], [_io("x", D, (1, 2, 5, 5))], [_io("y", D, (1, 3, 3, 3))], opset=11,
               initializer=[nh.from_array(CONV_FEEDS["w"], "w"),
                            nh.from_array(CONV_FEEDS["b"], "b")])
    runner = numeric.Runner(m, "onnxruntime", KernelGap("Conv", 11))
    w2 = CONV_FEEDS["w"] * -0.5
    real, copies = copy.deepcopy, []
    monkeypatch.setattr(copy, "deepcopy", lambda *a, **k: copies.append(1) or real(*a, **k))
    got = runner.run({"x": CONV_FEEDS["x"]}, {"w": w2})
    assert len(copies) == 1
    assert got[0].dtype == np.float64
    _close(got[0], _conv_ref(CONV_FEEDS["x"], w2, CONV_FEEDS["b"]))
    _close(runner.run({"x": CONV_FEEDS["x"]})[0], _conv_ref(**CONV_FEEDS))
