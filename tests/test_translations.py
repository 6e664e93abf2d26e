"""torch-prover's own translations (pr/translations.py, issue 41 item 2).

Each translation is exported with the dynamo exporter (the runner's re-export of a
TorchScript-era script) and held to two facts from outside the tool: the graph holds the
ONNX op (read from the model), and onnxruntime's outputs of that model equal PyTorch's
eager outputs of the same module on random inputs. Where the ONNX op's meaning is narrower
than the ATen op's (Clip's bounds are scalars), the graph must not hold the op, and the
outputs must still equal PyTorch's.
"""
from __future__ import annotations

import warnings

import numpy as np
import onnxruntime as ort
import pytest
import torch
import torch.nn.functional as F

from torch_prover.engine.export import quiet
from torch_prover.pr.translations import names, table


def _export(module: torch.nn.Module, args: tuple, opset: int):
    with quiet(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(module, args, dynamo=True, opset_version=opset,
                                    custom_translation_table=table(opset))
    return program.model_proto


def _ops(model) -> list[str]:
    return [n.op_type for n in model.graph.node]


def _run(model, args: tuple) -> list[np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {i.name: a.numpy() for i, a in zip(sess.get_inputs(), args)}
    return sess.run(None, feeds)


class Clamp(torch.nn.Module):
    def forward(self, x, lo, hi):
        return torch.clamp(x, lo, hi)


class ClampMin(torch.nn.Module):
    def forward(self, x, lo):
        return torch.clamp(x, min=lo)


class ClampMax(torch.nn.Module):
    def forward(self, x, hi):
        return torch.clamp(x, max=hi)


@pytest.mark.parametrize("module, bounds", [
    (Clamp(), (-0.5, 0.5)),
    (Clamp(), (0.5, -0.5)),          # min > max: both say every element becomes max
    (ClampMin(), (0.1,)),
    (ClampMax(), (-0.2,)),
])
def test_clamp_with_scalar_tensor_bounds_is_one_clip_node_equal_to_torch(module, bounds):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, generator=gen)
    args = (x, *(torch.tensor(b) for b in bounds))
    model = _export(module, args, 18)
    assert _ops(model) == ["Clip"]
    clip = model.graph.node[0]
    # the bounds are read straight from the graph's inputs (no Cast between)
    assert clip.input[0] == model.graph.input[0].name
    assert [i for i in clip.input[1:] if i] == [i.name for i in model.graph.input[1:]]
    for seed in range(3):
        x = torch.randn(3, 4, generator=torch.Generator().manual_seed(seed)) * 2
        args = (x, *(torch.tensor(b) for b in bounds))
        np.testing.assert_array_equal(_run(model, args)[0], module(*args).numpy())


@pytest.mark.parametrize("lo_shape", [(3, 4), (4,)])
def test_clamp_with_elementwise_bounds_is_not_clip_and_equals_torch(lo_shape):
    """Clip's min and max are scalars: elementwise bounds are not its meaning, so the
    translation writes Max and Min (as the exporter does without it)."""
    gen = torch.Generator().manual_seed(1)
    args = (torch.randn(3, 4, generator=gen), torch.randn(*lo_shape, generator=gen) - 1,
            torch.randn(*lo_shape, generator=gen) + 1)
    model = _export(Clamp(), args, 18)
    assert "Clip" not in _ops(model) and {"Max", "Min"} <= set(_ops(model))
    np.testing.assert_array_equal(_run(model, args)[0], Clamp()(*args).numpy())


def test_clamp_with_bounds_of_another_type_clips_their_casts_as_torch_does():
    """float64 bounds on a float32 tensor: torch casts them to float32 first (the exported
    program's ``_to_copy``: 0-d tensors do not promote), so Clip reads those casts, as the
    TorchScript exporter wrote it (Cast, Cast, Clip), with torch's outputs bit for bit."""
    gen = torch.Generator().manual_seed(2)
    for _ in range(3):
        args = (torch.randn(3, 4, generator=gen),
                torch.rand((), generator=gen, dtype=torch.float64) - 1,
                torch.rand((), generator=gen, dtype=torch.float64))
        model = _export(Clamp(), args, 18)
        assert sorted(_ops(model)) == ["Cast", "Cast", "Clip"]
        np.testing.assert_array_equal(_run(model, args)[0], Clamp()(*args).numpy())


class OneHot(torch.nn.Module):
    def forward(self, x):
        return F.one_hot(x, 5)


def test_one_hot_is_one_onehot_node_equal_to_torch():
    x = torch.tensor([[0, 3, 1, 4, 2, 0], [1, 1, 2, 3, 4, 0]])
    model = _export(OneHot(), (x,), 18)
    assert "OneHot" in _ops(model)
    for seed in range(3):
        x = torch.randint(0, 5, (2, 6), generator=torch.Generator().manual_seed(seed))
        got = _run(model, (x,))[0]
        want = F.one_hot(x, 5).numpy()
        assert got.dtype == want.dtype == np.int64
        np.testing.assert_array_equal(got, want)


class Grid(torch.nn.Module):
    def __init__(self, size, align):
        super().__init__()
        self.size, self.align = size, align

    def forward(self, theta):
        return F.affine_grid(theta, self.size, align_corners=self.align)


@pytest.mark.parametrize("size", [[2, 1, 3, 4], [2, 1, 2, 3, 4]])
@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_is_one_affinegrid_node_equal_to_torch(size, align):
    k = len(size) - 2
    theta = torch.randn(2, k, k + 1, generator=torch.Generator().manual_seed(0))
    model = _export(Grid(size, align), (theta,), 20)
    assert _ops(model) == ["AffineGrid"]
    for seed in range(3):
        theta = torch.randn(2, k, k + 1, generator=torch.Generator().manual_seed(seed))
        np.testing.assert_allclose(_run(model, (theta,))[0], Grid(size, align)(theta).numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_a_translation_is_offered_only_where_the_opset_has_its_op():
    """Every op offered at an opset is one onnx.defs has there; AffineGrid is new in 20,
    Clip's tensor bounds in 11 (Clip-11), NegativeLogLikelihoodLoss in 12 (13 is the one
    translated: its types)."""
    import onnx
    first = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain == "":
            first[schema.name] = min(first.get(schema.name, 99), schema.since_version)
    for opset in range(1, 26):
        assert all(first[op] <= opset for op in names(opset)), opset
    assert "AffineGrid" in names(20) and "AffineGrid" not in names(19)
    assert "Clip" in names(11) and "Clip" not in names(10)
    assert "NegativeLogLikelihoodLoss" not in names(12)
    assert torch.ops.aten.affine_grid_generator.default not in table(18)


class Pool(torch.nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.pool = getattr(F, f"adaptive_avg_pool{dims}d")

    def forward(self, x):
        return self.pool(x, 1)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_adaptive_average_pool_to_one_is_one_globalaveragepool_node_equal_to_torch(dims):
    shape = (2, 3) + (5, 4, 3)[:dims]
    model = _export(Pool(dims), (torch.randn(*shape),), 18)
    assert _ops(model) == ["GlobalAveragePool"]
    for seed in range(3):
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
        np.testing.assert_allclose(_run(model, (x,))[0], Pool(dims)(x).numpy(),
                                   rtol=1e-6, atol=1e-6)


def test_adaptive_average_pool_to_another_size_is_refused_by_the_translation():
    """Pooling to 2x2 is not GlobalAveragePool: the translation refuses the call (the runner
    then exports without it, below) rather than write another op."""
    class Pool2(torch.nn.Module):
        def forward(self, x):
            return F.adaptive_avg_pool2d(x, 2)
    with pytest.raises(Exception, match="not GlobalAveragePool"):
        _export(Pool2(), (torch.randn(1, 2, 4, 4),), 18)


def test_the_runner_exports_without_its_translations_when_one_refuses():
    """The runner's plans for a TorchScript script: dynamo with the translations, then dynamo
    without them (the exporter's decomposition); a dynamo script never gets them."""
    from torch_prover.pr.export import _plans
    for opset, at in ((20, 20), (13, 18)):
        plans = _plans({"dynamo": False, "opset_version": opset})[1:]
        assert [("custom_translation_table" in o, o["opset_version"]) for o, _ in plans] == [
            (True, at), (False, at)]
        assert "own translation" in plans[0][1] and "without" in plans[1][1]
    assert not any("custom_translation_table" in o
                   for o, _ in _plans({"dynamo": True, "opset_version": 13}))


class Nll(torch.nn.Module):
    def __init__(self, reduction, ignore_index):
        super().__init__()
        self.reduction, self.ignore_index = reduction, ignore_index

    def forward(self, x, target, weight):
        return F.nll_loss(x, target, weight=weight, reduction=self.reduction,
                          ignore_index=self.ignore_index)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 4, 5)])
