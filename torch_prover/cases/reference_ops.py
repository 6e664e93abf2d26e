"""Reference cases: ONNX ops that no PyTorch function exports to.

Each op gets a PyTorch reference written from the ONNX operator spec with ordinary
differentiable torch ops, bound to the real ONNX op by :func:`reference_op` (see
torch_prover/cases/reference.py): the probe runs the reference with autograd, the export emits
exactly one node of the op, and the engine's numeric check (forward and finite-difference
VJP of the exported model against PyTorch) is what confirms that the ONNX op computes the
reference's function. Reference parameters are named like the ONNX attributes they become.

Covered: Size, Mean, Sum, Shrink, Softsign, ThresholdedRelu, Hardmax, LpPool, LRN,
ReverseSequence, RotaryEmbedding, SpaceToDepth, CenterCropPad, TensorScatter, Compress,
and three-input Max/Min (PyTorch's maximum/minimum are binary).

Inputs keep away from kinks (Shrink's +-lambd, ThresholdedRelu's alpha, |x| at 0) by
construction, so finite differences are valid; Hardmax/Max inputs are continuous normals
(no ties). Float attributes are dyadic (0.25, 0.375 ...) so ONNX's float32 attributes
hold them exactly.
"""
from typing import Optional

import torch
import torch.nn.functional as F

from ..case import Case, Custom, Expect, Float, Int, Fixed
from ..conventions import Applies, Convention
from .reference import reference_op

Tensor = torch.Tensor


def _away_from(*kinks: float, shape: tuple[int, ...], scale: float = 1.5, gap: float = 0.1):
    """Normal samples (times ``scale``) moved at least ``gap`` away from every kink."""

    def make(gen: torch.Generator, float_dtype: torch.dtype) -> Tensor:
        x = scale * torch.randn(shape, generator=gen, dtype=torch.float64)
        for k in kinks:
            near = (x - k).abs() < gap
            x = torch.where(near, k + gap * torch.where(x >= k, 1.0, -1.0) * 2, x)
        return x.to(float_dtype)

    return Custom(make)


# --------------------------------------------------------------------------- references
@reference_op("Size", fake=lambda data: data.new_empty((), dtype=torch.int64))
def size(data: Tensor) -> Tensor:
    """Number of elements, as an int64 scalar (the fake keeps a dynamic numel symbolic)."""
    return torch.tensor(data.numel(), dtype=torch.int64)


@reference_op("Mean")
def mean2(data_0: Tensor, data_1: Tensor) -> Tensor:
    return (data_0 + data_1) / 2


@reference_op("Mean")
def mean3(data_0: Tensor, data_1: Tensor, data_2: Tensor) -> Tensor:
    return (data_0 + data_1 + data_2) / 3


@reference_op("Sum")
def sum2(data_0: Tensor, data_1: Tensor) -> Tensor:
    return data_0 + data_1


@reference_op("Sum")
def sum3(data_0: Tensor, data_1: Tensor, data_2: Tensor) -> Tensor:
    return data_0 + data_1 + data_2


@reference_op("Shrink")
def shrink(input: Tensor, lambd: float = 0.5, bias: float = 0.0) -> Tensor:
    zero = torch.zeros_like(input)
    return torch.where(input < -lambd, input + bias,
                       torch.where(input > lambd, input - bias, zero))


@reference_op("Softsign")
def softsign(input: Tensor) -> Tensor:
    return input / (1 + input.abs())


@reference_op("ThresholdedRelu")
def thresholdedrelu(X: Tensor, alpha: float = 1.0) -> Tensor:
    return torch.where(X > alpha, X, torch.zeros_like(X))


@reference_op("Hardmax")
def hardmax(input: Tensor, axis: int = -1) -> Tensor:
    """One-hot of the first maximum along ``axis``.

    ``1 + sign(x - max)`` is 1 at every maximum and 0 elsewhere; the cumulative-sum mask
    keeps the first one. Written with sign (whose derivative PyTorch defines as 0) so the
    reference's gradient is the true derivative of a piecewise-constant function: zero.
    """
    at_max = 1 + torch.sign(input - input.amax(dim=axis, keepdim=True))
    first = torch.cumsum(at_max.detach(), dim=axis) == 1
    return at_max * first


