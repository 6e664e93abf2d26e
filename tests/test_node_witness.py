"""The per-node numeric witness: expectations from the math of each op, not from the code.

Small models come from onnx.helper (fast) or from catalogue cases exported with the
project's own exporter wrapper (what the witness will see in a proof).
"""
from __future__ import annotations

import functools
import re

import numpy as np
import onnx
import onnx.helper as oh
import pytest
import torch
from onnx import TensorProto as TP

from torch_prover.engine.numeric import node_witness as nw
from torch_prover.case import FunctionModule
from torch_prover.cases import find_case
from torch_prover.engine.export import export_case, export_module
from torch_prover.engine.numeric.node_witness import Outcome

SMOOTH, FLAT, JUMP, NONE, INTEGER, ABSENT, NOT_RUN = (
    Outcome.SMOOTH, Outcome.FLAT, Outcome.JUMP, Outcome.NONE, Outcome.INTEGER, Outcome.ABSENT,
    Outcome.NOT_RUN)


# ----------------------------------------------------------------------------- builders
def _info(name: str, value: np.ndarray) -> onnx.ValueInfoProto:
    return oh.make_tensor_value_info(name, oh.np_dtype_to_tensor_dtype(value.dtype), value.shape)


def one_node(op: str, feeds: dict[str, np.ndarray], *, inputs: list[str] | None = None,
             out_type: int = TP.DOUBLE, n_out: int = 1, consts: dict | None = None,
             opset: int = 21, functions=(), domain: str = "", **attrs) -> onnx.ModelProto:
    """A model whose only computing node is ``op``; ``consts`` become initializers."""
    consts = consts or {}
    names = inputs if inputs is not None else list(feeds) + list(consts)
    outs = [f"y{j}" for j in range(n_out)]
    node = oh.make_node(op, names, outs, domain=domain, **attrs)
    graph = oh.make_graph(
        [node], "g", [_info(k, v) for k, v in feeds.items()],
        [oh.make_tensor_value_info(o, out_type, None) for o in outs],
        initializer=[onnx.numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()])
    imports = [oh.make_opsetid("", opset)] + [oh.make_opsetid(f.domain, 1) for f in functions]
    return oh.make_model(graph, opset_imports=imports, ir_version=10, functions=list(functions))


def witness_of(model: onnx.ModelProto, feeds: dict[str, np.ndarray], op: str | None = None,
               **kw) -> nw.NodeWitness:
    index = 0 if op is None else [n.op_type for n in model.graph.node].index(op)
    return nw.witness(model, index, feeds, **kw)


@functools.lru_cache(maxsize=None)
def exported_case(op: str, name: str):
    """(model, feeds, node index) of a catalogue case, exported as a proof exports it."""
    case = find_case(op, name)
    inputs = case.build_inputs(case.seeds[0])
    module = case.build_module()
    with torch.no_grad():
        out = module(*inputs)
    n_out = len(out) if isinstance(out, (tuple, list)) else 1
    model = export_case(case, module, inputs, n_out).model
    graph_inputs = {i.name for i in model.graph.input}
    feeds = {n: t.numpy() for n, t in zip(case.names, inputs) if n in graph_inputs}
    index = [n.op_type for n in model.graph.node].index(op)
    return model, feeds, index


def case_witness(op: str, name: str) -> nw.NodeWitness:
    model, feeds, index = exported_case(op, name)
    return nw.witness(model, index, feeds)


def outcomes(w: nw.NodeWitness) -> list[Outcome]:
    return [i.outcome for i in w.inputs]


RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4))


# ----------------------------------------------------------------------------- smooth
@pytest.mark.parametrize("op", ["Relu", "Tanh"])
def test_elementwise_smooth(op):
    w = witness_of(one_node(op, {"x": X}), {"x": X})
    assert outcomes(w) == [SMOOTH]
    assert w.outputs[0].outcome is SMOOTH
    assert w.inputs[0].detail == "smooth into output 0 at 3 points (steps 1e-6, 1e-7)"
    assert len(w.inputs[0].points) == 3 and not w.inputs[0].moved


@pytest.mark.parametrize("op, name", [("Relu", "relu_basic"), ("MatMul", "matmul_2d")])
def test_exported_cases_smooth(op, name):
    w = case_witness(op, name)
    assert outcomes(w) and all(o is SMOOTH for o in outcomes(w))
    assert w.runtime == "onnxruntime" and w.reproduces


