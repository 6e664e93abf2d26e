"""QuantizeLinear / DequantizeLinear.

Two PyTorch routes:
- fake quantization (torch.fake_quantize_per_tensor_affine / _per_channel_affine) exports
  QuantizeLinear -> DequantizeLinear in one graph; PyTorch differentiates it with the
  straight-through estimator (gradient 1 inside the range), while the exported function is
  piecewise constant, so finite differences of the ONNX model see a zero derivative;
- the quantized_decomposed ops (quantize_per_tensor / dequantize_per_tensor) export one
  node each, with an int8 tensor crossing the graph boundary.

float32 throughout: the exporter casts float64 to float32 around QuantizeLinear anyway
(scale is float32), so float64 would only add Cast nodes.
"""
import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  registers quantized_decomposed ops

from ..case import Case, Float, Int
from ..conventions import Applies, Convention

_STE = ("fake_quantize's backward is a straight-through estimator (dy passed through where x "
        "is in range), not the derivative of the piecewise-constant quantizer")


def fake_quant_int8(x):
    return torch.fake_quantize_per_tensor_affine(x, 0.1, 3, -128, 127)


def fake_quant_uint8(x):
    return torch.fake_quantize_per_tensor_affine(x, 0.05, 128, 0, 255)


def fake_quant_per_channel(x):
    scale = torch.tensor([0.1, 0.2, 0.05])
    zero_point = torch.tensor([0, 3, -2], dtype=torch.int32)
    return torch.fake_quantize_per_channel_affine(x, scale, zero_point, 1, -128, 127)


def quantize_decomposed(x):
    return torch.ops.quantized_decomposed.quantize_per_tensor(x, 0.1, 3, -128, 127,
                                                               torch.int8)


def dequantize_decomposed(q):
    return torch.ops.quantized_decomposed.dequantize_per_tensor(q, 0.1, 3, -128, 127,
                                                                 torch.int8)


_FQ = dict(float_dtype=torch.float32)
_FLOAT8_X = {"input 0": Applies(
    Convention.QUANTIZED_STORAGE,
    "x allows integer types, which carry no gradient, and float8/float4 ones: for a float8 x, "
    "y = (x - x_zero_point) * x_scale is linear in x (dy/dx = x_scale)")}

CASES = [
    Case("QuantizeLinear", "quantizelinear_fake_quant_int8", fake_quant_int8, (Float(2, 3),),
         ("x",), surrogate={"input 0": _STE},
         notes="QuantizeLinear is followed by DequantizeLinear (the target's int8 output "
               "reaches the graph output through it)", **_FQ),
    Case("QuantizeLinear", "quantizelinear_fake_quant_per_channel", fake_quant_per_channel,
         (Float(2, 3),), ("x",), surrogate={"input 0": _STE},
         notes="per-channel scales and zero points (axis=1), int8", **_FQ),
    Case("QuantizeLinear", "quantizelinear_decomposed", quantize_decomposed,
         (Float(2, 3, low=-5.0, high=5.0),), ("x",),
         notes="quantized_decomposed.quantize_per_tensor: QuantizeLinear alone, int8 output",
         **_FQ),
    Case("DequantizeLinear", "dequantizelinear_fake_quant_uint8", fake_quant_uint8,
         (Float(2, 3),), ("x",), conventions=_FLOAT8_X,
         notes="DequantizeLinear reads QuantizeLinear's uint8 output (zero point 128)", **_FQ),
    Case("DequantizeLinear", "dequantizelinear_decomposed", dequantize_decomposed,
         (Int(2, 3, low=-128, high=128, dtype=torch.int8),), ("q",), conventions=_FLOAT8_X,
         notes="quantized_decomposed.dequantize_per_tensor: DequantizeLinear alone on an "
               "int8 graph input", **_FQ),
]

# DynamicQuantizeLinear, QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger: reference
# cases in reference_quant.py (no exporter rule produces them).
