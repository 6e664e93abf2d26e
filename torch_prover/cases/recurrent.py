"""RNN, GRU, LSTM through PyTorch's functional kernels (torch.rnn_tanh / torch.gru /
torch.lstm), so every weight is a graph input of its own.

PyTorch keeps two bias vectors (b_ih, b_hh) where ONNX has one B = [Wb, Rb]; the cases
take one bias input ``b`` and split it, so B depends on exactly one tensor. The exporters
reorder gates (PyTorch r,z,n / i,f,g,o; ONNX z,r,h / i,o,f,c) with Slice/Concat glue.

ONNX tags initial_h (and LSTM's initial_c) non-differentiable, but the outputs depend
smoothly on the initial state: PyTorch gives it a nonzero gradient and ONNX finite
differences agree, so those cases declare the disagreement.

sequence_lens: the TorchScript exporter turns pack_padded_sequence(x, lengths) around the
kernel into the sequence_lens input (the dynamo exporter cannot trace packing).

LSTM's peephole weights P have no PyTorch counterpart: ``lstm_peephole_p`` is a reference
case, the recurrence written from the ONNX spec.
"""
from typing import Optional

import torch
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from ..case import Case, Expect, Float, Fixed
from .reference import onnx_opset, reference_op

H = 3  # hidden size; input size 2, sequence length 4, batch 1 (2 when packed)

_STATE = ("{} is tagged non-differentiable, but Y and Y_h depend smoothly on the initial "
          "state (h_1 = f(W x_1 + R h_0 + b)): PyTorch gives it a nonzero gradient and ONNX "
          "finite differences confirm it")
_NO_PEEPHOLE = "PyTorch's LSTM has no peephole weights: see lstm_peephole_p (reference)"
_PACKED = "see the *_packed_sequence_lens case"


def rnn_h0_bias(x, h0, w_ih, w_hh, b):
    y, h = torch.rnn_tanh(x, h0, [w_ih, w_hh, b[:H], b[H:]], True, 1, 0.0, False, False, False)
    return y, h


def _rnn_emit(X, W, R, B, initial_h, hidden_size: int):
    Y, Y_h = onnx_opset().RNN(X, W, R, B, None, initial_h, hidden_size=hidden_size)
    return Y, Y_h