def test_conv_falls_back_to_the_reference_evaluator_and_says_so():
    """onnxruntime has no float64 Conv kernel: the reference evaluator runs the node."""
    w = case_witness("Conv", "conv2d_bias")
    assert outcomes(w) == [SMOOTH, SMOOTH, SMOOTH]      # x, weight, bias
    assert w.runtime == "reference" and w.capture_runtime == "reference"
    assert "onnxruntime" in w.why and "Conv" in w.why


def test_float32_uses_float32_steps():
    x = X.astype(np.float32)
    w = witness_of(one_node("Tanh", {"x": x}, out_type=TP.FLOAT), {"x": x})
    assert outcomes(w) == [SMOOTH]
    assert w.inputs[0].step == 1e-3 and "steps 1e-3, 1e-4" in w.inputs[0].detail


# ----------------------------------------------------------------------------- flat
@pytest.mark.parametrize("op", ["Floor", "Sign", "Round"])
def test_piecewise_constant_is_flat(op):
    x = RNG.uniform(-3, 3, (3, 4))
    w = witness_of(one_node(op, {"x": x}), {"x": x})
    assert outcomes(w) == [FLAT]
    assert w.outputs[0].outcome is FLAT
    assert w.inputs[0].detail == "flat into output 0: zero at 3 points (steps 1e-6, 1e-7)"


@pytest.mark.parametrize("op, name", [("Floor", "floor_basic"), ("Sign", "sign_basic"),
                                      ("Round", "round_basic")])
def test_exported_piecewise_constant_is_flat(op, name):
    assert outcomes(case_witness(op, name)) == [FLAT]


@pytest.mark.parametrize("op, x", [("Round", [3.5, 0.2, -1.3]), ("Floor", [2.0, 0.4, -1.7])])
def test_point_on_a_jump_is_moved_and_still_flat(op, x):
    """Round at 3.5 and Floor at 2 jump by 1 within any step: the captured point is moved
    off the jump, the move is recorded, and the op is flat where it has a derivative."""
    x = np.array(x)
    w = witness_of(one_node(op, {"x": x}), {"x": x})
    inp = w.inputs[0]
    assert inp.outcome is FLAT
    assert inp.moved and inp.moves[0].slot == 0 and inp.moves[0].settled
    assert "grows like 1/step" in inp.moves[0].reasons[0]
    assert inp.points[0].slot == 0 and inp.points[0].draw >= 1
    assert "captured point moved" in inp.detail


def test_relu_at_its_kink_is_moved_then_smooth():
    x = np.array([0.0, 1.3, -0.4])
    w = witness_of(one_node("Relu", {"x": x}), {"x": x})
    assert outcomes(w) == [SMOOTH]
    assert w.inputs[0].moves[0].slot == 0 and "kink or tie" in w.inputs[0].moves[0].reasons[0]


def test_tied_maxima_are_moved_apart_then_smooth():
    """ReduceMax over [1, 3, 3, ...]: at the tie the one-sided derivatives differ (a kink);
    a small move breaks the tie and the max is smooth in x."""
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    w = witness_of(one_node("ReduceMax", {"x": x}, keepdims=0), {"x": x})
    inp = w.inputs[0]
    assert inp.outcome is SMOOTH
    assert inp.moved and inp.moves[0].slot == 0 and inp.moves[0].settled
    assert "kink or tie" in inp.moves[0].reasons[0]


# ----------------------------------------------------------------------------- integer, none...
def test_reshape_shape_is_integer_and_lifted():
    model, feeds, index = exported_case("Reshape", "reshape_basic")
    node = nw.isolate(model, index, feeds)
    assert len(node.model.graph.node) == 1 and not node.model.graph.initializer
    assert [i.name for i in node.model.graph.input] == list(model.graph.node[index].input)
    onnx.checker.check_model(node.model, full_check=True)
    w = nw.measure(node)
    assert outcomes(w) == [SMOOTH, INTEGER]
    assert w.inputs[1].dtype == "int64" and w.inputs[1].detail == "int64: not perturbed"


def test_float_input_without_float_output_is_none():
    w = witness_of(one_node("ArgMax", {"x": X}, out_type=TP.INT64, axis=1), {"x": X})
    assert outcomes(w) == [NONE]
    assert w.outputs[0].outcome is INTEGER


