"""Reference cases: integer / quantized ops and MelWeightMatrix.

No PyTorch function exports to DynamicQuantizeLinear, MatMulInteger, ConvInteger,
QLinearMatMul, QLinearConv or MelWeightMatrix (torch.ao's quantized ops export, if at all,
as QuantizeLinear/DequantizeLinear around float ops; torch has no mel filterbank). Each
gets a PyTorch reference written from the ONNX spec (see torch_prover/cases/reference.py), whose
forward the engine checks against onnxruntime / the onnx reference evaluator.

What the evidence can say here:

* MatMulInteger, ConvInteger: every input and the output are int8/uint8/int32 by the
  schema: ``integer`` evidence, non-differentiable by type.
* QLinearMatMul, QLinearConv: the float scales are real inputs of the computation, but
  the output is int8/uint8 (``round`` then saturate, then a cast): autograd has no path
  from an integer output back to a scale, so the scales are ``no-grad``; the function is
  piecewise constant in them anyway (round). Non-differentiable, as QLinearMatMul's tags
  say; proposed for QLinearConv (tags unknown).
* DynamicQuantizeLinear: y and y_zero_point are uint8; y_scale = (max(x, 0) - min(x, 0))
  / 255 is a float output with a true, nonzero derivative w.r.t. x (at the arg-max and
  arg-min elements). So x and y_scale get ``grad`` evidence: proposed differentiable
  (tags unknown), confirmed by finite differences of the ONNX op.
* MelWeightMatrix: the filterbank edges are ``floor``-ed FFT bin indices, so the output
  is piecewise constant in lower/upper_edge_hertz: ``zero-grad``, matching their
  non-differentiable tags.

float32 for the quantized ops: their float inputs/outputs (scales, DynamicQuantizeLinear's
x) are float/float16/bfloat16 only in the schema. Integer inputs stay in small ranges so
that the requantized outputs rarely saturate.
"""
from typing import Optional

import torch
import torch.nn.functional as F

from ..case import Case, Float, Int, Spec
from .reference_ops import pads_for_fn_pad
from .reference import reference_op

Tensor = torch.Tensor

_QRANGE = {torch.uint8: (0, 255), torch.int8: (-128, 127)}


# --------------------------------------------------------------------------- helpers
def _int_conv(x: Tensor, w: Tensor, x_zero_point: Optional[Tensor],
              w_zero_point: Optional[Tensor], group: int, pads: Optional[list[int]],
              strides: Optional[list[int]], dilations: Optional[list[int]]) -> Tensor:
    """sum (x - x_zero_point) * (w - w_zero_point) over each window, exactly, as float64
    (integer products of small ints are exact); w_zero_point may be per output channel.
    Padding contributes zero after the zero point is subtracted (ONNX pads x with its
    zero point)."""
    n = w.dim() - 2
    xf, wf = x.to(torch.float64), w.to(torch.float64)
    if x_zero_point is not None:
        xf = xf - x_zero_point.to(torch.float64)
    if w_zero_point is not None:
        zp = w_zero_point.to(torch.float64)
        wf = wf - (zp.reshape(-1, *[1] * (n + 1)) if zp.dim() == 1 else zp)
    xf = F.pad(xf, pads_for_fn_pad(pads or [0] * (2 * n), n))
    conv = (F.conv1d, F.conv2d, F.conv3d)[n - 1]
    return conv(xf, wf, stride=strides or 1, dilation=dilations or 1, groups=group)


def _requantize(acc: Tensor, scale: Tensor, y_zero_point: Tensor) -> Tensor:
    """saturate(round(acc * scale) + y_zero_point), in float32 like onnxruntime's
    requantization, cast to the zero point's type."""
    qmin, qmax = _QRANGE[y_zero_point.dtype]
    y = torch.round(acc.to(torch.float32) * scale) + y_zero_point.to(torch.float32)
    return y.clamp(qmin, qmax).to(y_zero_point.dtype)


