"""Named conventions: where an ONNX tag follows a rule of the project, not the math alone.

Why a table: some tags are not decided by whether a derivative exists. Hardmax has a
derivative almost everywhere (zero); BatchNormalization's running statistics are smooth
functions of the batch; Resize's ``scales`` moves the output smoothly at a fixed size. ONNX
still tags them by a rule it applies elsewhere (Floor, Round and Sign are
non-differentiable), and a maintainer signs a verdict only if it names that rule. So each
rule is a row here (its statement, the ONNX precedent it follows and the tag it implies),
and a case declares which of its parameters falls under which rule, with the reason, as
data (``Case.conventions``: ``Applies``); the engine never tests an op's name
(README "Verdicts: two witnesses", "Conventions").

A parameter under a convention keeps both halves in its record: what the witnesses found
(the math) and what the convention decides; reports count convention-decided verdicts
apart from the math ones, and ``fix-tags`` leaves them out unless asked.

This module sits beside ``vocab`` (the lowest layer), so a case can name a convention.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from .vocab import Tag


class Convention(StrEnum):
    """The named conventions (a record's ``convention`` field holds the value)."""

    PIECEWISE_CONSTANT = "piecewise-constant"
    SHAPE_SETTING = "shape-setting input"
    DATA_DEPENDENT_SHAPE = "data-dependent shape"
    STATE_UPDATE = "state update"
    BODY_DEPENDENT = "body-dependent"
    SAMPLING = "sampling"
    QUANTIZED_STORAGE = "quantized storage"


@dataclass(frozen=True)
class Rule:
    """One convention: what it says, which ONNX precedent it follows, and the tag it implies
    (None: the convention says no tag follows from evidence; the schema's stands)."""

    name: Convention
    statement: str
    precedent: str
    implies: Tag | None


_UNKNOWN_DEFINITION = ("onnx/defs/schema.h, DifferentiationCategory::Unknown: \"Whether this "
                       "formal parameter is differentiable or not cannot be statically "
                       "determined\"")

RULES: dict[Convention, Rule] = {r.name: r for r in (
    Rule(Convention.PIECEWISE_CONSTANT,
         "an output that is constant between jumps (a rounding, a sign, a one-hot of an "
         "argmax) is non-differentiable, although its derivative is zero wherever it exists",
         "ONNX tags Floor, Ceil, Round and Sign non-differentiable (onnx#2911, onnx#2954), "
         "and ArgMax's output",
         Tag.NONDIFF),
    Rule(Convention.SHAPE_SETTING,
         "an input that sets an output's shape is non-differentiable, even where the output "
         "moves smoothly with it at a fixed shape",
         "\"Shape shouldn't be differentiable\" (review of onnx#3011); Resize's sizes, "
         "Reshape's shape and Expand's shape are tagged non-differentiable",
         Tag.NONDIFF),
    Rule(Convention.DATA_DEPENDENT_SHAPE,
         "an op whose output length is decided by comparing its input's values is "
         "non-differentiable in them: smooth away from ties, but at the ties the op exists "
         "to find the output length changes",
         "ONNX tags Unique's X and Y non-differentiable (onnx/defs/tensor/defs.cc), as it "
         "tags NonZero's",
         Tag.NONDIFF),
    Rule(Convention.STATE_UPDATE,
         "an output that updates a running state for the next step (running statistics) is "
         "non-differentiable: training frameworks never differentiate through it",
         "BatchNormalization-15 tags running_mean and running_var non-differentiable; "
         "PyTorch updates them in place without autograd and onnxruntime training never "
         "builds their gradient",
         Tag.NONDIFF),
    Rule(Convention.BODY_DEPENDENT,
         "a parameter of an op with a graph body (If, Loop, Scan, SequenceMap) is "
         "differentiable or not according to the body it runs: differentiable for a smooth "
         "body, flat for a Floor body; its tag is unknown",
         _UNKNOWN_DEFINITION,
         Tag.UNKNOWN),
    Rule(Convention.SAMPLING,
         "a sampling op's distribution parameter has one derivative per draw and another of "
         "the average; no ONNX rule says which a tag means, so no tag follows from evidence",
         "none decides it: Dropout-13 tags ratio non-differentiable while Bernoulli-15 leaves "
         "its input unknown; docs/DefineDifferentiability.md defines a tag by a partial "
         "derivative, which a random draw is not",
         None),
    Rule(Convention.QUANTIZED_STORAGE,
         "float8 and float4 tensors are quantized storage, never gradient carriers, like the "
         "integer types they stand in for",
         "ONNX lists float8 types beside int8/uint8 in the quantization ops' constraints "
         "(QuantizeLinear-19, DequantizeLinear-19) and no gradient op accepts them",
         Tag.NONDIFF),
)}


@dataclass(frozen=True)
class Applies:
    """A case's declaration that one of its parameters falls under a convention; ``math``
    says, for that parameter, what the mathematics gives (the other half of its reason)."""

    convention: Convention
    math: str

    def __post_init__(self) -> None:
        if not isinstance(self.convention, Convention):
            raise ValueError(f"Applies: {self.convention!r} is not a Convention")
        if not self.math.strip():
            raise ValueError("Applies needs the math it sets aside (a non-empty reason)")

    @property
    def rule(self) -> Rule:
        return RULES[self.convention]


def decides(rule: Rule) -> str:
    """What a convention decides, in words for a reason."""
    if rule.implies is None:
        return "no tag follows from the evidence (the schema's tag stands)"
    return f"it is {rule.implies}"