def pads_for_fn_pad(pads: list[int], n: int) -> list[int]:
    """ONNX pads [x1_begin, x2_begin, ..., x1_end, x2_end] -> F.pad's last-dim-first pairs."""
    out: list[int] = []
    for d in reversed(range(n)):
        out += [pads[d], pads[d + n]]
    return out


@reference_op("LpPool")
def lppool(X: Tensor, kernel_shape: list[int], p: int = 2,
           strides: Optional[list[int]] = None, pads: Optional[list[int]] = None,
           dilations: Optional[list[int]] = None) -> Tensor:
    """(sum over each window of |x|^p)^(1/p); zero padding; any number of spatial dims."""
    n = len(kernel_shape)
    strides = strides or [1] * n
    dilations = dilations or [1] * n
    pads = pads or [0] * (2 * n)
    y = F.pad(X.abs().pow(p), pads_for_fn_pad(pads, n))
    for d in range(n):
        span = dilations[d] * (kernel_shape[d] - 1) + 1
        y = y.unfold(2 + d, span, strides[d])[..., ::dilations[d]]
    return y.flatten(-n).sum(-1).pow(1.0 / p)


@reference_op("LRN")
def lrn(X: Tensor, size: int, alpha: float = 0.0001, beta: float = 0.75,
        bias: float = 1.0) -> Tensor:
    """x / (bias + alpha/size * sum of x^2 over channels [c - floor((size-1)/2), c + ceil(...)])."""
    before = (size - 1) // 2
    after = size - 1 - before
    sq = F.pad(X.square(), [0, 0] * (X.dim() - 2) + [before, after])
    square_sum = sq.unfold(1, size, 1).sum(-1)
    return X / (bias + alpha / size * square_sum).pow(beta)


@reference_op("ReverseSequence")
def reversesequence(input: Tensor, sequence_lens: Tensor, batch_axis: int = 1,
                    time_axis: int = 0) -> Tensor:
    """Reverse the first sequence_lens[b] steps along time_axis of each batch entry b."""
    steps = input.shape[time_axis]
    t = torch.arange(steps).unsqueeze(1)                      # [T, 1]
    lens = sequence_lens.unsqueeze(0)                          # [1, B]
    src = torch.where(t < lens, lens - 1 - t, t)               # [T, B]: source step
    if time_axis > batch_axis:
        src = src.T
    shape = [1] * input.dim()
    shape[time_axis], shape[batch_axis] = steps, input.shape[batch_axis]
    return torch.gather(input, time_axis, src.reshape(shape).expand(input.shape))


