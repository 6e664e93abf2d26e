"""ai.onnx.preview.training Gradient-1 (batch/gradient_witness.py): no runtime runs the node,
so both witnesses compute it by its definition at ONNX's two model tests of it, and the
table's two rows are what the math of those tests gives under the body-dependent
convention. Every expectation here is derived by hand from the tests' graphs."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

from torch_prover.batch import gradient_witness as gw
from torch_prover.output import table

ADD, ADD_MUL = "test_gradient_of_add", "test_gradient_of_add_and_mul"


def _hand(test: str, a: float, b: float) -> tuple[list[float], np.ndarray]:
    """The Gradient node's outputs (dy/da, dy/db) and [output k, input j] = d Outputs[k] /
    d Inputs[j], derived by hand: c = a + b has dc/da = dc/db = 1 (constant: all second
    derivatives 0); d = (a + b) a = a^2 + ab has dd/da = 2a + b, dd/db = a, so
    d(dd/da)/da = 2, d(dd/da)/db = 1, d(dd/db)/da = 1, d(dd/db)/db = 0."""
    if test == ADD:
        return [1.0, 1.0], np.zeros((2, 2))
    return [2 * a + b, a], np.array([[2.0, 1.0], [1.0, 0.0]])


@pytest.fixture(scope="module")
def tests():
    return {t.name: t for t in gw.onnx_tests()}


def test_onnxs_model_tests_of_gradient_are_the_two_read_here(tests):
    """The installed onnx's generator gives exactly the two tests the formulas cover, at
    a = 1, b = 2 (onnx/backend/test/case/model/gradient.py)."""
    assert set(tests) == {ADD, ADD_MUL} == set(gw.FORMULAS) == set(gw.MATH)
    for t in tests.values():
        assert [float(v) for v in t.inputs] == [1.0, 2.0]


@pytest.mark.parametrize("name", [ADD, ADD_MUL])
def test_the_node_by_its_definition_and_its_second_derivatives_are_the_math(tests, name):
    """The numeric witness: the forward graph in onnxruntime (float64) gives the Gradient
    node's outputs the hand-derived first derivatives at ONNX's point and elsewhere, and
    their central differences the hand-derived second derivatives, at both steps; the
    autograd witness's double backward gives the same second derivatives."""
    t = tests[name]
    f = gw.Forward(gw.forward_model(t.model))
    for a, b in ((1.0, 2.0), (-0.7, 0.3)):
        point = [np.array(a), np.array(b)]
        dy, d2 = _hand(name, a, b)
        assert np.allclose([float(g) for g in gw.first(f, point, 2, 1e-3)], dy, atol=1e-8)
        for h in gw.STEPS:
            assert np.allclose(gw.second_numeric(f, point, 2, h), d2, atol=1e-6)
        size, _ = gw.second_autograd(gw.FORMULAS[name], point, 2)
        assert np.allclose(size, d2, atol=1e-12)
    m = gw.measure(t)
    assert m.first_error < 1e-6 and m.forward_error == 0.0 and m.points == 3


def test_the_numeric_witness_reports_flat_for_scalar_add(tests):
    """It could say the opposite: for c = a + b every second derivative is 0 by hand, and
    the numeric witness reports both parameters flat (autograd: no second derivative at
    all, the first derivatives being constants with no graph)."""
    rec = gw.record(gw.measure(tests[ADD]))
    assert [(p["name"], p["witnesses"]["numeric"]["outcome"], p["evidence"])
            for p in rec["parameters"]] == [("Inputs", "flat", "no-grad"),
                                           ("Outputs", "flat", "no-grad")]


