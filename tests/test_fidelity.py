"""A node checked against the schema version in force (engine/versions/fidelity.py).

Expectations come from the schemas' own text (onnx.defs): the values an attribute's
description lists per version, the versions whose doc says "All inputs and outputs must
have the same shape" (no broadcasting) or "unidirectional broadcasting". The node examples
are the issue's: Sum/Mean/Max/Min-6 with inputs [2, 3], [3], [1, 3]; Pad-11/-13/-18 with
mode wrap (a mode from Pad-19).
"""
from __future__ import annotations

import re

import numpy as np
import onnx
import onnx.defs
import onnx.helper as oh
import onnx.numpy_helper as nh
import pytest
from onnx import TensorProto

from torch_prover.engine.versions import fidelity
from torch_prover.engine.versions.fidelity import Problem


def _schemas():
    return [s for s in onnx.defs.get_all_schemas_with_history() if s.domain == ""]


def _versions(op):
    return sorted(s.since_version for s in _schemas() if s.name == op)


def _words(text):
    return set(re.findall(r"\w+", text))


@pytest.mark.parametrize("key", sorted(fidelity.ATTRIBUTE_VALUES))
def test_attribute_values_are_the_ones_each_versions_description_lists(key):
    op, attribute = key
    entries = fidelity.ATTRIBUTE_VALUES[key]
    for k, (first, values) in enumerate(entries):
        nxt = entries[k + 1][0] if k + 1 < len(entries) else 10**6
        versions = [v for v in _versions(op) if first <= v < nxt]
        assert versions, (key, first)
        for v in versions:
            schema = onnx.defs.get_schema(op, v, "")
            assert attribute in schema.attributes, (op, v, attribute)
            words = _words(schema.attributes[attribute].description)
            assert set(values) <= words, (op, v, set(values) - words)
            if k + 1 < len(entries):   # a value the next entry adds is not this version's
                added = set(entries[k + 1][1]) - set(values)
                assert not added & words, (op, v, added & words)


def test_no_broadcasting_is_exactly_where_the_schema_says_one_shape():
    said = {(s.name, s.since_version) for s in _schemas()
            if "All inputs and outputs must have the same shape" in " ".join(
                (s.doc or "").split())}
    assert said == fidelity.SAME_SHAPE


def test_unidirectional_broadcasting_is_exactly_where_the_schema_says_so():
    said = {(s.name, s.since_version) for s in _schemas()
            if "unidirectional broadcast" in " ".join((s.doc or "").lower().split())}
    assert said == set(fidelity.UNIDIRECTIONAL)