def test_absent_optional_input_stays_absent():
    max_ = np.array(0.5)
    model = one_node("Clip", {"x": X}, inputs=["x", "", "max"], consts={"max": max_})
    node = nw.isolate(model, 0, {"x": X})
    assert list(node.model.graph.node[0].input) == ["x", "", "max"]
    assert [i.name for i in node.model.graph.input] == ["x", "max"]
    w = nw.measure(node)
    assert outcomes(w) == [SMOOTH, ABSENT, SMOOTH]


# ----------------------------------------------------------------------------- lifted constants
def test_clip_bounds_lifted_smooth_when_they_bind():
    """clamp(x, -0.5, 0.5) on x ~ N(0, 1): some elements sit beyond each bound, so the
    output moves with both bounds (derivative 1 there)."""
    model, feeds, index = exported_case("Clip", "clip_scalar_bounds")
    assert not set(model.graph.node[index].input[1:]) & set(feeds)     # constants, not inputs
    assert outcomes(nw.witness(model, index, feeds)) == [SMOOTH, SMOOTH, SMOOTH]


def test_clip_bounds_that_never_bind_are_flat():
    model = one_node("Clip", {"x": X}, consts={"min": np.array(-10.0), "max": np.array(10.0)})
    assert outcomes(witness_of(model, {"x": X})) == [SMOOTH, FLAT, FLAT]


def test_pad_constant_value_is_lifted_and_smooth():
    model, feeds, index = exported_case("Pad", "pad_constant")
    w = nw.witness(model, index, feeds)
    assert outcomes(w)[:3] == [SMOOTH, INTEGER, SMOOTH]   # data, pads, constant_value


def times_2_5(x):
    return x * 2.5


