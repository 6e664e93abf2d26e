"""Attribution by dependency: clean, through glue, parameters, and the ambiguous shapes."""
import torch

from torch_prover.case import Case, Float, Int
from torch_prover.engine.export import export_case
from torch_prover.engine.attribution.mapping import map_node


def _map(case):
    module = case.build_module()
    args = case.build_inputs(0)
    out = module(*args)
    n = len(out) if isinstance(out, tuple) else 1
    exported = export_case(case, module, args, n)
    tracked = list(case.names) + [k for k, _ in module.named_parameters()]
    return map_node(exported.model, case.op, case.domain, tracked)


def add(a, b):
    return a + b


def add_self(a):
    return a + a


def add_and_bypass(a, b):
    return a + b, torch.exp(a)


def gather(data, idx):
    return torch.index_select(data, 0, idx)


class Conv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 2, 3, bias=False)

    def forward(self, x):
        return self.conv(x)


def test_clean_binary_mapping():
    m = _map(Case("Add", "m_add", add, (Float(2, 3), Float(2, 3)), ("a", "b")))
    assert not m.problems
    assert [(a.kind, a.source) for a in m.inputs] == [("tensor", "a"), ("tensor", "b")]
    assert [a.source for a in m.outputs] == ["y0"]


def test_one_tensor_feeding_two_inputs_costs_only_their_autograd_witness():
    """a + a: a's gradient is the sum over both inputs, so neither input can claim it; but
    a reaches the output only through Add, so nothing is mis-credited: not a problem, and
    the mapping names the stricter proof (a tensor per input)."""
    m = _map(Case("Add", "m_self", add_self, (Float(3),), ("a",)))
    assert not m.problems
    assert [a.shared for a in m.inputs] == [("a", (0, 1))] * 2
    (note,) = m.shared_notes
    assert "feeds inputs 0, 1" in note and "a.detach().clone()" in note


def test_bypass_around_the_node_is_ambiguous():
    m = _map(Case("Add", "m_bypass", add_and_bypass, (Float(3), Float(3)), ("a", "b")))
    assert m.inputs[0].problem and "without passing through the Add node" in m.inputs[0].problem
    assert m.inputs[1].problem is None


def test_glue_node_path_is_recorded():
    m = _map(Case("Gather", "m_gather", gather, (Float(4, 2), Int(3, high=4)), ("data", "idx")))
    assert not m.problems
    assert m.inputs[1].source == "idx" and m.inputs[1].path == ("Reshape",)
    assert m.inputs[1].dtype == "int64"


def test_parameters_and_absent_optional_input():
    m = _map(Case("Conv", "m_conv", Conv, (Float(1, 1, 4, 4),), ("x",)))
    assert [(a.kind, a.source) for a in m.inputs[:2]] == [("tensor", "x"), ("tensor", "conv.weight")]
    assert len(m.inputs) == 2 or m.inputs[2].kind == "absent"


def test_missing_target_node_is_invalid():
    m = _map(Case("Mul", "m_nomul", add, (Float(3), Float(3))))
    assert m.invalid and "no Mul nodes" in m.invalid


def add_then_mix(a, b):
    return (a + b) * b.exp().sum()


def test_output_reached_around_the_node_is_ambiguous():
    """y = (a + b) * f(b): b reaches the graph output other than through Add, so b's
    gradient is not Add's input 1's alone; Add's output reaches y through Mul, so its
    autograd witness is not used and makes nothing ambiguous."""
    m = _map(Case("Add", "m_mix", add_then_mix, (Float(3), Float(3)), ("a", "b")))
    assert "without passing through the Add node" in m.inputs[1].problem
    assert m.outputs[0].problem is None and m.outputs[0].through == ("Mul",)


def cat_with_b(a, b):
    return torch.cat([a + b, b])


