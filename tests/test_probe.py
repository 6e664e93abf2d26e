"""Every evidence class of docs/design.md §1.1, each shown by a real case."""
import torch

from torch_prover.case import Bool, Case, Float, Int
from torch_prover.engine.probe import probe


def _ev(case):
    r = probe(case)
    return ({e.label: e.evidence for e in r.inputs}, {k: e.evidence for k, e in r.params.items()},
            [e.evidence for e in r.outputs])


def reshape(x):
    return torch.reshape(x, (-1,))


def floor(x):
    return torch.floor(x)


def shape(x):
    return torch._shape_as_tensor(x)


def topk(x):
    return torch.topk(x, 2)


def detached(x):
    return x * 2, torch.ones(3, dtype=x.dtype)


def mixed_floor(x, y):
    return torch.floor(x) + y


class Lin(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)

    def forward(self, x):
        return self.lin(x)


def test_grad_and_param_grad():
    ins, params, outs = _ev(Case("Gemm", "t_lin", Lin, (Float(4, 3),)))
    assert ins == {"x0": "grad"} and params == {"lin.weight": "grad", "lin.bias": "grad"}
    assert outs == ["grad"]


def test_zero_grad_on_every_seed():
    ins, _, outs = _ev(Case("Floor", "t_floor", floor, (Float(3, 4, low=-2.5, high=2.5),)))
    assert ins == {"x0": "zero-grad"} and outs == ["zero-grad"]


def test_zero_grad_input_beside_a_grad_input():
    ins, _, _ = _ev(Case("Floor", "t_mixed", mixed_floor, (Float(3), Float(3))))
    assert ins == {"x0": "zero-grad", "x1": "grad"}


def test_no_grad_and_integer_output():
    ins, _, outs = _ev(Case("Shape", "t_shape", shape, (Float(2, 3),)))
    assert ins == {"x0": "no-grad"} and outs == ["integer"]


def test_integer_and_bool_inputs():
    def gather(data, idx, cond):
        return torch.where(cond, data.index_select(0, idx), 0.0)
    ins, _, _ = _ev(Case("Gather", "t_gather", gather, (Float(4, 3), Int(4, high=4), Bool(4, 3))))
    assert ins == {"x0": "grad", "x1": "integer", "x2": "integer"}


def test_topk_indices_integer_output():
    _, _, outs = _ev(Case("TopK", "t_topk", topk, (Float(5),)))
    assert outs == ["grad", "integer"]


def test_detached_output():
    _, _, outs = _ev(Case("Mul", "t_detached", detached, (Float(3),)))
    assert outs == ["grad", "detached"]


def test_a_refused_derivative_is_unsupported_not_no_grad():
    """PyTorch refuses d zeta(x, q)/dx ("not implemented"): a gap in PyTorch, attributed to
    that one input, and not evidence that zeta is flat in x (it is not: the math says
    d zeta/dx = -sum log(n+q)/(n+q)^x)."""
    def zeta(x, q):
        return torch.special.zeta(x, q)
    case = Case("Add", "t_refuse", zeta, (Float(3, low=2.0, high=3.0), Float(3, low=1.0, high=2.0)))
    r = probe(case)
    assert [e.evidence for e in r.inputs] == ["unsupported", "grad"]
    assert "not implemented" in r.inputs[0].detail


class _Crash(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("INTERNAL ASSERT FAILED at alias_analysis.cpp:623")


def crashing_backward(x):
    return _Crash.apply(x)


def test_a_crashing_backward_is_a_broken_case_not_evidence():
    import pytest
    from torch_prover.errors import CaseError
    with pytest.raises(CaseError, match="backward crashed"):
        probe(Case("Mul", "t_crash", crashing_backward, (Float(3),)))


def shape_of(x):
    return torch._shape_as_tensor(x)


def test_dynamic_dynamo_export_of_a_plain_function():
    from torch_prover.engine.export import export_case
    case = Case("Shape", "t_dyn", shape_of, (Float(2, 3),), dynamic=True)
    e = export_case(case, case.build_module(), case.build_inputs(0), 1)
    assert "Shape" in [n.op_type for n in e.model.graph.node]