# --------------------------------------------------------------------------- references
@reference_op("DynamicQuantizeLinear")
def dynamicquantizelinear(x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """uint8 affine quantization of x with a scale and zero point covering [min(x, 0),
    max(x, 0)] (a constant x, scale 1, is not modelled: the cases never have one)."""
    x_max = x.max().clamp(min=0)
    x_min = x.min().clamp(max=0)
    y_scale = (x_max - x_min) / 255
    y_zero_point = torch.round((0 - x_min / y_scale).clamp(0, 255))
    y = (torch.round(x / y_scale) + y_zero_point).clamp(0, 255)
    return y.to(torch.uint8), y_scale, y_zero_point.to(torch.uint8)


@reference_op("MatMulInteger")
def matmulinteger(A: Tensor, B: Tensor, a_zero_point: Optional[Tensor] = None,
                  b_zero_point: Optional[Tensor] = None) -> Tensor:
    """(A - a_zero_point) @ (B - b_zero_point) in int32; a_zero_point may be per row
    (shape [M]), b_zero_point per column (shape [N])."""
    a, b = A.to(torch.int32), B.to(torch.int32)
    if a_zero_point is not None:
        zp = a_zero_point.to(torch.int32)
        a = a - (zp.unsqueeze(-1) if zp.dim() == 1 else zp)
    if b_zero_point is not None:
        b = b - b_zero_point.to(torch.int32)
    return torch.matmul(a, b)


@reference_op("ConvInteger")
def convinteger(x: Tensor, w: Tensor, x_zero_point: Optional[Tensor] = None,
                w_zero_point: Optional[Tensor] = None, group: int = 1,
                pads: Optional[list[int]] = None, strides: Optional[list[int]] = None,
                dilations: Optional[list[int]] = None) -> Tensor:
    """Convolution of the zero-point-shifted integers, int32 accumulator."""
    acc = _int_conv(x, w, x_zero_point, w_zero_point, group, pads, strides, dilations)
    return torch.round(acc).to(torch.int32)


@reference_op("QLinearMatMul")
def qlinearmatmul(a: Tensor, a_scale: Tensor, a_zero_point: Tensor, b: Tensor,
                  b_scale: Tensor, b_zero_point: Tensor, y_scale: Tensor,
                  y_zero_point: Tensor) -> Tensor:
    """Integer matmul of the zero-point-shifted inputs, requantized with
    a_scale * b_scale / y_scale (b_scale/b_zero_point may be per column)."""
    acc = torch.matmul(a.to(torch.int32) - a_zero_point.to(torch.int32),
                       b.to(torch.int32) - b_zero_point.to(torch.int32))
    return _requantize(acc, a_scale * b_scale / y_scale, y_zero_point)


@reference_op("QLinearConv")
def qlinearconv(x: Tensor, x_scale: Tensor, x_zero_point: Tensor, w: Tensor,
                w_scale: Tensor, w_zero_point: Tensor, y_scale: Tensor, y_zero_point: Tensor,
                B: Optional[Tensor] = None, group: int = 1, pads: Optional[list[int]] = None,
                strides: Optional[list[int]] = None,
                dilations: Optional[list[int]] = None) -> Tensor:
    """Integer convolution (+ int32 bias B, whose scale is x_scale * w_scale), requantized
    with x_scale * w_scale / y_scale; w_scale/w_zero_point may be per output channel."""
    n = w.dim() - 2
    acc = _int_conv(x, w, x_zero_point, w_zero_point, group, pads, strides, dilations)
    if B is not None:
        acc = acc + B.to(torch.float64).reshape(1, -1, *[1] * n)
    scale = x_scale * w_scale / y_scale
    if scale.dim() == 1:
        scale = scale.reshape(1, -1, *[1] * n)
    return _requantize(acc, scale, y_zero_point)


@reference_op("MelWeightMatrix")
def melweightmatrix(num_mel_bins: int, dft_length: int, sample_rate: Tensor,
                    lower_edge_hertz: Tensor, upper_edge_hertz: Tensor,
                    output_datatype: int = 1) -> Tensor:
    """[dft_length // 2 + 1, num_mel_bins] triangular filters. The num_mel_bins + 2 edges
    are equally spaced in mel from lower_edge_hertz (in steps of the mel range divided by
    num_mel_bins + 2, as onnxruntime and the onnx reference compute it), converted back to
    Hz and floored to FFT bins; filter i rises from edge i to 1 at edge i+1 and falls to 0
    at edge i+2. num_mel_bins and dft_length are int64 constant inputs (they set the
    output shape)."""
    f64 = torch.float64
    n_spec = dft_length // 2 + 1
    low_mel = 2595 * torch.log10(1 + lower_edge_hertz.to(f64) / 700)
    high_mel = 2595 * torch.log10(1 + upper_edge_hertz.to(f64) / 700)
    step = (high_mel - low_mel) / (num_mel_bins + 2)
    mel = low_mel + torch.arange(num_mel_bins + 2, dtype=f64) * step
    hz = 700 * (torch.pow(10.0, mel / 2595) - 1)
    edges = torch.floor((dft_length + 1) * hz / sample_rate.to(f64))
    lo, mid, hi = edges[:-2], edges[1:-1], edges[2:]
    j = torch.arange(n_spec, dtype=f64).unsqueeze(1)
    rise = (j - lo) / torch.where(mid > lo, mid - lo, torch.ones_like(mid))
    fall = (hi - j) / torch.where(hi > mid, hi - mid, torch.ones_like(mid))
    out = torch.where(j == mid, torch.ones_like(rise),
                      torch.where((j >= lo) & (j < mid), rise,
                                  torch.where((j > mid) & (j < hi), fall,
                                              torch.zeros_like(rise))))
    return out.to({1: torch.float32, 11: torch.float64}[output_datatype])


# --------------------------------------------------------------------------- models
def dynamicquantizelinear_mixed_sign(x):
    return dynamicquantizelinear(x)


def dynamicquantizelinear_positive(x):
    return dynamicquantizelinear(x)


def matmulinteger_zero_points(A, B, a_zero_point, b_zero_point):
    return matmulinteger(A, B, a_zero_point, b_zero_point)


def matmulinteger_batched_int8(A, B):
    return matmulinteger(A, B)


def convinteger_zero_points(x, w, x_zero_point, w_zero_point):
    return convinteger(x, w, x_zero_point, w_zero_point, pads=[1, 0, 0, 1], strides=[2, 1])


def convinteger_grouped_1d(x, w):
    return convinteger(x, w, group=2, dilations=[2])


def qlinearmatmul_uint8(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
                        y_zero_point):
    return qlinearmatmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
                         y_zero_point)


