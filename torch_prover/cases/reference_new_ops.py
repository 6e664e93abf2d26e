"""Ops new in opsets 26-28: CumProd (26), SwiGLU (28), CausalConvWithState and
LinearAttention (27) as reference cases at their own opset, through the private-domain route
(``engine/versions/next_opset.py``): the node is emitted as ``torch_prover.next::<Op>``, exported at
opset 25, then moved into ai.onnx and the model raised to 26/27/28.

Why the direct route fails (measured with torch 2.13, onnxscript 0.7.2, onnx 1.23.2):
torch's dynamo exporter always builds the model at opset 18 (torchlib's opset), then
converts it to the asked opset. onnxscript's converter handles 18..25; for 26-28 it falls
back to ``onnx.version_converter`` (the C API), which walks the opsets one by one and
needs an adapter for every node whose op has a schema at the next version. For an op new
at version V it has none ("No Adapter From Version $V-1 for CumProd"); the exporter logs
that as a warning and keeps the unconverted model, which declares opset 18. So a
reference op emitting the node at V in ai.onnx gives an opset-18 model (export.py refuses
it), and emitting it at V in a model asked for an opset below V leaves a node onnx.checker
rejects ("No Op registered for SwiGLU with domain_version of 26"). Models without such an
op do export at 26, 27 and 28 (Add; Conv1d + CumSum + Relu), so the fallback to 18 is
specific to graphs holding a node the C converter has no adapter for.

Runtimes: onnxruntime 1.31 runs CumProd-26; it refuses opset 27 ("under development") and
the IR version 14 opset 28 needs, so SwiGLU, CausalConvWithState and LinearAttention run in
the onnx reference evaluator, which implements all four (the records say which ran).
CausalConvWithState and LinearAttention allow float16/bfloat16/float32 only: float32 cases.

The case graphs hold the new node alone (plus a Constant for CumProd's axis): an op whose
schema changed between 25 and the case's opset (Cast-28, Range-27 ...) would make the
export stage refuse the case rather than relabel it.
"""
import math
from typing import Optional

import onnx
import torch
import torch.nn.functional as F

from ..case import Case, Expect, Float
from .reference import reference_op

Tensor = torch.Tensor


# --------------------------------------------------------------------------- CumProd
@reference_op("CumProd", opset=26)
def cumprod(x: Tensor, axis: int, exclusive: int = 0, reverse: int = 0) -> Tensor:
    """Cumulative product along ``axis``; ``exclusive`` shifts in a 1 (the j-th output is the
    product of the first j-1 elements), ``reverse`` runs from the end."""
    y = x.flip(axis) if reverse else x
    if exclusive:
        n = y.shape[axis]
        y = torch.cat([torch.ones_like(y.narrow(axis, 0, 1)), y.narrow(axis, 0, n - 1)], axis)
    y = torch.cumprod(y, dim=axis)
    return y.flip(axis) if reverse else y


def cumprod_axis1(x):
    return cumprod(x, 1)


def cumprod_exclusive(x):
    return cumprod(x, -1, exclusive=1)


def cumprod_reverse_exclusive(x):
    return cumprod(x, 0, exclusive=1, reverse=1)


# --------------------------------------------------------------------------- SwiGLU
@reference_op("SwiGLU", opset=28)
def swiglu(A: Tensor, B: Tensor, alpha: float = 1.0) -> Tensor:
    """Swish_alpha(A) * B = A * sigmoid(alpha * A) * B. With alpha = 1 it is Llama's MLP gate,
    ``F.silu(gate_proj(x)) * up_proj(x)``, with the two projections computed upstream."""
    return A * torch.sigmoid(alpha * A) * B


def swiglu_gate_value(gate, value):
    return swiglu(gate, value)


def swiglu_alpha(gate, value):
    return swiglu(gate, value, alpha=1.75)


# --------------------------------------------------------------------------- CausalConvWithState
@reference_op("CausalConvWithState", opset=27)
def causal_conv_with_state(input: Tensor, weight: Tensor, bias: Optional[Tensor],
                           past_state: Optional[Tensor],
                           activation: str = "none") -> tuple[Tensor, Tensor]:
    """Depthwise causal conv1d over ``[past_state, input]`` (zeros for an absent state),
    weight (C, 1, k); optional SiLU. present_state: the last k-1 positions of that
    concatenation (the state the next call continues from)."""
    batch, channels, _ = input.shape
    k = weight.shape[2]
    if past_state is None:
        past_state = input.new_zeros(batch, channels, k - 1)
    padded = torch.cat([past_state, input], dim=2)
    y = F.conv1d(padded, weight, bias, groups=channels)
    if activation in ("silu", "swish"):
        y = F.silu(y)
    return y, padded[:, :, padded.shape[2] - (k - 1):]


def causal_conv_prefill(x, weight, bias, past_state):
    return causal_conv_with_state(x, weight, bias, past_state)


