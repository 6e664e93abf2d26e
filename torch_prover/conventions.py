"""Named conventions: where an ONNX tag follows a rule of the project, not the math alone.

Why a table: some tags are not decided by whether a derivative exists. Hardmax has a
derivative almost everywhere (zero); BatchNormalization's running statistics are smooth
functions of the batch; Resize's ``scales`` moves the output smoothly at a fixed size. ONNX
still tags them by a rule it applies elsewhere (Floor, Round and Sign are
non-differentiable), and a maintainer signs a verdict only if it names that rule. So each
rule is a row here (its statement, the ONNX precedent it follows and the tag it implies),
and a case declares which of its parameters falls under which rule, with the reason, as
data (``Case.conventions``: ``Applies``); the engine never tests an op's name
(docs/verdicts.md, "Conventions").

A parameter under a convention keeps both halves in its record: what the witnesses found
(the math) and what the convention decides; reports count convention-decided verdicts
apart from the math ones, and ``fix-tags`` leaves them out unless asked.

This module sits beside ``vocab`` (the lowest layer), so a case can name a convention.
"""
from __future__ import annotations

from dataclasses import dataclass
from .compat import StrEnum

from .vocab import Tag


class Convention(StrEnum):
    """The named conventions (a record's ``convention`` field holds the value)."""

    PIECEWISE_CONSTANT = "piecewise-constant"
    SHAPE_SETTING = "shape-setting input"
    DATA_DEPENDENT_SHAPE = "data-dependent shape"
    STATE_OUTPUT = "state output"
    BODY_DEPENDENT = "body-dependent"
    SAMPLING = "sampling"
    QUANTIZED_STORAGE = "quantized storage"


@dataclass(frozen=True)
class TagPrecedent:
    """Another op's tag that follows the rule: ``Floor-13 tags input X non-differentiable``.
    It counts only for a parameter of another op (never the schema under test), and only as
    a tag ONNX chose: a parameter the types alone decide (NonZero's X, whose only output is
    int64; Reshape's int64 shape) follows no convention (tests/test_conventions.py checks
    each row against onnx.defs)."""

    op: str
    since: int
    io: str
    name: str
    tag: Tag
    refuted: str = ""     # the tool's own evidence against this tag: then it is no precedent

    def text(self) -> str:
        return f"{self.op}-{self.since} tags {self.io} {self.name} {self.tag}" + (
            f" (refuted by the catalogue's own evidence: {self.refuted}; no precedent)"
            if self.refuted else "")


@dataclass(frozen=True)
class Statement:
    """A rule stated outside the schema under test: in ONNX's sources or docs (``where``),
    or in another op's schema (``op``: the precedent does not count for that op itself)."""

    where: str
    says: str
    op: str | None = None

    def text(self) -> str:
        return f"{self.where}: {self.says}"


Precedent = TagPrecedent | Statement


@dataclass(frozen=True)
class Rule:
    """One convention: what it says, the precedents it follows, and the tag it implies
    (None: the convention says no tag follows from evidence; the schema's stands).
    ``context``: what a reader might take for a precedent and is not (the tags under test
    themselves, a tag the types decide), said so the omission is visible."""

    name: Convention
    statement: str
    precedents: tuple[Precedent, ...]
    implies: Tag | None
    context: str = ""

    @property
    def precedent(self) -> str:
        """Every precedent, in words (records, ``tags --explain``)."""
        cited = "; ".join(p.text() for p in self.precedents) or "none"
        return cited + (f" ({self.context})" if self.context else "")

    def precedents_for(self, op: str) -> tuple[Precedent, ...]:
        """The precedents that can decide a parameter of ``op``: none of ``op``'s own (a
        convention never cites the tag it is judging), and none the catalogue's own evidence
        refutes (a tag the tool finds wrong is no precedent: ``TagPrecedent.refuted``)."""
        return tuple(p for p in self.precedents
                     if p.op != op and not getattr(p, "refuted", ""))

    def founded_for(self, op: str) -> bool:
        """Whether the convention may decide a parameter of ``op``: a convention implying
        no tag decides nothing and needs no precedent; one implying a tag needs at least
        one precedent outside ``op``'s schema."""
        return self.implies is None or bool(self.precedents_for(op))


_UNKNOWN_DEFINITION = Statement(
    "onnx/defs/schema.h, DifferentiationCategory::Unknown",
    "\"Whether this formal parameter is differentiable or not cannot be statically "
    "determined\"")