def test_add_and_mul_is_smooth_for_both_parameters_by_both_witnesses(tests):
    """By hand every input moves some output (a: d(dd/da)/da = 2; b: d(dd/da)/db = 1) and
    every output moves with some input, so both witnesses find both parameters nonzero."""
    rec = gw.record(gw.measure(tests[ADD_MUL]))
    assert [(p["name"], p["witnesses"]["numeric"]["outcome"], p["evidence"])
            for p in rec["parameters"]] == [("Inputs", "smooth", "grad"),
                                           ("Outputs", "smooth", "grad")]
    for p in rec["parameters"]:   # both witnesses' math, then the convention's tag
        assert p["reason"].startswith("math: autograd: nonzero second derivative (max 2")
        assert "numeric: smooth: second derivative up to 2 " in p["reason"]
    assert rec["witness"]["runtime"] == "onnxruntime"
    assert rec["witness"]["precision"] == "float64"
    assert rec["witness"]["steps"] == list(gw.STEPS)
    assert "no runtime registers it" in rec["witness"]["node"]


def test_the_tables_rows_are_the_body_dependent_conventions_as_ifs():
    """One question, one answer: Outputs move with Inputs for one graph (add_and_mul,
    nonzero by hand) and not for another (add, zero by hand) -- what the body-dependent
    convention says of If's, Loop's and Scan's data, whose rows support unknown under it.
    So Gradient's two rows support unknown (agree: ONNX tags them unknown), decided by the
    two tests, each row keeping the math: smooth at one, flat at the other."""
    rows = [r for r in table.load()["rows"] if r["op"] == "Gradient"]
    ifs = {(r["supports"], r["rule"], r["convention"]) for r in table.load()["rows"]
           if r["op"] in ("If", "Loop", "Scan") and r["convention"] == "body-dependent"}
    assert ifs == {("unknown", "convention", "body-dependent")}
    assert [(r["io"], r["name"], r["supports"], r["verdict"], r["rule"], r["convention"],
             r["decided_by"], r["cases"], r["numeric"], r["evidence"]) for r in rows] == [
        (io, name, "unknown", "agree", "convention", "body-dependent", "proved",
         [ADD, ADD_MUL], ["flat", "smooth"], ["grad", "no-grad"])
        for io, name in (("input", "Inputs"), ("output", "Outputs"))]
    for r in rows:
        assert f"{ADD}: math: " in r["reason"] and f"{ADD_MUL}: math: " in r["reason"]
        assert "d(dd/da)/db = 1" in r["reason"]


def _gradient_of_product() -> onnx.ModelProto:
    """y = a * b and a Gradient node of dy/da, dy/db (xs = a, b); onnx.checker accepts it."""
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Mul", ["a", "b"], ["y"]),
             helper.make_node("Gradient", ["a", "b"], ["dy_da", "dy_db"],
                              domain=gw.TRAINING, xs=["a", "b"], y="y")]
    value = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [2])  # noqa: E731
    model = helper.make_model(
        helper.make_graph(nodes, "gradient", [value("a"), value("b")],
                          [value(n) for n in ("y", "dy_da", "dy_db")]),
        opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid(gw.TRAINING, 1)],
        ir_version=10)
    onnx.checker.check_model(model, full_check=True)
    return model


def test_no_runtime_runs_a_gradient_node():
    """Why the witnesses evaluate the node by its definition: neither onnx.reference nor
    onnxruntime runs it. The day one does, this fails, and the node itself can be measured
    as every other op's is (a case of Gradient)."""
    import onnxruntime as ort
    from onnx.reference import ReferenceEvaluator
    model = _gradient_of_product()
    feeds = {"a": np.array([1, 2], np.float32), "b": np.array([3, 4], np.float32)}
    with pytest.raises(NotImplementedError, match="Gradient"):
        ReferenceEvaluator(model).run(None, feeds)
    with pytest.raises(Exception, match="Gradient.*not a registered"):
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def test_a_model_test_without_a_formula_is_an_error(monkeypatch):
    """A new ONNX model test of Gradient must be read and given its formula, not skipped."""
    monkeypatch.setattr(gw, "FORMULAS", {ADD: gw.FORMULAS[ADD]})
    with pytest.raises(RuntimeError, match=ADD_MUL):
        gw.records()
