"""Spectral ops: DFT (torch.fft), STFT (torch.stft) and the window generators.

DFT and STFT are linear in their signal (and STFT in its window), so PyTorch gives those
inputs a gradient; ONNX tags them non-differentiable, and these cases record that.
Complex tensors cross the graph boundary as a trailing dimension of 2 (view_as_real /
view_as_complex), which is also ONNX's DFT layout.
"""
import math

import torch

from ..case import Case, Expect, Float
from .reference import reference_op

_LINEAR = ("the DFT is linear in its input: PyTorch's gradient is nonzero and finite "
           "differences of the ONNX model confirm it, but ONNX tags it non-differentiable")
_STFT_SIGNAL = ("STFT is linear in the signal: nonzero gradient, confirmed numerically; "
                "ONNX tags signal non-differentiable")
_STFT_WINDOW = ("STFT is linear in the window: nonzero gradient, confirmed numerically; "
                "ONNX tags window non-differentiable")
_STFT_OUT = ("the STFT output carries dy back to signal/window as nonzero gradients; ONNX "
             "tags it non-differentiable")


def dft_rfft(x):
    return torch.view_as_real(torch.fft.rfft(x))


def dft_fft_complex(x):
    return torch.view_as_real(torch.fft.fft(torch.view_as_complex(x)))


def dft_ifft_complex(x):
    return torch.view_as_real(torch.fft.ifft(torch.view_as_complex(x)))


def dft_irfft(x):
    return torch.fft.irfft(torch.view_as_complex(x))


def stft_rect(x):
    return torch.view_as_real(torch.stft(x, 4, hop_length=2, return_complex=True,
                                         center=False))


def stft_window(x, window):
    return torch.view_as_real(torch.stft(x, 4, hop_length=2, window=window,
                                         return_complex=True, center=False))


def hann(x):
    return torch.hann_window(6, dtype=torch.float64)


def hamming(x):
    return torch.hamming_window(6, dtype=torch.float64)


def blackman(x):
    return torch.blackman_window(6, dtype=torch.float64)


@reference_op("HammingWindow")
def hamming_window_onnx(size: int, periodic: int, output_datatype: int) -> torch.Tensor:
    """ONNX HammingWindow: alpha - beta cos(2 pi n / N), alpha = 25/46, beta = 21/46,
    N = size if periodic else size - 1 (torch.hamming_window uses 0.54 / 0.46); float64
    (output_datatype 11)."""
    n = torch.arange(size, dtype=torch.float64)
    return 25 / 46 - 21 / 46 * torch.cos(2 * math.pi * n / (size if periodic else size - 1))


def hammingwindow_onnx_coefficients(x):
    return hamming_window_onnx(6, 1, 11)


_HAMMING = ("the exported HammingWindow is not torch.hamming_window: torch uses alpha=0.54, "
            "beta=0.46, ONNX (onnxruntime and the reference evaluator) alpha=25/46, "
            "beta=21/46; max abs error 0.00696 for size 6 (w[0] 0.08 vs 0.0870)")
_WINDOW_NOTES = ("the dynamo optimizer folds the window into a constant; optimize=False keeps "
                 "the node. x is an unused graph input")

CASES = [
    Case("DFT", "dft_rfft", dft_rfft, (Float(2, 8),), ("x",),
         expect={"input 0": Expect("disagree", _LINEAR)},
         notes="torch.fft.rfft: real input unsqueezed to [..., 1], onesided=1, "
               "dft_length and axis constants"),
    Case("DFT", "dft_fft_complex", dft_fft_complex, (Float(2, 8, 2),), ("x",),
         expect={"input 0": Expect("disagree", _LINEAR)},
         notes="complex input as [..., 2]; the exporter leaves dft_length absent"),
    Case("DFT", "dft_ifft_complex", dft_ifft_complex, (Float(2, 8, 2),), ("x",),
         expect={"input 0": Expect("disagree", _LINEAR)},
         notes="inverse=1"),
    Case("DFT", "dft_irfft", dft_irfft, (Float(2, 5, 2),), ("x",),
         expect={"input 0": Expect("disagree", _LINEAR)},
         notes="inverse onesided DFT; its output reaches the graph output through "
               "Slice/Squeeze (real part)"),
    Case("STFT", "stft_rectangular", stft_rect, (Float(2, 8),), ("x",),
         expect={"input 0": Expect("disagree", _STFT_SIGNAL),
                 "input 2": Expect("disagree", _STFT_WINDOW),
                 "output 0": Expect("disagree", _STFT_OUT)},
         notes="no window given: the exporter passes a float constant of ones"),
    Case("STFT", "stft_window_input", stft_window, (Float(2, 8), Float(4)), ("x", "window"),
         expect={"input 0": Expect("disagree", _STFT_SIGNAL),
                 "input 2": Expect("disagree", _STFT_WINDOW),
                 "output 0": Expect("disagree", _STFT_OUT)},
         notes="the window is a graph input, so its gradient is evidence"),
    Case("HannWindow", "hannwindow_periodic", hann, (Float(2),), ("x",),
         export_options={"optimize": False}, notes=_WINDOW_NOTES),
    Case("HammingWindow", "hammingwindow_periodic", hamming, (Float(2),), ("x",),
         export_options={"optimize": False},
         expect={"output 0": Expect("inconclusive", _HAMMING)},
         notes=_WINDOW_NOTES),
    Case("HammingWindow", "hammingwindow_onnx_coefficients", hammingwindow_onnx_coefficients,
         (Float(2),), ("x",), kind="reference", translation=hamming_window_onnx.translation,
         export_options={"optimize": False},
         notes="reference with ONNX's coefficients (25/46, 21/46), so the forward matches where "
               "torch.hamming_window's 0.54/0.46 does not (hammingwindow_periodic); "
               + _WINDOW_NOTES),
    Case("BlackmanWindow", "blackmanwindow_periodic", blackman, (Float(2),), ("x",),
         export_options={"optimize": False}, notes=_WINDOW_NOTES),
]

# MelWeightMatrix: reference cases in reference_quant.py (torch has no mel filterbank op).
