"""Activations: elementwise nonlinearities (and PRelu, whose slope is a second input).

Inputs keep away from kinks: Relu/LeakyRelu/Elu/Selu/Celu/PRelu use standard normal samples
(never within the finite-difference step of 0 in practice), HardSigmoid/HardSwish use
(-2.5, 2.5) so no sample sits near their kinks at +-3.
"""
import torch
import torch.nn.functional as F

from ..case import Case, Float


def sigmoid(x):
    return torch.sigmoid(x)


def relu(x):
    return torch.relu(x)


def elu(x):
    return F.elu(x, alpha=0.7)


def selu(x):
    return F.selu(x)


def celu(x):
    return F.celu(x, alpha=1.3)


def leakyrelu(x):
    return F.leaky_relu(x, negative_slope=0.1)


def hardsigmoid(x):
    return F.hardsigmoid(x)


def hardswish(x):
    return F.hardswish(x)


def gelu(x):
    return F.gelu(x)


def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


def mish(x):
    return F.mish(x)


def softplus(x):
    return F.softplus(x)


def silu(x):
    return F.silu(x)


def swish_translation(x):
    """aten.silu -> ONNX Swish (alpha=1 is silu); the exporter itself emits Sigmoid * Mul.
    onnxscript is imported on use: every command loads the catalogue, most export nothing
    (a quarter of a warm verify-all was this import)."""
    from onnxscript.onnx_opset import opset25 as op
    return op.Swish(x, alpha=1.0)


def prelu(x, slope):
    return F.prelu(x, slope)


class PReLUModule(torch.nn.Module):
    """nn.PReLU: the slope is a module parameter (an initializer in the graph)."""

    def __init__(self):
        super().__init__()
        self.prelu = torch.nn.PReLU(num_parameters=3, init=0.25)

    def forward(self, x):
        return self.prelu(x)


X = Float(3, 4)
X_NO_KINK = Float(3, 4, low=-2.5, high=2.5)

# (op, case name, model, input spec): one-input activations exported as-is by dynamo.
TABLE = [
    ("Sigmoid", "sigmoid_basic", sigmoid, X),
    ("Relu", "relu_basic", relu, X),
    ("Elu", "elu_alpha", elu, X),
    ("Selu", "selu_basic", selu, X),
    ("LeakyRelu", "leakyrelu_slope", leakyrelu, X),
    ("HardSigmoid", "hardsigmoid_basic", hardsigmoid, X_NO_KINK),
    ("HardSwish", "hardswish_basic", hardswish, X_NO_KINK),
    ("Gelu", "gelu_tanh", gelu_tanh, X),
    ("Mish", "mish_basic", mish, X),
]

CASES = [Case(op_name, name, fn, (spec,), ("x",)) for op_name, name, fn, spec in TABLE] + [
    Case("Gelu", "gelu_erf", gelu, (Float(3, 4),), ("x",), float_dtype=torch.float32,
         notes="onnxruntime has no float64 Gelu (nor Erf, which its Gelu function body uses), and "
               "the onnx reference evaluator computes Erf in float32, which makes float64 finite "
               "differences noise (rel err 2e-2); in float32 onnxruntime runs it."),
    Case("Celu", "celu_alpha", celu, (Float(3, 4),), ("x",), float_dtype=torch.float32,
         notes="ONNX Celu accepts tensor(float) only: in float64 the exporter wraps it in "
               "Cast nodes and the op would compute in float32 anyway, so the case is float32."),
    Case("Softplus", "softplus_basic", softplus, (Float(3, 4),), ("x",), exporter="torchscript",
         notes="the TorchScript exporter emits Softplus alone (dynamo's guard around it: "
               "softplus_dynamo_guard). Without TorchScript: dynamo with optimize=False emits "
               "Softplus alone (the Where is the optimizer's)",
         without_torchscript={"export_options": {"optimize": False}}),
    Case("Softplus", "softplus_dynamo_guard", softplus, (Float(3, 4),), ("x",),
         notes="the default (dynamo) exporter writes F.softplus as Where(x * beta > threshold, "
               "x, Softplus(x)): x reaches the output around Softplus only through that guard, "
               "so the node's own witness decides X and Y (engine/guard.py) and the record "
               "says whether a probe point took the bypass (none: randn stays below 20)"),
    Case("Swish", "swish_silu", silu, (Float(3, 4),), ("x",), kind="reference",
         translation={torch.ops.aten.silu.default: swish_translation},
         notes="Both exporters decompose F.silu into Sigmoid and Mul at opset 25 (Swish is new "
               "in opset 24 and torch_lib does not use it), so aten.silu is translated to "
               "Swish(alpha=1) — the same function; numeric checks confirm the ONNX op. "
               "onnxruntime 1.31 has no Swish kernel: the reference evaluator runs it."),
    Case("PRelu", "prelu_slope_input", prelu, (Float(2, 3, 4), Float(3, low=0.1, high=0.5)),
         ("x", "slope"),
         notes="slope (one per channel) is reshaped to [1, 3, 1] before PRelu: glue on one input."),
    Case("PRelu", "prelu_module", PReLUModule, (Float(2, 3, 4),), ("x",),
         export_options={"optimize": False},
         notes="nn.PReLU's weight is a parameter (initializer 'prelu.weight') reshaped to [1, 3, 1]; "
               "the default optimizer folds that Reshape into a new anonymous constant, losing the "
               "parameter's name (slope then reads as an unexercised float constant), so the "
               "optimizer is off."),
]