@reference_op("RNN", emit=_rnn_emit)
def rnn_tanh_ref(X: torch.Tensor, W: torch.Tensor, R: torch.Tensor, B: torch.Tensor,
                 initial_h: torch.Tensor, hidden_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """RNN, forward, tanh (the schema's defaults): H_t = tanh(X_t W^T + H_(t-1) R^T + Wb +
    Rb); Y stacks every H_t (seq, 1, batch, hidden), Y_h is the last."""
    h, ys = initial_h[0], []
    for t in range(X.shape[0]):
        h = torch.tanh(X[t] @ W[0].T + h @ R[0].T + B[0, :hidden_size] + B[0, hidden_size:])
        ys.append(h)
    return torch.stack(ys).unsqueeze(1), h.unsqueeze(0)


def rnn_h0_bias_ref(x, h0, w_ih, w_hh, b):
    return rnn_tanh_ref(x, w_ih.unsqueeze(0), w_hh.unsqueeze(0), b.unsqueeze(0), h0, H)


def gru_h0_bias(x, h0, w_ih, w_hh, b):
    y, h = torch.gru(x, h0, [w_ih, w_hh, b[:3 * H], b[3 * H:]], True, 1, 0.0, False, False,
                     False)
    return y, h


def lstm_h0_c0_bias(x, h0, c0, w_ih, w_hh, b):
    y, h, c = torch.lstm(x, [h0, c0], [w_ih, w_hh, b[:4 * H], b[4 * H:]], True, 1, 0.0, False,
                         False, False)
    return y, h, c


@reference_op("LSTM")
def lstm_peephole(X: torch.Tensor, W: torch.Tensor, R: torch.Tensor, B: torch.Tensor,
                  sequence_lens: Optional[torch.Tensor], initial_h: torch.Tensor,
                  initial_c: torch.Tensor, P: torch.Tensor, hidden_size: int
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Forward LSTM with peepholes (ONNX spec, default activations, gates i, o, f, c):
    i = sig(Wi x + Ri h + Pi*C_prev + b), f = sig(... + Pf*C_prev), c~ = tanh(...),
    C = f*C_prev + i*c~, o = sig(... + Po*C), h = o*tanh(C). sequence_lens must be None."""
    wb, rb = B[0].chunk(2)
    p_i, p_o, p_f = P[0].chunk(3)
    h, c = initial_h[0], initial_c[0]
    ys = []
    for x in X:
        i, o, f, g = (x @ W[0].T + h @ R[0].T + wb + rb).chunk(4, dim=-1)
        i, f = torch.sigmoid(i + p_i * c), torch.sigmoid(f + p_f * c)
        c = f * c + i * torch.tanh(g)
        h = torch.sigmoid(o + p_o * c) * torch.tanh(c)
        ys.append(h)
    return torch.stack(ys).unsqueeze(1), h.unsqueeze(0), c.unsqueeze(0)


def lstm_peephole_p(x, w, r, b, h0, c0, p):
    return lstm_peephole(x, w, r, b, None, h0, c0, p, hidden_size=2)


def _unpack(y, packed):
    out, _ = pad_packed_sequence(PackedSequence(y, packed.batch_sizes, packed.sorted_indices,
                                                packed.unsorted_indices))
    return out


def rnn_packed_sequence_lens(x, lengths, h0, w_ih, w_hh):
    p = pack_padded_sequence(x, lengths)
    y, h = torch.rnn_tanh(p.data, p.batch_sizes, h0, [w_ih, w_hh], False, 1, 0.0, False, False)
    return _unpack(y, p), h


def gru_packed_sequence_lens(x, lengths, h0, w_ih, w_hh):
    p = pack_padded_sequence(x, lengths)
    y, h = torch.gru(p.data, p.batch_sizes, h0, [w_ih, w_hh], False, 1, 0.0, False, False)
    return _unpack(y, p), h


def lstm_packed_sequence_lens(x, lengths, h0, c0, w_ih, w_hh):
    p = pack_padded_sequence(x, lengths)
    y, h, c = torch.lstm(p.data, p.batch_sizes, [h0, c0], [w_ih, w_hh], False, 1, 0.0, False,
                         False)
    return _unpack(y, p), h, c


_PACKED_NOTES = ("TorchScript: the dynamo exporter cannot trace pack_padded_sequence; the "
                 "TorchScript exporter maps the packed kernel to sequence_lens (lengths cast to "
                 "int32). Lengths [4, 2], sorted as pack_padded_sequence requires. float32: "
                 "onnxruntime's RNN/GRU/LSTM kernels are float32-only, and the onnx reference "
                 "evaluator ignores sequence_lens (Y_h off by up to 1.05 in float64)")

CASES = [
    Case("RNN", "rnn_h0_bias", rnn_h0_bias,
         (Float(4, 1, 2), Float(1, 1, H), Float(H, 2), Float(H, H), Float(2 * H)),
         ("x", "h0", "w_ih", "w_hh", "b"), exporter="torchscript",
         expect={"input 5": Expect("disagree", _STATE.format("initial_h"))},
         unexercised={"input 4": _PACKED},
         notes="TorchScript: the dynamo exporter unrolls rnn_tanh into MatMul/Tanh per step. "
               "Without TorchScript: the reference rnn_tanh_ref, the recurrence from the schema",
         without_torchscript={"model": rnn_h0_bias_ref, "kind": "reference",
                              "translation": rnn_tanh_ref.translation}),
    Case("RNN", "rnn_packed_sequence_lens", rnn_packed_sequence_lens,
         (Float(4, 2, 2), Fixed([4, 2]), Float(1, 2, H), Float(H, 2), Float(H, H)),
         ("x", "lengths", "h0", "w_ih", "w_hh"), exporter="torchscript",
         float_dtype=torch.float32,
         expect={"input 5": Expect("disagree", _STATE.format("initial_h"))},
         notes=_PACKED_NOTES),
    Case("GRU", "gru_h0_bias", gru_h0_bias,
         (Float(4, 1, 2), Float(1, 1, H), Float(3 * H, 2), Float(3 * H, H), Float(6 * H)),
         ("x", "h0", "w_ih", "w_hh", "b"),
         expect={"input 5": Expect("disagree", _STATE.format("initial_h"))},
         unexercised={"input 4": _PACKED}),
    Case("GRU", "gru_packed_sequence_lens", gru_packed_sequence_lens,
         (Float(4, 2, 2), Fixed([4, 2]), Float(1, 2, H), Float(3 * H, 2), Float(3 * H, H)),
         ("x", "lengths", "h0", "w_ih", "w_hh"), exporter="torchscript",
         float_dtype=torch.float32,
         expect={"input 5": Expect("disagree", _STATE.format("initial_h"))},
         notes=_PACKED_NOTES),
    Case("LSTM", "lstm_h0_c0_bias", lstm_h0_c0_bias,
         (Float(4, 1, 2), Float(1, 1, H), Float(1, 1, H), Float(4 * H, 2), Float(4 * H, H), Float(8 * H)),
         ("x", "h0", "c0", "w_ih", "w_hh", "b"),
         expect={"input 5": Expect("disagree", _STATE.format("initial_h")),
                 "input 6": Expect("disagree", _STATE.format("initial_c"))},
         unexercised={"input 4": _PACKED, "input 7": _NO_PEEPHOLE}),
    Case("LSTM", "lstm_peephole_p", lstm_peephole_p,
         (Float(2, 1, 2), Float(1, 8, 2), Float(1, 8, 2), Float(1, 16), Float(1, 1, 2), Float(1, 1, 2), Float(1, 6)),
         ("x", "w", "r", "b", "h0", "c0", "p"), kind="reference",
         translation=lstm_peephole.translation,
         expect={"input 5": Expect("disagree", _STATE.format("initial_h")),
                 "input 6": Expect("disagree", _STATE.format("initial_c"))},
         notes="reference: PyTorch's LSTM has no peepholes. Sequence length 2, batch 1, input "
               "and hidden size 2; onnxruntime's LSTM is float32-only, so float64 runs in the "
               "onnx reference evaluator"),
    Case("LSTM", "lstm_packed_sequence_lens", lstm_packed_sequence_lens,
         (Float(4, 2, 2), Fixed([4, 2]), Float(1, 2, H), Float(1, 2, H), Float(4 * H, 2), Float(4 * H, H)),
         ("x", "lengths", "h0", "c0", "w_ih", "w_hh"), exporter="torchscript",
         float_dtype=torch.float32,
         expect={"input 5": Expect("disagree", _STATE.format("initial_h")),
                 "input 6": Expect("disagree", _STATE.format("initial_c"))},
         unexercised={"input 7": _NO_PEEPHOLE}, notes=_PACKED_NOTES),
]
