"""Normalizations: BatchNormalization, InstanceNormalization, LayerNormalization,
GroupNormalization, RMSNormalization (natural), MeanVarianceNormalization and
LpNormalization (reference ops: no PyTorch function exports to them); and Dropout, the
other layer whose behaviour depends on training mode.

Scales and biases are graph inputs (functional forms), so each node input is one PyTorch
tensor. Variances are drawn from [0.5, 1.5) so the normalizations stay smooth.
"""
import torch
import torch.nn.functional as F

from ..case import Case, Expect, Float
from ..conventions import Applies, Convention
from .reference import reference_op

_RUNNING = ("{0} = input_{1} * momentum + batch {1} of X * (1 - momentum): d{0}/dinput_{1} = "
            "momentum (0.875) and d{0}/dX = (1 - momentum) d(batch {1})/dX, nonzero")
_NO_PRECEDENT = ("the 'state output' convention has no precedent outside BatchNormalization's "
                 "own tags, so the math decides: {0} is smooth in X and input_{1} (both "
                 "witnesses); tagged non-differentiable")
_SAVED = ("BatchNormalization-9's training form (the relabelled variants at opsets 7-13 take "
          "it: engine/adapter_table.py) also outputs {0}, the batch {1} of X: smooth in X "
          "(the node's finite differences are nonzero), tagged non-differentiable in "
          "BatchNormalization-9 (unknown in -7); no parameter of BatchNormalization-14 on. The "
          "'state output' convention covers it as it covers running_mean, with no precedent "
          "outside BatchNormalization's own tags: the math decides, under the label")
_SAVED_MATH = "{0} is the batch {1} of X: smooth in X (the node's finite differences are nonzero)"
_LN_STATS = ("{0} is a statistic of X over the normalized axes: smooth in X, and Y reads it; "
             "the 'state output' convention decides it by BatchNormalization-15's running "
             "statistics, a precedent outside LayerNormalization")
_DROPOUT_RATIO = ("for one draw (mask m fixed) output = data * m / (1 - ratio), smooth in ratio; "
                  "averaged over draws E[output] = data, constant in ratio")
_STASH32 = ("float32: the exporter sets stash_type=1, so the ONNX node computes its statistics in "
            "float32 even for float64 inputs; float64 finite differences (step 1e-6) then drown "
            "in float32 rounding (GroupNormalization's x VJP: rel err 3.5e-3 in onnxruntime)")


def batchnormalization_eval(x, mean, var, scale, bias):
    return F.batch_norm(x, mean, var, scale, bias, training=False)