def test_nll_loss_is_one_negativeloglikelihoodloss_node_equal_to_torch(reduction, shape):
    def args(seed):
        gen = torch.Generator().manual_seed(seed)
        return (torch.randn(*shape, generator=gen).log_softmax(1),
                torch.randint(0, 3, shape[:1] + shape[2:], generator=gen),
                torch.rand(3, generator=gen) + 0.1)
    module = Nll(reduction, 1)
    model = _export(module, args(0), 18)
    assert _ops(model) == ["NegativeLogLikelihoodLoss"]
    for seed in range(3):
        np.testing.assert_allclose(_run(model, args(seed))[0], module(*args(seed)).numpy(),
                                   rtol=1e-5, atol=1e-6)


class Draw(torch.nn.Module):
    def __init__(self, fn, dtype):
        super().__init__()
        self.fn, self.dtype = fn, dtype

    def forward(self, x):
        return self.fn(300, 400, dtype=self.dtype) + 0 * x.sum()


@pytest.mark.parametrize("fn, onnx_op", [(torch.rand, "RandomUniform"),
                                          (torch.randn, "RandomNormal")])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_rand_and_randn_of_a_fixed_shape_draw_from_the_same_distribution(fn, onnx_op, dtype):
    """Draws differ between generators; what must agree is the op (with the shape and type
    attributes torch's call gives) and the distribution: U[0, 1) or N(0, 1), whose mean and
    deviation 120 000 draws hold to +-0.01."""
    model = _export(Draw(fn, dtype), (torch.zeros(1),), 18)
    node = next(n for n in model.graph.node if n.op_type == onnx_op)
    attrs = {a.name: a for a in node.attribute}
    assert list(attrs["shape"].ints) == [300, 400]
    got = _run(model, (torch.zeros(1),))[0]
    assert got.shape == (300, 400) and got.dtype == {torch.float32: np.float32,
                                                     torch.float64: np.float64}[dtype]
    if fn is torch.rand:
        assert got.min() >= 0 and got.max() < 1
        assert abs(got.mean() - 0.5) < 0.01 and abs(got.std() - (1 / 12) ** 0.5) < 0.01
    else:
        assert abs(got.mean()) < 0.01 and abs(got.std() - 1) < 0.01
