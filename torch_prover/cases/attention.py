"""Attention (opset 23+): F.scaled_dot_product_attention exports to one Attention node.

SDPA has no KV cache and returns only Y, so a reference op written from the ONNX spec
(torch_prover/cases/reference.py) exercises the rest: past_key/past_value with the
present_key/present_value and qk_matmul_output outputs, and nonpad_kv_seqlen.
SwiGLU, LinearAttention and CausalConvWithState exist only from opset 27/28, which the
exporter cannot produce directly: their cases take the raised route (reference_new_ops.py).

Scales: runtimes apply sqrt(scale) to Q and to K, computing the square root in float32;
sqrt(0.25) = 0.5 is exact, so cases that set ``scale`` use 0.25 (the default 1/sqrt(4)
costs ~2e-8 forward error in onnxruntime, harmless but looser).
"""
import math
from typing import Optional

import torch
import torch.nn.functional as F

from ..case import Bool, Case, Custom, Float
from .reference import onnx_opset, reference_op

Tensor = torch.Tensor

_NO_CACHE = ("F.scaled_dot_product_attention has no KV-cache inputs and returns only Y; "
             "see the attention_kv_cache / attention_nonpad_kv_seqlen reference cases")


def attention_float_mask(q, k, v, mask):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def attention_bool_mask(q, k, v, mask):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def attention_causal_gqa_scale(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.25, enable_gqa=True)


# --------------------------------------------------------------------------- reference
def _attention_emit(Q, K, V, attn_mask, past_key, past_value, nonpad_kv_seqlen,
                    scale: float, qk_matmul_output_mode: int):
    return onnx_opset().Attention(Q, K, V, attn_mask, past_key, past_value, nonpad_kv_seqlen,
                                  scale=scale, qk_matmul_output_mode=qk_matmul_output_mode)


@reference_op("Attention", emit=_attention_emit)
def attention_ref(Q: Tensor, K: Tensor, V: Tensor, attn_mask: Optional[Tensor],
                  past_key: Optional[Tensor], past_value: Optional[Tensor],
                  nonpad_kv_seqlen: Optional[Tensor], scale: float,
                  qk_matmul_output_mode: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """ONNX Attention, 4D inputs, MHA, not causal, no softcap: (Y, present_key,
    present_value, qk_matmul_output). Modes 0 (scaled QK^T) and 3 (softmax) only."""
    present_key = K if past_key is None else torch.cat([past_key, K], dim=2)
    present_value = V if past_value is None else torch.cat([past_value, V], dim=2)
    qk = (Q @ present_key.transpose(-2, -1)) * scale
    bias = torch.zeros_like(qk)
    if attn_mask is not None:
        bias = bias + (attn_mask if attn_mask.is_floating_point() else
                       torch.where(attn_mask, 0.0, -math.inf).to(qk.dtype))
    if nonpad_kv_seqlen is not None:
        keep = torch.arange(qk.shape[-1]) < nonpad_kv_seqlen.reshape(-1, 1, 1, 1)
        bias = bias + torch.where(keep, 0.0, -math.inf).to(qk.dtype)
    probs = torch.softmax(qk + bias, dim=-1)
    y = probs @ present_value
    return y, present_key, present_value, (probs if qk_matmul_output_mode == 3 else qk)


def attention_kv_cache(q, k, v, mask, past_key, past_value):
    return attention_ref(q, k, v, mask, past_key, past_value, None, 0.25, 0)


def attention_softmax_output(q, k, v):
    y, _, _, probs = attention_ref(q, k, v, None, None, None, None, 0.25, 3)
    return y, probs


def _lengths(batch: int, low: int, high: int) -> Custom:
    return Custom(lambda gen, _: torch.randint(low, high + 1, (batch,), generator=gen))


def attention_nonpad_kv_seqlen(q, k, v, lengths):
    y, _, _, _ = attention_ref(q, k, v, None, None, None, lengths, 0.25, 0)
    return y


_UNEXERCISED = {"input 4": _NO_CACHE, "input 5": _NO_CACHE, "input 6": _NO_CACHE,
                "output 1": _NO_CACHE, "output 2": _NO_CACHE, "output 3": _NO_CACHE}

CASES = [
    Case("Attention", "attention_float_mask", attention_float_mask,
         (Float(1, 2, 3, 4), Float(1, 2, 5, 4), Float(1, 2, 5, 4), Float(3, 5)), ("q", "k", "v", "mask"),
         unexercised=_UNEXERCISED),
    Case("Attention", "attention_bool_mask", attention_bool_mask,
         (Float(1, 2, 3, 4), Float(1, 2, 5, 4), Float(1, 2, 5, 4), Bool(1, 1, 3, 5)), ("q", "k", "v", "mask"),
         unexercised={"input 3": "a bool mask here; the schema also allows a float (additive) "
                                 "mask, which attention_float_mask exercises", **_UNEXERCISED}),
    Case("Attention", "attention_causal_gqa_scale", attention_causal_gqa_scale,
         (Float(1, 4, 3, 4), Float(1, 2, 3, 4), Float(1, 2, 3, 4)), ("q", "k", "v"),
         unexercised={"input 3": "is_causal replaces the mask", **_UNEXERCISED}),
    Case("Attention", "attention_kv_cache", attention_kv_cache,
         (Float(1, 2, 3, 4), Float(1, 2, 3, 4), Float(1, 2, 3, 4), Float(3, 5), Float(1, 2, 2, 4), Float(1, 2, 2, 4)),
         ("q", "k", "v", "mask", "past_key", "past_value"), kind="reference",
         translation=attention_ref.translation,
         unexercised={"input 6": "ONNX forbids nonpad_kv_seqlen together with past_key; see "
                                 "attention_nonpad_kv_seqlen"}),
    Case("Attention", "attention_softmax_output", attention_softmax_output,
         (Float(1, 2, 3, 4), Float(1, 2, 5, 4), Float(1, 2, 5, 4)), ("query", "key", "value"),
         kind="reference", translation=attention_ref.translation,
         unexercised={"input 3": "covered by attention_kv_cache",
                      "input 4": "covered by attention_kv_cache",
                      "input 5": "covered by attention_kv_cache",
                      "input 6": "covered by attention_nonpad_kv_seqlen"},
         notes="qk_matmul_output_mode=3: qk_matmul_output is the softmax of the scores. "
               "Inputs are not named q/k/v: the exporter names the unused present_key/"
               "present_value node outputs 'v' and 'v_1', which would clash with an input "
               "'v' (onnx.checker: not SSA)"),
    Case("Attention", "attention_nonpad_kv_seqlen", attention_nonpad_kv_seqlen,
         (Float(2, 2, 3, 4), Float(2, 2, 5, 4), Float(2, 2, 5, 4), _lengths(2, 2, 5)),
         ("q", "k", "v", "nonpad_kv_seqlen"), kind="reference",
         fails_at={23: "Attention-23 has no nonpad_kv_seqlen input (input 6, added in "
                       "Attention-24): this module passes one"},
         translation=attention_ref.translation,
         unexercised={"input 3": "covered by attention_kv_cache",
                      "input 4": "ONNX forbids past_key together with nonpad_kv_seqlen",
                      "input 5": "ONNX forbids past_value together with nonpad_kv_seqlen",
                      "output 1": "covered by attention_kv_cache",
                      "output 2": "covered by attention_kv_cache",
                      "output 3": "covered by attention_kv_cache"}),
]