def qlinearmatmul_int8_batched(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
                               y_zero_point):
    return qlinearmatmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
                         y_zero_point)


def qlinearconv_bias(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
                     y_zero_point, B):
    return qlinearconv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
                       y_zero_point, B, pads=[1, 1, 1, 1], strides=[2, 2])


def qlinearconv_per_channel(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
                            y_zero_point):
    return qlinearconv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
                       y_zero_point, group=2, dilations=[2])


def melweightmatrix_float(sample_rate, lower_edge_hertz, upper_edge_hertz):
    return melweightmatrix(4, 48, sample_rate, lower_edge_hertz, upper_edge_hertz)


def melweightmatrix_double(sample_rate, lower_edge_hertz, upper_edge_hertz):
    return melweightmatrix(3, 40, sample_rate, lower_edge_hertz, upper_edge_hertz,
                           output_datatype=11)


# --------------------------------------------------------------------------- inputs
u8, i8, i32, f32 = torch.uint8, torch.int8, torch.int32, torch.float32


def _scale(*shape: int) -> Spec:
    """A positive float32 scale (scalar or per channel)."""
    return Float(*shape, low=0.02, high=0.08, dtype=f32)


_Q_NAMES = ("a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale",
            "y_zero_point")
_QC_NAMES = ("x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale",
             "y_zero_point")
_F32 = "float32: the schema's float inputs/outputs here are float/float16/bfloat16 only"
_FLOAT8 = ("QLinearMatMul-21 also allows float8 (e4m3fn, e5m2 ...) for it, and no case can "
           "check a float8 QLinearMatMul: onnxruntime 1.31 has no kernel for it "
           "(NOT_IMPLEMENTED) and the onnx reference evaluator fails on it (np.iinfo: "
           "'Invalid integer data type'); a finite-difference step would also vanish in "
           "float8 rounding. The int8/uint8 cases show only the integer types")
_FLOAT8_PARAMS = {k: _FLOAT8 for k in ("input 0", "input 2", "input 3", "input 5", "input 7",
                                       "output 0")}

