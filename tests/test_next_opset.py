"""Ops newer than the exporter: the private-domain route (engine/versions/next_opset.py).

Expectations come from onnx.defs (each op's first ai.onnx version, which other ops changed
between 25 and 28), onnx.checker, and torch's real exporter -- never from the code under
test.
"""
import onnx
import onnx.defs
import onnx.helper
import pytest
import torch

from torch_prover.case import Case, Float
from torch_prover.cases import cases_for
from torch_prover.cases.reference import onnx_opset, reference_op
from torch_prover.engine.export import export_case, export_module
from torch_prover.engine.versions.next_opset import PRIVATE_DOMAIN, raise_opset
from torch_prover.errors import CaseError

NEW_OPS = ("CumProd", "BitCast", "SwiGLU", "LinearAttention", "CausalConvWithState")


def _first_version(op):
    return min(s.since_version for s in onnx.defs.get_all_schemas_with_history()
               if s.name == op and s.domain == "")


def _export(case):
    module, args = case.build_module(), case.build_inputs(0)
    out = module(*args)
    return export_case(case, module, args, len(out) if isinstance(out, tuple) else 1)


@pytest.mark.parametrize("op", NEW_OPS)
def test_each_new_op_is_raised_into_ai_onnx_at_its_own_opset(op):
    since = _first_version(op)
    assert since > 25  # the premise: torch 2.13 cannot export it at its opset
    case = cases_for(op)[0]
    exported = _export(case)
    model = exported.model
    assert exported.opset == since
    assert {(i.domain, i.version) for i in model.opset_import} == {("", since)}
    node = [n for n in model.graph.node if n.op_type == op]
    assert len(node) == 1 and node[0].domain == ""
    assert all(n.domain == "" for n in model.graph.node)
    assert model.ir_version >= onnx.helper.find_min_ir_version_for(
        [onnx.helper.make_opsetid("", since)])
    onnx.checker.check_model(model, full_check=True)  # raises if the raised model is wrong


def _model(nodes, opset=25, private=True):
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3])
    imports = [onnx.helper.make_opsetid("", opset)]
    if private:
        imports.append(onnx.helper.make_opsetid(PRIVATE_DOMAIN, 1))
    graph = onnx.helper.make_graph(nodes, "g", [x], [y])
    return onnx.helper.make_model(graph, opset_imports=imports, ir_version=11)


def test_raise_moves_the_private_node_and_keeps_unchanged_ops():
    model = _model([onnx.helper.make_node("Relu", ["x"], ["r"]),
                    onnx.helper.make_node("SwiGLU", ["r", "x"], ["y"], domain=PRIVATE_DOMAIN)])
    raised = raise_opset(model, 28)
    assert [(n.op_type, n.domain) for n in raised.graph.node] == [("Relu", ""), ("SwiGLU", "")]
    assert [(i.domain, i.version) for i in raised.opset_import] == [("", 28)]
    onnx.checker.check_model(raised, full_check=True)
    assert model.graph.node[1].domain == PRIVATE_DOMAIN  # the input model is left alone


def test_raise_refuses_an_op_whose_schema_changed_in_between():
    cast = onnx.defs.get_schema("Cast", 28).since_version
    assert onnx.defs.get_schema("Cast", 25).since_version < cast <= 28  # premise, from onnx
    model = _model([onnx.helper.make_node("Cast", ["x"], ["c"], name="cast0",
                                          to=onnx.TensorProto.FLOAT),
                    onnx.helper.make_node("SwiGLU", ["c", "x"], ["y"], domain=PRIVATE_DOMAIN)])
    with pytest.raises(CaseError, match=r"node 'cast0' \(Cast\) is Cast-25 at opset 25 but "
                                        rf"Cast-{cast} at opset 28"):
        raise_opset(model, 28)


def test_raise_refuses_a_private_node_that_is_not_new():
    assert onnx.defs.get_schema("Relu", 28).since_version <= 25  # premise, from onnx
    model = _model([onnx.helper.make_node("Relu", ["x"], ["y"], domain=PRIVATE_DOMAIN)])
    with pytest.raises(CaseError, match="Relu node in domain torch_prover.next has no ai.onnx "
                                        "schema newer than opset 25"):
        raise_opset(model, 26)


# --------------------------------------------------------------- the direct route is refused
def _swiglu(A: torch.Tensor, B: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    return A * torch.sigmoid(alpha * A) * B


def _emit_in_ai_onnx(A, B, alpha: float = 1.0):
    """SwiGLU straight into ai.onnx at 28: what a reference op would do without the route."""
    return onnx_opset(28).SwiGLU(A, B, alpha=alpha)


swiglu_in_ai_onnx = reference_op("SwiGLU", _swiglu, name="swiglu_in_ai_onnx",
                                 emit=_emit_in_ai_onnx, opset=28)


def _calls_swiglu_in_ai_onnx(a, b):
    return swiglu_in_ai_onnx(a, b)


def test_the_exporters_silent_opset_18_model_is_refused():
    """Asked for opset 28 with a SwiGLU-28 node, torch 2.13 returns an opset-18 model
    (its converter has no adapter for SwiGLU) and only logs it: the export stage refuses."""
    module = Case("SwiGLU", "direct", _calls_swiglu_in_ai_onnx, (Float(2, 3), Float(2, 3)),
                  kind="reference").build_module()
    args = (torch.randn(2, 3, dtype=torch.float64), torch.randn(2, 3, dtype=torch.float64))
    with pytest.raises(CaseError, match="asked the dynamo exporter for opset 28 but the model "
                                        "declares opset 18; refusing to trust it"):
        export_module(module, args, exporter="dynamo", opset=28, input_names=["a", "b"],
                      output_names=["y0"],
                      options={"custom_translation_table": swiglu_in_ai_onnx.translation})


def test_a_private_node_in_a_case_at_25_is_refused():
    """The route's private node must never reach a record: a case that uses a 28 reference
    op but says opset 25 is a broken case, not a model with an unknown domain."""
    ref = cases_for("SwiGLU")[0]
    case = Case("SwiGLU", "private_at_25", ref.model, ref.inputs, ref.input_names, opset=25,
                kind="reference", translation=ref.translation)
    with pytest.raises(CaseError, match="holds SwiGLU in domain torch_prover.next .* but the "
                                        "case exports at opset 25"):
        _export(case)


# --------------------------------------------------------------- what the PR workflow says
def test_no_standalone_script_for_a_raised_case(capsys):
    """A plain torch.onnx.export at 28 gives the silent opset-18 model (above), so `script`
    refuses with one line naming the case, rather than writing a script `run` would refuse."""
    from torch_prover import cli
    assert cli.main(["script", "SwiGLU", "--case", "swiglu_gate_value"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert len(err.splitlines()) == 1
    assert "SwiGLU/swiglu_gate_value: opset 28" in err and PRIVATE_DOMAIN in err


def test_markdown_says_the_model_was_raised(capsys, tmp_path):
    from torch_prover import cli
    assert cli.main(["prove", "CumProd", "--case", "cumprod_axis1", "--format", "markdown",
                     "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert ("at opset 26 (schema CumProd-26; exported at opset 25 with the node in "
            "torch_prover.next, then moved into ai.onnx at opset 26)") in out
    assert "proof script" not in out  # script_for: none for a raised case