def _node_model(op, opset, shapes, attrs=None, inits=()):
    names = [f"x{i}" for i in range(len(shapes))] + [n for n, _ in inits]
    node = oh.make_node(op, names, ["y"], **(attrs or {}))
    g = oh.make_graph([node], "g", [oh.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, s)
                                    for i, s in enumerate(shapes)],
                      [oh.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                      initializer=[nh.from_array(a, n) for n, a in inits])
    m = oh.make_model(g, opset_imports=[oh.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _problems(model):
    version, found = fidelity.node_findings(model, model.graph.node[0])
    return version, [f.problem for f in found], [f.detail for f in found]


@pytest.mark.parametrize("op", ["Sum", "Mean", "Max", "Min"])
def test_version_6_takes_no_broadcast_inputs(op):
    shapes = [[2, 3], [3], [1, 3]]
    version, problems, details = _problems(_node_model(op, 7, shapes))
    assert (version, problems) == (6, [Problem.SHAPES])
    assert "[2, 3], [3], [1, 3]" in details[0] and f"{op}-6" in details[0]
    assert _problems(_node_model(op, 8, shapes))[1] == []            # from 8: broadcasts
    assert _problems(_node_model(op, 7, [[2, 3]] * 3))[1] == []       # one shape: valid at 6


PADS = ("pads", np.array([0, 0, 1, 0, 0, 1], np.int64))


@pytest.mark.parametrize("opset,version", [(12, 11), (17, 13), (18, 18)])
def test_pad_wrap_before_19_is_a_mode_the_version_lacks(opset, version):
    got_version, problems, details = _problems(
        _node_model("Pad", opset, [[2, 3, 4]], {"mode": "wrap"}, [PADS]))
    assert (got_version, problems) == (version, [Problem.ATTRIBUTE_VALUE])
    assert "mode='wrap'" in details[0] and "constant, reflect, edge" in details[0]


def test_pad_wrap_from_19_and_the_other_modes_before_it_are_valid():
    assert _problems(_node_model("Pad", 19, [[2, 3, 4]], {"mode": "wrap"}, [PADS]))[1] == []
    for mode in ("constant", "reflect", "edge"):
        assert _problems(_node_model("Pad", 13, [[2, 3, 4]], {"mode": mode}, [PADS]))[1] == []


def test_an_attribute_the_version_lacks_is_the_checkers_and_a_mode_it_does_not_define_ours():
    """DepthToSpace-1 has no mode (from -11): onnx.checker refuses the node, as every model a
    proof runs passed it (export.check), so fidelity does not check names again; Resize-10
    has no cubic mode (from -11), a value the checker lets pass: fidelity's."""
    from torch_prover.errors import CaseError
    from torch_prover.engine.export import check
    lacks = _node_model("DepthToSpace", 10, [[1, 8, 2, 3]], {"blocksize": 2, "mode": "CRD"})
    lacks.graph.output[0].CopyFrom(oh.make_tensor_value_info("y", TensorProto.FLOAT,
                                                             [1, 2, 4, 6]))
    with pytest.raises(CaseError, match="Unrecognized attribute: mode"):
        check(lacks)
    assert _problems(lacks)[1] == []
    scales = ("s", np.array([1, 1, 2, 2], np.float32))
    cubic = _node_model("Resize", 10, [[1, 1, 2, 3]], {"mode": "cubic"}, [scales])
    _, problems, _ = _problems(cubic)
    assert problems == [Problem.ATTRIBUTE_VALUE]


def test_unidirectional_broadcasting_one_way_only():
    """PRelu-7: slope must broadcast to X ([3] does not to [2, 3, 4]; [3, 1] does)."""
    slope = lambda shape: ("slope", np.full(shape, 0.25, np.float32))  # noqa: E731
    assert _problems(_node_model("PRelu", 7, [[2, 3, 4]], inits=[slope((3,))]))[1] == [
        Problem.SHAPES]
    assert _problems(_node_model("PRelu", 7, [[2, 3, 4]], inits=[slope((3, 1))]))[1] == []


def test_a_run_no_faithful_runtime_made_is_not_a_run_of_the_version():
    model = _node_model("Relu", 13, [[2]])
    ok = fidelity.check(model, 0, "Relu", None)
    assert ok.faithful and ok.version == 13
    gap = fidelity.check(model, 0, "Relu", "onnxruntime: no float64 kernel")
    assert not gap.faithful
    assert gap.record() == {"schema": "Relu-13", "problems": [
        {"kind": "no runtime implements the version",
         "detail": "onnxruntime: no float64 kernel"}]}
    assert gap.reason().startswith("not a run of Relu-13: ")


def test_a_variant_pad_13_does_not_accept_says_why(capsys):
    """docs/versions.md's example: pad_wrap at opset 13 (Pad-13) is not a run of Pad-13;
    expectations from Pad-13's description of `mode` (constant, reflect, edge)."""
    from docs_examples import assert_example

    from torch_prover import cli
    code = cli.main(["prove", "Pad", "--case", "pad_wrap", "--opset", "13", "--no-write"])
    out = capsys.readouterr().out
    assert code == 1 and "status: failed" in out
    assert "not a run of Pad-13: attribute value the version does not define: mode='wrap'" in \
        " ".join(out.split())
    assert_example("versions-prove-pad-wrap-13",
                   "$ torch-prover prove Pad --case pad_wrap --opset 13 --no-write\n" + out)
