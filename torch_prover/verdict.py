"""Evidence + schema tag -> verdict, per ONNX formal parameter. Pure functions, no I/O.

Rule of thumb (DESIGN §4): never say ``agree`` without evidence that could have said
``disagree``; an attribution problem or a failed numeric check makes ``inconclusive``.
"""
from __future__ import annotations

from dataclasses import dataclass

from .tags import DIFF, NONDIFF, UNKNOWN

AGREE, DISAGREE, PROPOSED, INCONCLUSIVE = "agree", "disagree", "proposed", "inconclusive"
VERDICTS = (AGREE, DISAGREE, PROPOSED, INCONCLUSIVE)
EVIDENCE_CLASSES = ("grad", "zero-grad", "no-grad", "integer", "constant", "absent",
                    "detached", "untracked", "ambiguous")

_INTEGER_DTYPES = ("int", "uint", "bool")


NOT_EXERCISED = "not exercised"


def not_exercised(reason: str) -> bool:
    """An inconclusive verdict that only means this case did not exercise the parameter."""
    return reason.startswith(NOT_EXERCISED)


def is_failure(verdict: str, reason: str, expected: str | None) -> bool:
    """Whether one verdict fails a run: a disagreement, or an inconclusive verdict where
    evidence should have decided -- unless the case declares exactly that verdict (a
    reviewed finding, DESIGN's "waived"). The one rule for prove, verify-all and reports."""
    if expected == verdict:
        return False
    return verdict == DISAGREE or (verdict == INCONCLUSIVE and not not_exercised(reason))


@dataclass(frozen=True)
class Parameter:
    """One entry of the proof record: one index of one formal parameter."""

    io: str
    index: int
    name: str
    source: str
    evidence: str
    tag: str
    verdict: str
    reason: str
    tag_latest: str | None = None
    path: tuple[str, ...] = ()
    expected: str | None = None       # verdict the case declares, when it deviates
    expected_reason: str | None = None


@dataclass(frozen=True)
class Gate:
    """What the numeric check says about one gradient-carrying tensor."""

    state: str      # "passed" | "failed" | "forward-mismatch" | "no-runtime" | "off"
    detail: str


def is_integer_dtype(dtype: str | None) -> bool:
    return bool(dtype) and dtype.startswith(_INTEGER_DTYPES)


def supported_tag(evidence: str, dtype: str | None) -> str | None:
    """The tag the evidence supports, or None when it says nothing."""
    if evidence in ("grad",):
        return DIFF
    if evidence in ("zero-grad", "no-grad", "integer", "detached"):
        return NONDIFF
    if evidence == "constant":
        return NONDIFF if is_integer_dtype(dtype) else None
    return None


def decide(*, evidence: str, detail: str, dtype: str | None, tag: str, subject: str,
           problem: str | None = None, gate: Gate | None = None,
           reference: bool = False, float_capable: bool = False) -> tuple[str, str]:
    """(verdict, one-line reason) for one parameter.

    ``float_capable``: the schema also allows floating types here, so integer evidence
    (an integer tensor or constant) only shows the case picked an integer type.
    """
    if problem:
        return INCONCLUSIVE, f"ambiguous attribution: {problem}"
    if gate is not None and gate.state == "forward-mismatch":
        return INCONCLUSIVE, f"the exported model is not the PyTorch model: {gate.detail}"
    supports = supported_tag(evidence, dtype)
    if supports == NONDIFF and float_capable and (
            evidence == "integer" or evidence == "constant"):
        return INCONCLUSIVE, (f"{NOT_EXERCISED}: {dtype} here, but the schema also allows "
                              "floating types; a floating case must decide")
    if supports is None:
        if evidence == "absent":
            return INCONCLUSIVE, f"{NOT_EXERCISED}: this case leaves it out"
        if evidence == "constant":
            return INCONCLUSIVE, (f"{NOT_EXERCISED}: a constant of type {dtype or 'float'}; "
                                  "its dtype alone cannot decide")
        if evidence == "untracked":
            return INCONCLUSIVE, f"{NOT_EXERCISED}: {detail}"
        return INCONCLUSIVE, f"no evidence ({evidence})"
    because = _because(evidence, detail, dtype, subject)
    if evidence in ("grad", "zero-grad") and gate is not None:
        if gate.state == "failed":
            return INCONCLUSIVE, f"{because}, but the numeric check failed: {gate.detail}"
        if gate.state == "passed":
            because += f"; {gate.detail}"
        elif reference:
            return INCONCLUSIVE, (f"{because}, but this reference case counts only with a "
                                  f"numeric confirmation: {gate.detail}")
        else:
            because += f" ({gate.detail})"
    if tag == UNKNOWN:
        return PROPOSED, f"{because} -> propose {supports}"
    if tag == supports:
        return AGREE, because
    if evidence == "zero-grad":
        return DISAGREE, (f"{because}: piecewise constant, which ONNX's convention tags "
                          f"non-differentiable, but the schema says {tag}")
    return DISAGREE, f"{because}, but the schema says {tag}"


def _because(evidence: str, detail: str, dtype: str | None, subject: str) -> str:
    if evidence in ("grad", "zero-grad") and subject.startswith("output"):
        return f"{subject}: {detail}"
    if evidence == "grad":
        return f"{subject} received a {detail}"
    if evidence == "zero-grad":
        return f"{subject}'s {detail}"
    if evidence == "no-grad":
        return f"{subject} requires grad but {detail}"
    if evidence == "integer":
        if detail.startswith("reaches"):
            return f"{subject} {detail}: cannot carry a gradient"
        return f"{subject} is {dtype}: cannot carry a gradient"
    if evidence == "constant":
        return f"a constant of type {dtype} folded into the graph: cannot carry a gradient"
    if evidence == "detached":
        return f"{subject} is {detail}"
    return f"{subject}: {detail}"
