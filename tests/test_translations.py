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
    """AffineGrid is new in opset 20, Clip's tensor bounds and OneHot-11's in 11 (onnx.defs)."""
    import onnx
    first = {op: min(s.since_version for s in onnx.defs.get_all_schemas_with_history()
                     if s.name == op and s.domain == "") for op in ("AffineGrid", "OneHot")}
    assert first["AffineGrid"] == 20
    assert "AffineGrid" in names(20) and "AffineGrid" not in names(19)
    assert {"Clip", "OneHot"} <= set(names(11)) and not names(10)
    assert torch.ops.aten.affine_grid_generator.default not in table(18)