CASES = [
    Case("DynamicQuantizeLinear", "dynamicquantizelinear_mixed_sign",
         dynamicquantizelinear_mixed_sign, (Float(3, 4),), ("x",), kind="reference",
         translation=dynamicquantizelinear.translation, float_dtype=f32,
         notes=_F32 + "; x has both signs: y_scale = (max x - min x) / 255, so x's gradient "
               "(through the float output y_scale only; y and y_zero_point are uint8) sits "
               "on its arg-max and arg-min"),
    Case("DynamicQuantizeLinear", "dynamicquantizelinear_positive",
         dynamicquantizelinear_positive, (Float(2, 5, low=0.5, high=3.0),), ("x",),
         kind="reference", translation=dynamicquantizelinear.translation, float_dtype=f32,
         notes=_F32 + "; x > 0: the range is [0, max x], zero point 0, y_scale = max x / 255"),
    Case("MatMulInteger", "matmulinteger_zero_points", matmulinteger_zero_points,
         (Int(3, 4, dtype=u8, high=256), Int(4, 2, dtype=i8, low=-128, high=128),
          Int(dtype=u8, high=256), Int(2, dtype=i8, low=-128, high=128)),
         ("A", "B", "a_zero_point", "b_zero_point"), kind="reference",
         translation=matmulinteger.translation,
         notes="uint8 A with a scalar zero point, int8 B with per-column zero points"),
    Case("MatMulInteger", "matmulinteger_batched_int8", matmulinteger_batched_int8,
         (Int(2, 3, 4, dtype=i8, low=-128, high=128), Int(4, 2, dtype=i8, low=-128, high=128)),
         ("A", "B"), kind="reference", translation=matmulinteger.translation,
         notes="int8 x int8, batched A, no zero points (optional inputs absent)"),
    Case("ConvInteger", "convinteger_zero_points", convinteger_zero_points,
         (Int(1, 2, 4, 5, dtype=u8, high=256), Int(3, 2, 2, 2, dtype=u8, high=256),
          Int(dtype=u8, high=256), Int(dtype=u8, high=256)),
         ("x", "w", "x_zero_point", "w_zero_point"), kind="reference",
         translation=convinteger.translation,
         notes="uint8 x and w with scalar zero points; asymmetric pads, stride 2 on H"),
    Case("ConvInteger", "convinteger_grouped_1d", convinteger_grouped_1d,
         (Int(1, 4, 7, dtype=u8, high=256), Int(2, 2, 3, dtype=u8, high=256)),
         ("x", "w"), kind="reference", translation=convinteger.translation,
         notes="1-D, group=2, dilation 2, no zero points (optional inputs absent)"),
    Case("QLinearMatMul", "qlinearmatmul_uint8", qlinearmatmul_uint8,
         (Int(3, 4, dtype=u8, low=100, high=160), _scale(), Int(dtype=u8, low=120, high=136),
          Int(4, 2, dtype=u8, low=100, high=160), _scale(), Int(dtype=u8, low=120, high=136),
          _scale(), Int(dtype=u8, low=120, high=136)),
         _Q_NAMES, kind="reference", translation=qlinearmatmul.translation, float_dtype=f32,
         unexercised=_FLOAT8_PARAMS,
         notes=_F32 + "; the output is uint8 (round, saturate, cast): autograd has no path "
               "from it to the scales"),
    Case("QLinearMatMul", "qlinearmatmul_int8_batched", qlinearmatmul_int8_batched,
         (Int(2, 3, 4, dtype=i8, low=-30, high=30), _scale(), Int(dtype=i8, low=-8, high=8),
          Int(4, 2, dtype=i8, low=-30, high=30), _scale(), Int(dtype=i8, low=-8, high=8),
          _scale(), Int(dtype=i8, low=-8, high=8)),
         _Q_NAMES, kind="reference", translation=qlinearmatmul.translation, float_dtype=f32,
         notes=_F32 + "; int8 throughout, batched a"),
    Case("QLinearConv", "qlinearconv_bias", qlinearconv_bias,
         (Int(1, 2, 4, 4, dtype=u8, low=100, high=160), _scale(), Int(dtype=u8, low=120, high=136),
          Int(3, 2, 3, 3, dtype=u8, low=100, high=160), _scale(),
          Int(dtype=u8, low=120, high=136), _scale(), Int(dtype=u8, low=120, high=136),
          Int(3, dtype=i32, low=-200, high=200)),
         _QC_NAMES + ("B",), kind="reference", translation=qlinearconv.translation,
         float_dtype=f32,
         notes=_F32 + "; uint8, per-tensor scales, int32 bias, pads 1, stride 2"),
    Case("QLinearConv", "qlinearconv_per_channel", qlinearconv_per_channel,
         (Int(1, 4, 7, dtype=u8, low=100, high=160), _scale(), Int(dtype=u8, low=120, high=136),
          Int(2, 2, 3, dtype=i8, low=-30, high=30), _scale(2), Int(2, dtype=i8, low=-3, high=4),
          _scale(), Int(dtype=u8, low=120, high=136)),
         _QC_NAMES, kind="reference", translation=qlinearconv.translation, float_dtype=f32,
         notes=_F32 + "; 1-D, group=2, dilation 2, int8 weights with per-output-channel "
               "scales and zero points, no bias"),
    Case("MelWeightMatrix", "melweightmatrix_float", melweightmatrix_float,
         (Int(dtype=torch.int64, low=8000, high=9001), Float(low=20.0, high=300.0),
          Float(low=3000.0, high=4000.0)),
         ("sample_rate", "lower_edge_hertz", "upper_edge_hertz"), kind="reference",
         translation=melweightmatrix.translation, float_dtype=f32,
         notes="num_mel_bins=4, dft_length=48 as int64 constants (they set the output "
               "shape); float32 edges and output (the default output_datatype): "
               "onnxruntime's kernel has no float64 edges, so this case runs there"),
    Case("MelWeightMatrix", "melweightmatrix_double", melweightmatrix_double,
         (Int(dtype=torch.int64, low=8000, high=9001), Float(low=0.0, high=200.0),
          Float(low=2500.0, high=4000.0)),
         ("sample_rate", "lower_edge_hertz", "upper_edge_hertz"), kind="reference",
         translation=melweightmatrix.translation,
         notes="float64 edges and output (output_datatype=11), 3 mel bins of a 40-point "
               "DFT; onnxruntime has no float64-edge kernel, the onnx reference evaluator "
               "runs it. sample_rate is int64 like the constants: T1 binds all three"),
]