def test_folded_float_constant_is_lifted_and_measured():
    """x * 2.5 exports as Mul(x, <constant 2.5>): the constant is an input of the isolated
    node, and d(x * c)/dc = x, so <dy, J_c v> = v * sum(dy * x)."""
    x = torch.randn(2, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    model = export_module(FunctionModule(times_2_5), (x,), exporter="dynamo", opset=25,
                          input_names=["x"], output_names=["y0"]).model
    index = [n.op_type for n in model.graph.node].index("Mul")
    const = [n for n in model.graph.node[index].input if n != "x"]
    assert const and const[0] not in {i.name for i in model.graph.input}
    node = nw.isolate(model, index, {"x": x.numpy()})
    c = list(node.model.graph.node[0].input).index(const[0])
    assert float(node.point[const[0]]) == 2.5
    w = nw.measure(node)
    assert w.inputs[c].outcome is SMOOTH
    dy = np.ones((2, 3))
    got = nw.vjp(node, c, np.array(1.0), [dy])
    assert got == pytest.approx(float(x.sum()), rel=1e-6)


# ----------------------------------------------------------------------------- shape inputs
def test_range_limit_is_a_shape_input_start_and_delta_smooth():
    """Range(start, limit, delta) = start + k delta for k < ceil((limit - start) / delta):
    the values move with start and delta; limit only decides the length."""
    feeds = {"start": np.array(0.2), "limit": np.array(5.3), "delta": np.array(0.7)}
    w = witness_of(one_node("Range", feeds), feeds)
    assert outcomes(w) == [SMOOTH, JUMP, SMOOTH]
    assert "shape changes with the input's value" in w.inputs[1].detail
    assert not any(i.moved for i in w.inputs)


def test_range_on_its_grid_moves_the_point():
    """arange(x.shape[1]) exports Range(0.0, Cast(Shape(x)), 1.0): limit = 3 sits exactly on
    the grid, so any step changes the length: the point is moved, and the verdicts hold."""
    w = case_witness("Range", "range_float")
    assert outcomes(w) == [SMOOTH, JUMP, SMOOTH]
    assert all(i.moved and "shape changes" in i.moves[0].reasons[0] for i in w.inputs)


# ----------------------------------------------------------------------------- isolation
def test_a_value_read_twice_is_lifted_once_per_use():
    """Mul(x, x): d/d(input 0) with input 1 held is x, not 2x."""
    model = one_node("Mul", {"x": X}, inputs=["x", "x"])
    node = nw.isolate(model, 0, {"x": X})
    a, b = node.input_names
    assert a != b and len(node.model.graph.input) == 2
    assert outcomes(nw.measure(node)) == [SMOOTH, SMOOTH]
    v, dy = RNG.standard_normal(X.shape), RNG.standard_normal(X.shape)
    assert nw.vjp(node, 0, v, [dy]) == pytest.approx(float(np.sum(dy * X * v)), rel=1e-6)


def test_subgraph_outer_values_are_lifted():
    """If(cond) whose branches read x and y from the enclosing graph."""
    x, y = RNG.standard_normal(3), RNG.standard_normal(3)
    then_g = oh.make_graph([oh.make_node("Mul", ["x", "y"], ["t"])], "then", [],
                           [oh.make_tensor_value_info("t", TP.DOUBLE, None)])
    else_g = oh.make_graph([oh.make_node("Sub", ["x", "y"], ["e"])], "else", [],
                           [oh.make_tensor_value_info("e", TP.DOUBLE, None)])
    feeds = {"cond": np.array(True), "x": x, "y": y}
    model = one_node("If", feeds, inputs=["cond"], then_branch=then_g, else_branch=else_g)
    w = witness_of(model, feeds)
    assert outcomes(w) == [INTEGER]
    assert [(o.name, o.outcome) for o in w.outer] == [("x", SMOOTH), ("y", SMOOTH)]
    assert w.outputs[0].detail == "smooth from outer values x, y"


def test_local_function_is_kept():
    fn = oh.make_function(
        "local", "Cube", ["a"], ["b"],
        [oh.make_node("Mul", ["a", "a"], ["sq"]), oh.make_node("Mul", ["sq", "a"], ["b"])],
        [oh.make_opsetid("", 21)])
    model = one_node("Cube", {"x": X}, functions=[fn], domain="local")
    node = nw.isolate(model, 0, {"x": X})
    assert [f.name for f in node.model.functions] == ["Cube"]
    assert {(o.domain, o.version) for o in node.model.opset_import} == {("", 21), ("local", 1)}
    v, dy = RNG.standard_normal(X.shape), RNG.standard_normal(X.shape)
    assert nw.vjp(node, 0, v, [dy]) == pytest.approx(float(np.sum(dy * 3 * X ** 2 * v)),
                                                     rel=1e-6)
    assert outcomes(nw.measure(node)) == [SMOOTH]


def test_the_exported_model_is_left_as_it_was():
    model, feeds, index = exported_case("Clip", "clip_scalar_bounds")
    before = model.SerializeToString(deterministic=True)
    nw.witness(model, index, feeds)
    assert model.SerializeToString(deterministic=True) == before


def test_captured_values_come_from_the_run():
    """Node inputs produced inside the graph are captured, not recomputed or guessed."""
    x = RNG.standard_normal(4)
    graph = oh.make_graph(
        [oh.make_node("Exp", ["x"], ["e"]), oh.make_node("Tanh", ["e"], ["y"])], "g",
        [_info("x", x)], [oh.make_tensor_value_info("y", TP.DOUBLE, None)])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 21)], ir_version=10)
    node = nw.isolate(model, 1, {"x": x})
    np.testing.assert_allclose(node.point["e"], np.exp(x), rtol=1e-15)
    assert node.reproduces


def test_sequence_inputs_are_perturbed_element_wise():
    """ConcatFromSequence of a captured SequenceConstruct(a, b): the sequence is lifted as
    one input, and concatenation is linear in it."""
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((1, 3))
    graph = oh.make_graph(
        [oh.make_node("SequenceConstruct", ["a", "b"], ["s"]),
         oh.make_node("ConcatFromSequence", ["s"], ["y"], axis=0)], "g",
        [_info("a", a), _info("b", b)], [oh.make_tensor_value_info("y", TP.DOUBLE, None)])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 21)], ir_version=10)
    node = nw.isolate(model, 1, {"a": a, "b": b})
    assert isinstance(node.point["s"], list) and len(node.point["s"]) == 2
    w = nw.measure(node)
    assert outcomes(w) == [SMOOTH] and w.inputs[0].dtype == "sequence(float64)"
    v = [RNG.standard_normal((2, 3)), RNG.standard_normal((1, 3))]
    dy = RNG.standard_normal((3, 3))
    assert nw.vjp(node, 0, v, [dy]) == pytest.approx(float(np.sum(dy * np.concatenate(v))),
                                                     rel=1e-6)


