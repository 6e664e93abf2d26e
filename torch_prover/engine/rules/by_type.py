"""When the schema's types alone decide a parameter: non-differentiable, with or without a case.

Three rules, each a fact about the schema, never about a case:

- **own types**: the parameter allows no gradient-carrying type (integer, bool, string,
  float8/float4 storage types): no gradient can flow through it.
- **no gradient-carrying output**: an input of an op none of whose outputs allows a
  gradient-carrying type (NonMaxSuppression's float ``boxes``: its only output is int64).
  ONNX's tag is about the partial derivative of a differentiable output with respect to the
  input (docs/DefineDifferentiability.md); with no such output there is none.
- **no gradient-carrying input**: an output of an op none of whose inputs allows a
  gradient-carrying type, or that has no inputs (Constant, RandomNormal, SequenceEmpty,
  TfIdfVectorizer's float ``Y``). The same definition read the other way: a differentiable
  output is one whose partial derivative with respect to a differentiable input exists,
  and "if the Jacobian exists, the op has some differentiable inputs and outputs"; with no
  input that can carry a gradient there is no Jacobian. Not applied to an op with a graph
  attribute (If, Loop, Scan, SequenceMap): its subgraphs read tensors of the outer scope,
  inputs the schema does not list -- If's outputs carry a gradient (its case shows it)
  although its one input is a bool.

The third rule decides only ops without a case (``outputs_from_inputs``): where a case
exists its two witnesses measure the outputs (and agree with the rule on every such case
today: Constant, ConstantOfShape, RandomNormal/RandomUniform, the windows), and a case
that declares an output inconclusive (hammingwindow_periodic's forward mismatch) keeps
its declaration. The verdict itself is ``verdict.by_type_decision`` for both.
"""
from __future__ import annotations

from dataclasses import dataclass
from ...compat import StrEnum
from typing import Any

from ...conventions import Convention
from ...tags.schema import Formal, SchemaTags, has_graph_attribute
from ...vocab import Tag
from .verdict import Decision, by_type_decision


class TypeRule(StrEnum):
    """Which of the three by-type rules decided (a record field: ``by_type``)."""

    OWN_TYPES = "own types"
    NO_GRADIENT_OUTPUT = "no gradient-carrying output"
    NO_GRADIENT_INPUT = "no gradient-carrying input"


@dataclass(frozen=True)
class TypeReason:
    """``convention``: the named convention the decision rests on besides the types (a
    float8/float4 zero point is non-differentiable only as quantized storage, where an int8
    one is so by type alone): every verdict and cell made from it carries the label, so
    fix-tags withholds it unless ``--include-conventions`` (docs/verdicts.md)."""

    rule: TypeRule
    reason: str
    convention: Convention | None = None


def _storage(formals: tuple[Formal, ...]) -> Convention | None:
    """The convention a rule over these parameters rests on: 'quantized storage' when one of
    them allows a float8/float4 type (QuantizeLinear's y), none when the types alone say."""
    return Convention.QUANTIZED_STORAGE if any(f.quantized_storage for f in formals) else None


def _types_of(formals: tuple[Formal, ...]) -> str:
    return "; ".join(f"{f.name}: {', '.join(f.types)}" for f in formals)


def type_reason(tags: SchemaTags, formal: Formal, *,
                outputs_from_inputs: bool) -> TypeReason | None:
    """Why the schema's types alone make ``formal`` non-differentiable, or None."""
    if not formal.float_capable:
        return TypeReason(TypeRule.OWN_TYPES, "the schema allows no gradient-carrying type "
                                              f"here ({', '.join(formal.types) or 'none'})",
                          _storage((formal,)))
    if formal.io == "input" and tags.outputs and not any(f.float_capable for f in tags.outputs):
        return TypeReason(TypeRule.NO_GRADIENT_OUTPUT, "no output of the op can carry a "
                                                       f"gradient ({_types_of(tags.outputs)})",
                          _storage(tags.outputs))
    if (formal.io == "output" and outputs_from_inputs
            and not any(f.float_capable for f in tags.inputs)
            and not has_graph_attribute(tags.op, tags.domain)):
        if not tags.inputs:
            return TypeReason(TypeRule.NO_GRADIENT_INPUT,
                              "the op has no inputs: no differentiable input for a derivative "
                              "to be taken with respect to")
        return TypeReason(TypeRule.NO_GRADIENT_INPUT, "no input of the op can carry a "
                                                      f"gradient ({_types_of(tags.inputs)})",
                          _storage(tags.inputs))
    return None


@dataclass(frozen=True)
class TypeRow:
    """One formal parameter of an op without a case: decided by type, or not decidable."""

    formal: Formal
    why: TypeReason | None
    decision: Decision | None


def decide_op(tags: SchemaTags) -> tuple[TypeRow, ...]:
    """Every formal parameter of an op that has no case, by type where the types decide."""
    rows = []
    for f in tags.inputs + tags.outputs:
        why = type_reason(tags, f, outputs_from_inputs=True)
        rows.append(TypeRow(f, why, None if why is None else
                            by_type_decision(Tag(f.tag), why.reason)))
    return tuple(rows)


def row_record(row: TypeRow) -> dict[str, Any]:
    """A decided row in the shape of a proof record's parameter (``io``, ``index``, ``name``,
    ``tag``, ``verdict``, ``supports``, ``rule``, ``reason``), plus ``by_type`` (which rule)
    and ``types``; no witnesses: there is no case. ``index`` is the formal parameter's
    position (a variadic one: its first index)."""
    f, d = row.formal, row.decision
    assert d is not None and row.why is not None
    return {"io": f.io, "index": f.position, "name": f.name, "types": list(f.types),
            "tag": f.tag, "verdict": d.verdict, "supports": d.supports, "rule": d.rule,
            "by_type": row.why.rule, "reason": d.reason,
            **({"convention": row.why.convention} if row.why.convention else {})}


def undecided_label(row: TypeRow) -> str:
    """``input 0 (boxes)``: how a parameter the types cannot decide is listed."""
    return f"{row.formal.io} {row.formal.position} ({row.formal.name})"