def test_output_reached_around_the_node_through_glue_is_ambiguous():
    """cat(a + b, b): the graph output holds Add's output and b side by side (glue only),
    so the output's dy reaching b is not only Add's."""
    m = _map(Case("Add", "m_cat", cat_with_b, (Float(3), Float(3)), ("a", "b")))
    assert m.outputs[0].problem and "also depends on b" in m.outputs[0].problem


def concat_then_mul(a, b, c):
    return torch.cat([a, b]) * c


def mul_by_zeros_shaped_like(x):
    return x * torch.zeros(x.shape[0], dtype=x.dtype)


def test_an_input_assembled_by_glue_from_two_tensors_is_theirs_alone():
    """Mul's first input is cat(a, b): value-preserving glue, each part feeding only it, so
    its gradient is a's and b's side by side (ONNX LSTM's B from two PyTorch biases)."""
    m = _map(Case("Mul", "t_cat", concat_then_mul, (Float(2), Float(3), Float(5)), ("a", "b", "c")))
    first = m.inputs[0]
    assert not m.problems
    assert first.source is None and first.all_sources == ("a", "b") and not first.through
    assert m.inputs[1].all_sources == ("c",)


def test_a_shape_only_dependency_makes_nothing_ambiguous():
    """x * zeros(x.shape[0]): x feeds input 0, and input 1 only through Shape, where no
    gradient can flow -- not "x feeds inputs 0, 1" (TorchScript's LSTM builds initial_h
    from x's shape that way)."""
    m = _map(Case("Mul", "t_shape_dep", mul_by_zeros_shaped_like, (Float(4),), ("x",),
                  exporter="torchscript", dynamic=True))
    assert not m.problems, m.problems
    assert m.inputs[0].all_sources == ("x",) and not m.inputs[0].through
    assert "Shape" in m.inputs[1].through


def _guarded(bypass_also_added: bool = False):
    """Where(x > 20, x, Softplus(x)), as the dynamo exporter writes F.softplus (hand-built,
    so the graph is exactly this); with ``bypass_also_added`` x also reaches the output
    through an Add of its own: a real bypass."""
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Softplus", ["x"], ["sp"]),
             helper.make_node("Greater", ["x", "t"], ["c"]),
             helper.make_node("Where", ["c", "x", "sp"], ["w"])]
    out = "w"
    if bypass_also_added:
        nodes.append(helper.make_node("Add", ["w", "x"], ["y0"]))
        out = "y0"
    else:
        nodes[-1].output[0] = out = "y0"
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, [3])],
        [helper.make_tensor("t", TensorProto.FLOAT, [], [20.0])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_an_exporters_guard_is_not_a_bypass():
    """The guard's X branch carries x itself, around Softplus: the node's own witness
    decides (engine/attribution/guard.py), so x is attributed through Where (no autograd witness) and
    the case is not invalid; the guard says which branch is the bypass (true: slot 1)."""
    m = map_node(_guarded(), "Softplus", "", ["x"])
    assert not m.problems
    assert [(g.source, g.bypass_slot) for g in m.guards] == [("x", 1)]
    assert m.inputs[0].through == ("Where",)


def test_a_bypass_besides_the_guard_is_still_ambiguous():
    m = map_node(_guarded(bypass_also_added=True), "Softplus", "", ["x"])
    assert not m.guards
    assert "without passing through the Softplus node" in m.inputs[0].problem


def test_the_guard_note_says_whether_a_probe_point_took_the_bypass():
    """x > 20 selects x itself: no element of [0, 1, 2] does, one of [0, 1, 25] does."""
    import numpy as np
    from torch_prover.engine.attribution.guard import bypass_taken
    model = _guarded()
    (guard,) = map_node(model, "Softplus", "", ["x"]).guards
    below = {"x": np.array([0.0, 1.0, 2.0], dtype=np.float32)}
    above = {"x": np.array([0.0, 1.0, 25.0], dtype=np.float32)}
    assert bypass_taken(model, guard, [below]) is False
    assert bypass_taken(model, guard, [below, above]) is True