# ----------------------------------------------------------------------------- VJP
def test_vjp_matches_the_analytic_derivative():
    """d<dy, x * y>/dx . v = <dy, y * v>, at the captured point and at a drawn one."""
    x, y = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    node = nw.isolate(one_node("Mul", {"x": x, "y": y}), 0, {"x": x, "y": y})
    v, dy = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    assert nw.vjp(node, 0, v, [dy]) == pytest.approx(float(np.sum(dy * y * v)), rel=1e-6)
    assert nw.vjp(node, 1, v, [dy]) == pytest.approx(float(np.sum(dy * x * v)), rel=1e-6)
    point = nw.measure(node).inputs[1].points[1]          # a draw of y near the captured y
    at = node.values_at(point)
    assert point.input == "y" and not np.array_equal(at["y"], y)
    np.testing.assert_array_equal(at["x"], x)
    assert nw.vjp(node, 0, v, [dy], point=point) == pytest.approx(
        float(np.sum(dy * at["y"] * v)), rel=1e-6)
    y2 = y + 1.0
    assert nw.vjp(node, 0, v, [dy], point={"y": y2}) == pytest.approx(
        float(np.sum(dy * y2 * v)), rel=1e-6)


def test_vjp_refuses_integer_and_absent_inputs():
    model = one_node("Clip", {"x": X}, inputs=["x", "", "max"], consts={"max": np.array(0.5)})
    node = nw.isolate(model, 0, {"x": X})
    with pytest.raises(nw.WitnessError):
        nw.vjp(node, 1, np.array(1.0), [X])


# ----------------------------------------------------------------------------- not run
def test_a_model_that_does_not_run_is_not_run_with_why():
    w = witness_of(one_node("Relu", {"x": X}), {})
    assert outcomes(w) == [NOT_RUN] and w.outputs[0].outcome is NOT_RUN
    assert "does not run" in w.why and w.inputs[0].detail == w.why


def test_a_point_the_runtime_refuses_is_not_run_with_why():
    """The reference evaluator's nearest Upsample takes integer scales only: every move of
    the scales is refused, so they are not measured (and the refusal is quoted), while x,
    measured with the scales as captured, is smooth."""
    w = case_witness("Upsample", "upsample_nearest")
    assert w.runtime == "reference"
    assert outcomes(w) == [SMOOTH, NOT_RUN]
    assert "refuses" in w.inputs[1].detail and "Not implemented" in w.inputs[1].detail
    assert w.outputs[0].outcome is SMOOTH


# ----------------------------------------------------------------------------- records
def test_two_calls_give_identical_results():
    model, feeds, index = exported_case("Range", "range_float")
    assert nw.witness(model, index, feeds) == nw.witness(model, index, feeds)
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    m = one_node("ReduceMax", {"x": x}, keepdims=0)
    assert witness_of(m, {"x": x}) == witness_of(m, {"x": x})


def test_details_carry_no_measured_magnitudes():
    """Only counts, indices and the fixed steps: another BLAS must not change a word."""
    ws = [case_witness("Range", "range_float"), case_witness("Conv", "conv2d_bias"),
          case_witness("Upsample", "upsample_nearest"),
          witness_of(one_node("Round", {"x": np.array([3.5, 1.0])}), {"x": np.array([3.5, 1.0])})]
    for w in ws:
        texts = [i.detail for i in w.inputs + w.outer] + [o.detail for o in w.outputs]
        texts += [p.detail for i in w.inputs for p in i.pairs]
        for t in texts:
            numbers = re.findall(r"\d+(?:\.\d+)?(?:e-?\d+)?", t)
            assert all(re.fullmatch(r"\d+|1e-\d", n) for n in numbers), t


@pytest.mark.parametrize("op", ["RandomUniform", "RandomNormal"])
def test_a_sampling_node_with_no_input_has_nothing_to_measure(op):
    """RandomUniform and RandomNormal read no input: no finite difference is taken, so their
    draw being random changes nothing, and the output is connected to no input (the schema
    has none), as for Constant. A sampling op with an input is still refused (next test)."""
    model = one_node(op, {}, inputs=[], shape=[2, 3], dtype=TP.DOUBLE)
    w = witness_of(model, {})
    assert [o.outcome for o in w.outputs] == [NONE]
    assert w.outputs[0].detail == "no floating input to measure"


def test_a_sampling_node_with_an_input_is_not_measured():
    x = RNG.standard_normal((2, 3))
    w = witness_of(one_node("RandomUniformLike", {"x": x}), {"x": x})
    assert [o.outcome for o in w.outputs] == [NOT_RUN]
    assert "samples random numbers" in w.outputs[0].detail