RULES: dict[Convention, Rule] = {r.name: r for r in (
    Rule(Convention.PIECEWISE_CONSTANT,
         "an output that is constant between jumps (a rounding, a sign, a one-hot of an "
         "argmax) is non-differentiable, although its derivative is zero wherever it exists",
         (TagPrecedent("Floor", 13, "input", "X", Tag.NONDIFF),
          TagPrecedent("Ceil", 13, "input", "X", Tag.NONDIFF),
          TagPrecedent("Round", 11, "input", "X", Tag.NONDIFF),
          TagPrecedent("Sign", 13, "input", "input", Tag.NONDIFF)),
         Tag.NONDIFF,
         "ArgMax's int64 output is non-differentiable by type, so it is no precedent"),
    Rule(Convention.SHAPE_SETTING,
         "a float input that sets an output's shape (Resize's and Upsample's scales, Range's "
         "start, limit and delta: the output length jumps with them) is non-differentiable, "
         "even where the output moves smoothly with it at a fixed shape",
         (TagPrecedent("Resize", 13, "input", "scales", Tag.NONDIFF,
                       "resize_bilinear_scale declares it a disagreement: Resize's finite "
                       "differences in scales are nonzero at a fixed output size"),),
         Tag.NONDIFF,
         "Reshape's, Expand's and Resize's sizes are int64, non-differentiable by type: no "
         "precedent for a float input; Resize's scales is the only float one, and the "
         "catalogue's own evidence refutes its tag, so the convention decides nothing: "
         "Resize's, Upsample's and Range's float inputs are the math's, under its label"),
    Rule(Convention.DATA_DEPENDENT_SHAPE,
         "an op whose output length is decided by comparing its input's values is "
         "non-differentiable in them: smooth away from ties, but at the ties the op exists "
         "to find the output length changes",
         (TagPrecedent("Unique", 11, "input", "X", Tag.NONDIFF),
          TagPrecedent("Unique", 11, "output", "Y", Tag.NONDIFF)),
         Tag.NONDIFF,
         "NonZero's X is non-differentiable by type (its only output is int64), so it is no "
         "precedent; Unique's own tags cannot decide Unique"),
    Rule(Convention.STATE_OUTPUT,
         "an output that hands a normalization's statistics on -- the running state for the "
         "next step (running_mean, running_var) or the batch statistics saved for the "
         "backward pass (saved_mean, saved_var, Mean, InvStdDev) -- is non-differentiable: "
         "training frameworks never differentiate through it, although it is smooth in X",
         (TagPrecedent("BatchNormalization", 15, "output", "running_mean", Tag.NONDIFF,
                       "batchnormalization_training declares it a disagreement: running_mean "
                       "is smooth in X"),
          TagPrecedent("BatchNormalization", 15, "output", "running_var", Tag.NONDIFF,
                       "batchnormalization_training declares it a disagreement: running_var "
                       "is smooth in X")),
         Tag.NONDIFF,
         "BatchNormalization's own tags cannot decide BatchNormalization (running or saved "
         "statistics), and the catalogue's own evidence refutes them, so they decide "
         "LayerNormalization's Mean and InvStdDev (the only other ai.onnx op with such "
         "outputs) neither: the math's, under the label. "
         "PyTorch's derivatives.yaml marks native_batch_norm's and native_layer_norm's saved "
         "statistics non-differentiable too, but that is not ONNX's rule"),
    Rule(Convention.BODY_DEPENDENT,
         "a parameter of an op with a graph body (If, Loop, Scan, SequenceMap) is "
         "differentiable or not according to the body it runs: differentiable for a smooth "
         "body, flat for a Floor body; its tag is unknown",
         (_UNKNOWN_DEFINITION,),
         Tag.UNKNOWN),
    Rule(Convention.SAMPLING,
         "a sampling op's distribution parameter has one derivative per draw and another of "
         "the average; no ONNX rule says which a tag means, so no tag follows from evidence",
         (Statement("docs/DefineDifferentiability.md",
                    "a tag is defined by a partial derivative, which a random draw is not"),),
         None,
         "ONNX's own tags differ: Dropout-13 tags ratio non-differentiable while Bernoulli-15 "
         "leaves its input unknown"),
    Rule(Convention.QUANTIZED_STORAGE,
         "float8 and float4 tensors are quantized storage, never gradient carriers, like the "
         "integer types they stand in for",
         (Statement("QuantizeLinear (onnx/defs/quantization/defs.cc)",
                    "y = saturate(round(x / y_scale) + y_zero_point) for every y type, float8 "
                    "beside int8/uint8: a float8 y is a rounded code, as an int8 one is",
                    op="QuantizeLinear"),),
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