@reference_op("BatchNormalization")
def batch_normalization_train(X: torch.Tensor, scale: torch.Tensor, B: torch.Tensor,
                              input_mean: torch.Tensor, input_var: torch.Tensor,
                              epsilon: float, momentum: float, training_mode: int
                              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Training mode (ONNX BatchNormalization-15): Y normalizes X with the batch's own mean
    and (biased) variance per channel; running_mean = input_mean * momentum + mean * (1 -
    momentum), running_var likewise from input_var and the batch variance."""
    dims = [0] + list(range(2, X.dim()))
    shape = [1, -1] + [1] * (X.dim() - 2)
    mean = X.mean(dim=dims)
    var = X.var(dim=dims, unbiased=False)
    y = (X - mean.reshape(shape)) / torch.sqrt(var.reshape(shape) + epsilon)
    y = y * scale.reshape(shape) + B.reshape(shape)
    return (y, input_mean * momentum + mean * (1 - momentum),
            input_var * momentum + var * (1 - momentum))


def batchnormalization_training(x, scale, bias, mean, var):
    return batch_normalization_train(x, scale, bias, mean, var, 2.0 ** -10, 0.875, 1)


def instancenormalization_affine(x, scale, bias):
    return F.instance_norm(x, weight=scale, bias=bias)


def layernormalization_affine(x, scale, bias):
    return F.layer_norm(x, (4,), scale, bias)


def layernormalization_no_bias(x, scale):
    return F.layer_norm(x, (3, 4), scale)


def groupnormalization_2groups(x, scale, bias):
    return F.group_norm(x, 2, scale, bias)


def rmsnormalization_last(x, scale):
    return F.rms_norm(x, (4,), scale)


@reference_op("LayerNormalization")
def layer_normalization_stats(X: torch.Tensor, Scale: torch.Tensor, B: torch.Tensor, axis: int,
                              epsilon: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """LayerNormalization with its optional Mean and InvStdDev outputs (kept dims)."""
    dims = tuple(range(axis % X.dim(), X.dim()))
    mean = X.mean(dim=dims, keepdim=True)
    inv_std = torch.rsqrt(((X - mean) ** 2).mean(dim=dims, keepdim=True) + epsilon)
    return (X - mean) * inv_std * Scale + B, mean, inv_std


def layernormalization_mean_invstd(x, scale, bias):
    return layer_normalization_stats(x, scale, bias, -1, 1e-5)


@reference_op("MeanVarianceNormalization")
def mean_variance_normalization(X: torch.Tensor, axes: list[int]) -> torch.Tensor:
    """ONNX MeanVarianceNormalization: (X - E[X]) / sqrt(E[(X - E[X])^2]) over ``axes``."""
    mean = X.mean(dim=axes, keepdim=True)
    centred = X - mean
    return centred / torch.sqrt((centred * centred).mean(dim=axes, keepdim=True))


def meanvariancenormalization_nhw(x):
    return mean_variance_normalization(x, [0, 2, 3])


@reference_op("LpNormalization")
def lp_normalization(input: torch.Tensor, axis: int, p: int) -> torch.Tensor:
    """ONNX LpNormalization: input / ||input||_p along ``axis``."""
    return input / torch.linalg.vector_norm(input, ord=p, dim=axis, keepdim=True)


def lpnormalization_l2(x):
    return lp_normalization(x, 1, 2)


def lpnormalization_l1(x):
    return lp_normalization(x, -1, 1)


def dropout_train_p0(x):
    return torch.native_dropout(x, 0.0, True)


def dropout_ratio0_output(x):
    return torch.native_dropout(x, 0.0, True)[0]


CASES = [
    Case("BatchNormalization", "batchnormalization_eval", batchnormalization_eval,
         (Float(2, 3, 2, 2), Float(3, requires_grad=False), Float(3, low=0.5, high=1.5, requires_grad=False),
          Float(3), Float(3)),
         ("x", "mean", "var", "scale", "bias"),
         unexercised={"output 1": "running_mean is an output only in training mode: see "
                                  "batchnormalization_training (reference)",
                      "output 2": "running_var: as running_mean"}),
    Case("BatchNormalization", "batchnormalization_training", batchnormalization_training,
         (Float(2, 3, 2, 2), Float(3), Float(3), Float(3), Float(3, low=0.5, high=1.5)),
         ("x", "scale", "bias", "mean", "var"), kind="reference",
         translation=batch_normalization_train.translation,
         conventions={"output 1": Applies(Convention.STATE_OUTPUT,
                                          _RUNNING.format("running_mean", "mean")),
                      "output 2": Applies(Convention.STATE_OUTPUT,
                                          _RUNNING.format("running_var", "var")),
                      "output 3": Applies(Convention.STATE_OUTPUT,
                                          _SAVED_MATH.format("saved_mean", "mean")),
                      "output 4": Applies(Convention.STATE_OUTPUT,
                                          _SAVED_MATH.format("saved_var", "variance"))},
         expect={"output 1": Expect("disagree", _NO_PRECEDENT.format("running_mean", "mean")),
                 "output 2": Expect("disagree", _NO_PRECEDENT.format("running_var", "var")),
                 "output 3": Expect("disagree", _SAVED.format("saved_mean", "mean")),
                 "output 4": Expect("disagree", _SAVED.format("saved_var", "variance"))},
         notes="reference: the dynamo exporter turns F.batch_norm(training=True) into an "
               "inference-mode node (Y off by ~1 from PyTorch's) and returns the running stats "
               "unchanged (Identity), and PyTorch's running_var uses the unbiased batch "
               "variance where ONNX uses the biased one. In training mode Y does not read "
               "input_mean / input_var: they reach only running_mean / running_var"),
    Case("InstanceNormalization", "instancenormalization_affine", instancenormalization_affine,
         (Float(2, 3, 4), Float(3), Float(3)), ("x", "scale", "bias")),
    Case("LayerNormalization", "layernormalization_affine", layernormalization_affine,
         (Float(2, 3, 4), Float(4), Float(4)), ("x", "scale", "bias"),
         unexercised={"output 1": "F.layer_norm returns only Y; see "
                                  "layernormalization_mean_invstd (reference)",
                      "output 2": "F.layer_norm returns only Y; see "
                                  "layernormalization_mean_invstd (reference)"}),
    Case("LayerNormalization", "layernormalization_no_bias", layernormalization_no_bias,
         (Float(2, 3, 4), Float(3, 4)), ("x", "scale"),
         unexercised={"output 1": "F.layer_norm returns only Y",
                      "output 2": "F.layer_norm returns only Y"}),
    Case("LayerNormalization", "layernormalization_mean_invstd", layernormalization_mean_invstd,
         (Float(2, 3, 4), Float(4), Float(4)), ("x", "scale", "bias"), kind="reference",
         translation=layer_normalization_stats.translation, float_dtype=torch.float32,
         conventions={"output 1": Applies(Convention.STATE_OUTPUT, _LN_STATS.format("Mean")),
                      "output 2": Applies(Convention.STATE_OUTPUT,
                                          _LN_STATS.format("InvStdDev"))},
         notes="reference: F.layer_norm returns only Y. float32: Mean and InvStdDev have "
               "type U (float32 or bfloat16 only), so a float64 case would mix precisions"),
    Case("GroupNormalization", "groupnormalization_2groups", groupnormalization_2groups,
         (Float(2, 4, 3), Float(4), Float(4)), ("x", "scale", "bias"), float_dtype=torch.float32,
         fails_at={18: "GroupNormalization-18 is deprecated (replaced by -21): onnx.checker "
                       "refuses every model that uses it"},
         notes=_STASH32),
    Case("RMSNormalization", "rmsnormalization_last", rmsnormalization_last,
         (Float(2, 3, 4), Float(4)), ("x", "scale"), float_dtype=torch.float32, notes=_STASH32),
    Case("MeanVarianceNormalization", "meanvariancenormalization_nhw",
         meanvariancenormalization_nhw, (Float(2, 3, 2, 2),), ("x",), kind="reference",
         translation=mean_variance_normalization.translation, float_dtype=torch.float32,
         notes="float32: onnxruntime has no float64 MeanVarianceNormalization kernel and the "
               "onnx reference evaluator's float64 path fails (it adds a float32 epsilon)"),
    Case("LpNormalization", "lpnormalization_l2", lpnormalization_l2, (Float(2, 3, 4),), ("x",),
         kind="reference", translation=lp_normalization.translation),
    Case("LpNormalization", "lpnormalization_l1", lpnormalization_l1,
         (Float(2, 3, 4, low=0.2, high=2.0),), ("x",), kind="reference",
         translation=lp_normalization.translation,
         notes="inputs kept positive, away from the kink of |x| at 0"),
    Case("Dropout", "dropout_ratio0_output", dropout_ratio0_output, (Float(3, 4),), ("x",),
         unexercised={"input 1": "the ratio is a Python float in PyTorch: a float constant"},
         fixed_draw="p=0: the mask keeps every element",
         conventions={"input 1": Applies(Convention.SAMPLING, _DROPOUT_RATIO)},
         export_options={"optimize": False},
         notes="optimize=False: the exporter's optimizer folds p=0 dropout to Identity. "
               "As dropout_train_p0 with the mask unread, so the node is valid in every "
               "Dropout version: Dropout-12's ratio and training_mode inputs become Dropout-"
               "10's and -7's ratio attribute (training with ratio 0 returns the input, as "
               "inference does: engine/adapter_table.py), which dropout_train_p0's read mask "
               "forbids (onnxruntime's Dropout-10 mask is all false outside training)"),
    Case("Dropout", "dropout_train_p0", dropout_train_p0, (Float(3, 4),), ("x",),
         export_options={"optimize": False}, opsets=(12, 28),
         unexercised={"input 1": "the ratio is a Python float in PyTorch: a float constant"},
         fixed_draw="p=0: the mask keeps every element",
         conventions={"input 1": Applies(Convention.SAMPLING, _DROPOUT_RATIO)},
         notes="training mode with p=0: any p > 0 draws a random mask, so the ONNX forward "
               "could never match PyTorch's; p=0 keeps training_mode=True and the mask output "
               "deterministic. optimize=False: the exporter's optimizer folds p=0 dropout to "
               "Identity (eval-mode dropout disappears with either exporter). Opsets 12 on: "
               "the read mask of training mode has no counterpart in Dropout-10 or -7 (see "
               "dropout_ratio0_output)"),
]