def causal_conv_silu_no_state(x, weight, bias):
    return causal_conv_with_state(x, weight, bias, None, activation="silu")


_CONV_STATE_IN = ("past_state is tagged non-differentiable, but the first k-1 outputs are "
                  "weight-weighted sums of it (dy/dpast_state = the kernel taps) and "
                  "present_state copies it when the input is shorter than k-1")
_CONV_STATE_OUT = ("present_state is tagged non-differentiable, but it is the last k-1 "
                   "positions of [past_state, input], a copy: its derivative in the input is "
                   "the identity")


# --------------------------------------------------------------------------- LinearAttention
@reference_op("LinearAttention", opset=27)
def linear_attention(query: Tensor, key: Tensor, value: Tensor, past_state: Optional[Tensor],
                     decay: Optional[Tensor], beta: Optional[Tensor], q_num_heads: int,
                     kv_num_heads: int, update_rule: str = "gated_delta",
                     scale: float = 0.0) -> tuple[Tensor, Tensor]:
    """The schema's recurrence, token by token, on (B, T, H*D) inputs and a (B, H_kv, d_k,
    d_v) state: decay S by exp(g_t) (gated rules), replace v_t by beta_t (v_t - S^T k_t)
    (delta rules), S += k_t (x) v_t, o_t = scale q_t^T S (query head h reads KV head
    h // (q_num_heads / kv_num_heads)); scale 0 means 1/sqrt(d_k)."""
    b, t_len, _ = query.shape
    d_k = query.shape[-1] // q_num_heads
    d_v = value.shape[-1] // kv_num_heads
    q = query.reshape(b, t_len, q_num_heads, d_k).transpose(1, 2)
    k = key.reshape(b, t_len, kv_num_heads, d_k).transpose(1, 2)
    v = value.reshape(b, t_len, kv_num_heads, d_v).transpose(1, 2)
    state = (past_state if past_state is not None
             else query.new_zeros(b, kv_num_heads, d_k, d_v))
    scale = scale or 1.0 / math.sqrt(d_k)
    outputs = []
    for t in range(t_len):
        v_t = v[:, :, t]
        if update_rule in ("gated", "gated_delta"):
            # per-head (B, T, H_kv) or per-key-dim (B, T, H_kv * d_k) log-decay
            state = state * decay[:, t].reshape(b, kv_num_heads, -1, 1).exp()
        if update_rule in ("delta", "gated_delta"):
            retrieved = torch.einsum("bhdm,bhd->bhm", state, k[:, :, t])
            v_t = beta[:, t].reshape(b, -1, 1) * (v_t - retrieved)
        state = state + k[:, :, t, :, None] * v_t[:, :, None, :]
        read = state.repeat_interleave(q_num_heads // kv_num_heads, dim=1)
        outputs.append(scale * torch.einsum("bhd,bhdm->bhm", q[:, :, t], read))
    out = torch.stack(outputs, dim=2).transpose(1, 2).reshape(b, t_len, q_num_heads * d_v)
    return out, state


def linear_attention_gated_delta(query, key, value, past_state, decay, beta):
    return linear_attention(query, key, value, past_state, decay, beta, 2, 2)


def linear_attention_linear_gqa(query, key, value):
    return linear_attention(query, key, value, None, None, None, 4, 2, update_rule="linear")


_LA_STATE_IN = ("past_state is tagged non-differentiable, but every output reads it: "
                "o_t = scale q_t^T S_t with S_t linear in S_0 (decayed by exp(g), corrected "
                "by -beta k k^T S)")
_LA_STATE_OUT = ("present_state is tagged non-differentiable, but it is S_T, a smooth "
                 "function of key, value, decay and beta (S_t = exp(g_t) S_{t-1} + "
                 "beta_t k_t (x) (v_t - ...))")
_LA_RULE = "update_rule='linear' forbids {}; see linear_attention_gated_delta"

_F32 = ("the schema allows float16/bfloat16/float32 only; the reference evaluator runs it "
        "(onnxruntime 1.31 refuses opset 27)")

# --------------------------------------------------------------------------- BitCast
_DTYPES = {onnx.TensorProto.INT32: torch.int32, onnx.TensorProto.UINT32: torch.uint32,
           onnx.TensorProto.FLOAT: torch.float32, onnx.TensorProto.BFLOAT16: torch.bfloat16,
           onnx.TensorProto.FLOAT16: torch.float16}


@reference_op("BitCast", opset=26)
def bitcast(input: Tensor, to: int) -> Tensor:
    """The same bytes read as ``to`` (an ONNX TensorProto data type): ``Tensor.view(dtype)``."""
    return input.view(_DTYPES[to])


_BITS = ("float16 -> bfloat16 keeps the bits: the value is not a differentiable function of "
         "the input (a mantissa carry lands in bfloat16's exponent), PyTorch's view(dtype) "
         "tracks no gradient, and the numeric witness cannot difference float16/bfloat16 "
         "(too coarse for two steps): no witness can decide, so it stays inconclusive")


def bitcast_float_to_int32(x):
    return bitcast(x, onnx.TensorProto.INT32)


def bitcast_float16_to_bfloat16(x):
    return bitcast(x, onnx.TensorProto.BFLOAT16)


CASES = [
    Case("CumProd", "cumprod_axis1", cumprod_axis1, (Float(3, 4),), ("x",), opset=26,
         kind="reference", translation=cumprod.translation),
    Case("CumProd", "cumprod_exclusive", cumprod_exclusive, (Float(2, 3, 4),), ("x",),
         opset=26, kind="reference", translation=cumprod.translation),
    Case("CumProd", "cumprod_reverse_exclusive", cumprod_reverse_exclusive, (Float(4, 3),),
         ("x",), opset=26, kind="reference", translation=cumprod.translation),
    Case("SwiGLU", "swiglu_gate_value", swiglu_gate_value, (Float(3, 4), Float(3, 4)),
         ("gate", "value"), opset=28, kind="reference", translation=swiglu.translation),
    Case("SwiGLU", "swiglu_alpha", swiglu_alpha, (Float(2, 5), Float(2, 5)),
         ("gate", "value"), opset=28, kind="reference", translation=swiglu.translation,
         notes="alpha 1.75 is dyadic: ONNX's float32 attribute holds it exactly"),
    Case("CausalConvWithState", "causal_conv_prefill", causal_conv_prefill,
         (Float(2, 3, 5), Float(3, 1, 3), Float(3), Float(2, 3, 2)),
         ("x", "weight", "bias", "past_state"), opset=27, kind="reference",
         translation=causal_conv_with_state.translation, float_dtype=torch.float32,
         expect={"input 3": Expect("disagree", _CONV_STATE_IN),
                 "output 1": Expect("disagree", _CONV_STATE_OUT)}, notes=_F32),
    Case("CausalConvWithState", "causal_conv_silu_no_state", causal_conv_silu_no_state,
         (Float(1, 4, 6), Float(4, 1, 4), Float(4)), ("x", "weight", "bias"), opset=27,
         kind="reference", translation=causal_conv_with_state.translation,
         float_dtype=torch.float32,
         expect={"output 1": Expect("disagree", _CONV_STATE_OUT)},
         unexercised={"input 3": "absent here (zeros); see causal_conv_prefill"}, notes=_F32),
    Case("LinearAttention", "linear_attention_gated_delta", linear_attention_gated_delta,
         (Float(2, 3, 8), Float(2, 3, 8), Float(2, 3, 6), Float(2, 2, 4, 3),
          Float(2, 3, 2, low=-1.0, high=-0.1), Float(2, 3, 2, low=0.2, high=0.8)),
         ("query", "key", "value", "past_state", "decay", "beta"), opset=27,
         kind="reference", translation=linear_attention.translation,
         float_dtype=torch.float32,
         expect={"input 3": Expect("disagree", _LA_STATE_IN),
                 "output 1": Expect("disagree", _LA_STATE_OUT)},
         notes=_F32 + "; d_k = 4, so the default scale 1/sqrt(d_k) = 0.5 is exact"),
    Case("LinearAttention", "linear_attention_linear_gqa", linear_attention_linear_gqa,
         (Float(1, 4, 16), Float(1, 4, 8), Float(1, 4, 6)), ("query", "key", "value"),
         opset=27, kind="reference", translation=linear_attention.translation,
         float_dtype=torch.float32,
         expect={"output 1": Expect("disagree", _LA_STATE_OUT)},
         unexercised={"input 3": "absent here (zeros); see linear_attention_gated_delta",
                      "input 4": _LA_RULE.format("decay"), "input 5": _LA_RULE.format("beta")},
         notes=_F32 + "; 4 query heads share 2 KV heads (GQA)"),
    Case("BitCast", "bitcast_float_to_int32", bitcast_float_to_int32, (Float(3, 4),), ("x",),
         opset=26, kind="reference", translation=bitcast.translation, float_dtype=torch.float32,
         unexercised={"output 0": "int32 here, which carries no gradient; the schema also "
                                  "allows float outputs (see bitcast_float16_to_bfloat16)"},
         notes="float32: BitCast keeps the bit width, so int32 needs a 32-bit float"),
    Case("BitCast", "bitcast_float16_to_bfloat16", bitcast_float16_to_bfloat16, (Float(3, 4),),
         ("x",), opset=26, kind="reference", translation=bitcast.translation,
         float_dtype=torch.float16,
         expect={"input 0": Expect("inconclusive", _BITS), "output 0": Expect("inconclusive", _BITS)},
         notes="the only same-width float pair PyTorch has besides float8: float16 -> bfloat16"),
]