@reference_op("RotaryEmbedding")
def rotaryembedding(X: Tensor, cos_cache: Tensor, sin_cache: Tensor,
                    position_ids: Optional[Tensor] = None, interleaved: int = 0,
                    num_heads: int = 0, rotary_embedding_dim: int = 0) -> Tensor:
    """RoPE: rotate pairs (halves, or even/odd if interleaved) of the first
    rotary_embedding_dim features of each head by the cached cos/sin of its position."""
    shape = X.shape
    if X.dim() == 4:                                           # [B, H, S, D] -> [B, S, H, D]
        x = X.transpose(1, 2)
    else:                                                      # [B, S, H*D] -> [B, S, H, D]
        x = X.reshape(shape[0], shape[1], num_heads, shape[2] // num_heads)
    rot = rotary_embedding_dim or x.shape[-1]
    if position_ids is not None:                               # caches [P, rot/2]
        cos, sin = cos_cache[position_ids], sin_cache[position_ids]
    else:                                                      # caches [B, S, rot/2]
        cos, sin = cos_cache, sin_cache
    cos, sin = cos.unsqueeze(2), sin.unsqueeze(2)              # [B, S, 1, rot/2]
    x_rot, x_pass = x[..., :rot], x[..., rot:]
    if interleaved:
        x1, x2 = x_rot[..., 0::2], x_rot[..., 1::2]
    else:
        x1, x2 = x_rot.chunk(2, dim=-1)
    real, imag = cos * x1 - sin * x2, sin * x1 + cos * x2
    if interleaved:
        x_rot = torch.stack((real, imag), dim=-1).flatten(-2)
    else:
        x_rot = torch.cat((real, imag), dim=-1)
    y = torch.cat((x_rot, x_pass), dim=-1)
    return y.transpose(1, 2) if X.dim() == 4 else y.reshape(shape)


@reference_op("SpaceToDepth")
def spacetodepth(input: Tensor, blocksize: int) -> Tensor:
    """Blocks of blocksize x blocksize pixels become channels, block offset major (DCR)."""
    b, c, h, w = input.shape
    bs = blocksize
    t = input.reshape(b, c, h // bs, bs, w // bs, bs).permute(0, 3, 5, 1, 2, 4)
    return t.reshape(b, c * bs * bs, h // bs, w // bs)


@reference_op("CenterCropPad")
def centercroppad(input_data: Tensor, shape: list[int],
                  axes: Optional[list[int]] = None) -> Tensor:
    """Center-crop or zero-pad each axis in ``axes`` to ``shape`` (the extra element of an
    odd difference goes to the end). ``shape`` is a constant int64 input of the node."""
    rank = input_data.dim()
    y = input_data
    for a, target in zip([a % rank for a in (axes or range(rank))], shape):
        dim = y.shape[a]
        if target < dim:
            y = y.narrow(a, (dim - target) // 2, target)
        elif target > dim:
            before = (target - dim) // 2
            pad = [0, 0] * (rank - 1 - a) + [before, target - dim - before]
            y = F.pad(y, pad)
    return y


@reference_op("TensorScatter")
def tensorscatter(past_cache: Tensor, update: Tensor, write_indices: Optional[Tensor] = None,
                  mode: str = "linear", axis: int = -2) -> Tensor:
    """present = past_cache with update[b] written at write_indices[b] (default 0) along
    ``axis`` of each batch entry b (modulo the cache length if mode is circular)."""
    rank = past_cache.dim()
    axis = axis % rank
    batch, length, n_new = past_cache.shape[0], past_cache.shape[axis], update.shape[axis]
    if write_indices is None:
        write_indices = torch.zeros(batch, dtype=torch.int64)
    offset = torch.arange(length).unsqueeze(0) - write_indices.unsqueeze(1)   # [B, S]
    if mode == "circular":
        offset = offset.remainder(length)
    written = (offset >= 0) & (offset < n_new)
    shape = [1] * rank
    shape[0], shape[axis] = batch, length
    index = offset.clamp(0, n_new - 1).reshape(shape).expand(past_cache.shape)
    from_update = torch.gather(update, axis, index)
    return torch.where(written.reshape(shape), from_update, past_cache)


@reference_op("Max")
def max3(data_0: Tensor, data_1: Tensor, data_2: Tensor) -> Tensor:
    return torch.maximum(torch.maximum(data_0, data_1), data_2)


@reference_op("Min")
def min3(data_0: Tensor, data_1: Tensor, data_2: Tensor) -> Tensor:
    return torch.minimum(torch.minimum(data_0, data_1), data_2)


def _compress_shape(input, condition, axis=None):
    """The kept length is data (the number of True in condition): an unbacked size."""
    kept = torch.library.get_ctx().new_dynamic_size()
    if axis is None:
        return input.new_empty((kept,))
    shape = list(input.shape)
    shape[axis] = kept
    return input.new_empty(shape)


@reference_op("Compress", fake=_compress_shape)
def compress(input: Tensor, condition: Tensor, axis: Optional[int] = None) -> Tensor:
    """The slices along ``axis`` (of the flattened input if None) where condition is True;
    a condition shorter than the axis counts as False beyond its end."""
    if axis is None:
        return input.flatten()[:condition.numel()][condition]
    return input.index_select(axis, torch.nonzero(condition).flatten())


# --------------------------------------------------------------------------- models
def size_dynamic(x):
    return size(x)


def mean_two(a, b):
    return mean2(a, b)


def mean_three_broadcast(a, b, c):
    return mean3(a, b, c)


def sum_two(a, b):
    return sum2(a, b)


def sum_three_broadcast(a, b, c):
    return sum3(a, b, c)


def shrink_default(x):
    return shrink(x)


def shrink_bias(x):
    return shrink(x, lambd=1.0, bias=0.25)


def softsign_basic(x):
    return softsign(x)


def thresholdedrelu_default(x):
    return thresholdedrelu(x)


def thresholdedrelu_alpha(x):
    return thresholdedrelu(x, alpha=0.375)


def hardmax_last(x):
    return hardmax(x)


def hardmax_axis0(x):
    return hardmax(x, axis=0)


def lppool_2d(x):
    return lppool(x, kernel_shape=[2, 2], p=2)


def lppool_strided(x):
    return lppool(x, kernel_shape=[2, 3], p=3, strides=[2, 1], pads=[1, 0, 0, 1],
                  dilations=[1, 2])


def lppool_1d(x):
    return lppool(x, kernel_shape=[3], p=1, strides=[2])


def lrn_size3(x):
    return lrn(x, size=3, alpha=0.5, beta=0.75, bias=2.0)


def lrn_size5(x):
    return lrn(x, size=5, alpha=0.25, beta=0.625, bias=1.5)


def reversesequence_time_major(x, sequence_lens):
    return reversesequence(x, sequence_lens)


def reversesequence_batch_major(x, sequence_lens):
    return reversesequence(x, sequence_lens, batch_axis=0, time_axis=1)


def rotaryembedding_position_ids(x, cos_cache, sin_cache, position_ids):
    return rotaryembedding(x, cos_cache, sin_cache, position_ids)


def rotaryembedding_interleaved_3d(x, cos_cache, sin_cache):
    return rotaryembedding(x, cos_cache, sin_cache, interleaved=1, num_heads=2,
                           rotary_embedding_dim=4)


def spacetodepth_2(x):
    return spacetodepth(x, blocksize=2)


def centercroppad_crop_and_pad(x):
    return centercroppad(x, shape=[2, 7], axes=[1, 2])


def centercroppad_all_axes(x):
    return centercroppad(x, shape=[3, 2, 5])


def tensorscatter_linear(past_cache, update, write_indices):
    return tensorscatter(past_cache, update, write_indices)


def tensorscatter_circular(past_cache, update, write_indices):
    return tensorscatter(past_cache, update, write_indices, mode="circular", axis=1)


def tensorscatter_no_indices(past_cache, update):
    return tensorscatter(past_cache, update)


def max_three_broadcast(a, b, c):
    return max3(a, b, c)


def min_three_broadcast(a, b, c):
    return min3(a, b, c)


def compress_axis1(x, condition):
    return compress(x, condition, axis=1)


def compress_flat(x, condition):
    return compress(x, condition)


_ROPE_NOTES = ("float32: RotaryEmbedding's type constraint T excludes double "
               "(onnx.checker rejects a float64 node)")
_LRN_NOTES = ("float32: onnxruntime has no float64 LRN kernel, and the fallback "
              "onnx.reference LRN is wrong (it loops over the batch dimension instead of "
              "the channels), so it cannot confirm anything; onnxruntime accepts only odd "
              "sizes, so no case has an even (asymmetric) window")
_SHRINK_NOTES = ("float32: onnxruntime's float64 Shrink kernel computes in float32 "
                 "(Shrink(1.1) - 1.1 = 2.4e-8), too coarse for float64 finite differences")
_NO_BROADCAST = ("{op}-6 has no broadcasting (all inputs one shape; from {op}-8 they "
                 "broadcast): this case's [2, 3], [3] and [1, 3] do")
_HARDMAX = Expect("disagree", "Hardmax is piecewise constant (a one-hot of the argmax): the "
                              "piecewise-constant convention makes it non-differentiable, as "
                              "ONNX tags Floor, Sign and ArgMax; the schema says differentiable")
_HARDMAX_MATH = Applies(Convention.PIECEWISE_CONSTANT,
                        "Hardmax is a one-hot of the argmax: its derivative is zero wherever "
                        "it exists and it jumps where two values tie")

CASES = [
    Case("Size", "size_dynamic", size_dynamic, (Float(2, 3, 4),), ("x",), kind="reference",
         translation=size.translation, dynamic=True,
         notes="dynamic dims so that Size is not folded into a constant"),
    Case("Mean", "mean_two", mean_two, (Float(2, 3), Float(2, 3)), ("a", "b"), kind="reference",
         translation=mean2.translation),
    Case("Mean", "mean_three_broadcast", mean_three_broadcast, (Float(2, 3), Float(3), Float(1, 3)),
         ("a", "b", "c"), kind="reference", translation=mean3.translation,
         fails_at={6: _NO_BROADCAST.format(op="Mean")}),
    Case("Sum", "sum_two", sum_two, (Float(2, 3), Float(2, 3)), ("a", "b"), kind="reference",
         translation=sum2.translation),
    Case("Sum", "sum_three_broadcast", sum_three_broadcast, (Float(2, 3), Float(3), Float(1, 3)),
         ("a", "b", "c"), kind="reference", translation=sum3.translation,
         fails_at={6: _NO_BROADCAST.format(op="Sum")}),
    Case("Shrink", "shrink_default", shrink_default, (_away_from(-0.5, 0.5, shape=(3, 4)),),
         ("x",), kind="reference", translation=shrink.translation,
         float_dtype=torch.float32, notes=_SHRINK_NOTES),
    Case("Shrink", "shrink_bias", shrink_bias, (_away_from(-1.0, 1.0, shape=(3, 4)),), ("x",),
         kind="reference", translation=shrink.translation,
         float_dtype=torch.float32, notes=_SHRINK_NOTES),
    Case("Softsign", "softsign_basic", softsign_basic, (Float(3, 4),), ("x",), kind="reference",
         translation=softsign.translation),
    Case("ThresholdedRelu", "thresholdedrelu_default", thresholdedrelu_default,
         (_away_from(1.0, shape=(3, 4)),), ("x",), kind="reference",
         translation=thresholdedrelu.translation),
    Case("ThresholdedRelu", "thresholdedrelu_alpha", thresholdedrelu_alpha,
         (_away_from(0.375, shape=(3, 4)),), ("x",), kind="reference",
         translation=thresholdedrelu.translation),
    Case("Hardmax", "hardmax_last", hardmax_last, (Float(3, 4),), ("x",), kind="reference",
         translation=hardmax.translation, expect={"input 0": _HARDMAX, "output 0": _HARDMAX},
         conventions={"input 0": _HARDMAX_MATH, "output 0": _HARDMAX_MATH}),
    Case("Hardmax", "hardmax_axis0", hardmax_axis0, (Float(3, 4),), ("x",), kind="reference",
         translation=hardmax.translation, expect={"input 0": _HARDMAX, "output 0": _HARDMAX},
         fails_at={v: f"Hardmax-{v} coerces the input to 2-D at axis 0 (one hardmax over all "
                      f"12 elements); this module takes it per column (Hardmax-13)"
                   for v in (1, 11)},
         conventions={"input 0": _HARDMAX_MATH, "output 0": _HARDMAX_MATH}),
    Case("LpPool", "lppool_2d", lppool_2d, (Float(1, 2, 4, 4),), ("x",), kind="reference",
         translation=lppool.translation),
    Case("LpPool", "lppool_strided", lppool_strided, (Float(1, 2, 5, 6),), ("x",),
         kind="reference", translation=lppool.translation,
         fails_at={v: f"LpPool-{v} has no dilations (from LpPool-18) and this case dilates "
                      f"([1, 2]): lppool_2d and lppool_1d prove LpPool-{v}"
                   for v in (2, 11)}),
    Case("LpPool", "lppool_1d", lppool_1d, (_away_from(0.0, shape=(2, 2, 7)),), ("x",),
         kind="reference", translation=lppool.translation,
         notes="p=1: |x| has a kink at 0, so inputs keep away from 0"),
    Case("LRN", "lrn_size3", lrn_size3, (Float(1, 5, 2, 2),), ("x",), kind="reference",
         translation=lrn.translation, float_dtype=torch.float32, notes=_LRN_NOTES),
    Case("LRN", "lrn_size5", lrn_size5, (Float(2, 6, 3, 1),), ("x",), kind="reference",
         translation=lrn.translation, float_dtype=torch.float32, notes=_LRN_NOTES),
    Case("ReverseSequence", "reversesequence_time_major", reversesequence_time_major,
         (Float(4, 3, 2), Int(3, low=1, high=5)), ("x", "sequence_lens"), kind="reference",
         translation=reversesequence.translation),
    Case("ReverseSequence", "reversesequence_batch_major", reversesequence_batch_major,
         (Float(3, 4, 2), Int(3, low=1, high=5)), ("x", "sequence_lens"), kind="reference",
         translation=reversesequence.translation),
    Case("RotaryEmbedding", "rotaryembedding_position_ids", rotaryembedding_position_ids,
         (Float(2, 2, 3, 4), Float(5, 2), Float(5, 2), Int(2, 3, high=5)),
         ("x", "cos_cache", "sin_cache", "position_ids"), kind="reference",
         translation=rotaryembedding.translation, float_dtype=torch.float32,
         notes=_ROPE_NOTES),
    Case("RotaryEmbedding", "rotaryembedding_interleaved_3d", rotaryembedding_interleaved_3d,
         (Float(2, 3, 12), Float(2, 3, 2), Float(2, 3, 2)), ("x", "cos_cache", "sin_cache"),
         kind="reference", translation=rotaryembedding.translation, float_dtype=torch.float32,
         notes=_ROPE_NOTES + "; 3D input with num_heads=2, partial rotation "
                             "(rotary_embedding_dim=4 of head size 6), no position_ids"),
    Case("SpaceToDepth", "spacetodepth_2", spacetodepth_2, (Float(1, 2, 4, 6),), ("x",),
         kind="reference", translation=spacetodepth.translation),
    Case("CenterCropPad", "centercroppad_crop_and_pad", centercroppad_crop_and_pad,
         (Float(2, 5, 4),), ("x",), kind="reference", translation=centercroppad.translation,
         notes="axes=[1, 2]: axis 1 cropped 5 -> 2 (odd difference), axis 2 padded 4 -> 7"),
    Case("CenterCropPad", "centercroppad_all_axes", centercroppad_all_axes, (Float(3, 4, 3),),
         ("x",), kind="reference", translation=centercroppad.translation,
         notes="no axes attribute: every axis; unchanged, cropped, padded"),
    Case("TensorScatter", "tensorscatter_linear", tensorscatter_linear,
         (Float(2, 2, 5, 3), Float(2, 2, 2, 3), Int(2, high=4)),
         ("past_cache", "update", "write_indices"), kind="reference",
         translation=tensorscatter.translation),
    Case("TensorScatter", "tensorscatter_circular", tensorscatter_circular,
         (Float(3, 4, 2), Float(3, 3, 2), Int(3, high=4)), ("past_cache", "update", "write_indices"),
         kind="reference", translation=tensorscatter.translation,
         notes="circular mode wraps writes past the end of the cache; axis=1 of a 3-D cache"),
    Case("TensorScatter", "tensorscatter_no_indices", tensorscatter_no_indices,
         (Float(2, 4, 2), Float(2, 1, 2)), ("past_cache", "update"), kind="reference",
         translation=tensorscatter.translation),
    Case("Max", "max_three_broadcast", max_three_broadcast, (Float(2, 3), Float(3), Float(1, 3)),
         ("a", "b", "c"), kind="reference", translation=max3.translation,
         fails_at={6: _NO_BROADCAST.format(op="Max")},
         notes="torch.maximum takes two tensors; three inputs exercise the variadic data_0"),
    Case("Min", "min_three_broadcast", min_three_broadcast, (Float(2, 3), Float(3), Float(1, 3)),
         ("a", "b", "c"), kind="reference", translation=min3.translation,
         fails_at={6: _NO_BROADCAST.format(op="Min")},
         notes="torch.minimum takes two tensors; three inputs exercise the variadic data_0"),
    Case("Compress", "compress_axis1", compress_axis1, (Float(2, 5), Fixed([True, False, True, True])),
         ("x", "condition"), kind="reference", translation=compress.translation,
         notes="condition shorter than axis 1 (4 of 5); boolean masking in PyTorch exports "
               "NonZero + GatherND, so Compress needs a reference"),
    Case("Compress", "compress_flat", compress_flat,
         (Float(2, 3), Fixed([False, True, True, False, True])), ("x", "condition"),
         kind="reference", translation=compress.translation,
         notes="no axis: the flattened input"),
]
