"""The function-body witness over every ai.onnx schema version with a body, against its tags.

A case expands its op's body for its own node (``function_body.for_node``); the survey
(``scripts/function_bodies.py``, ``tests/test_function_body.py``) has no case, so it
makes a node per schema version: every input given, each of a gradient-carrying type its
constraint allows (``float`` first) or else its first allowed type, shapes unknown, the
schema's default attributes. Where onnx's builder needs more than that to build a body
-- a required attribute, a rank or a shape it reads -- ``OVERRIDES`` gives it, with why:
small valid values, which a path does not depend on (it follows the ops the body holds
and their types, not the numbers).
Each parameter's outcome is then checked against its declared tag (``BodyCheck``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from ...compat import StrEnum

import onnx
import onnx.defs
from onnx import helper

from ...tags.schema import carries_gradient, schema_tags
from ...vocab import BodyOutcome as B
from ...vocab import Tag
from .function_body import BodyKind, BodyResult, Finding, derive


class BodyCheck(StrEnum):
    """A derived outcome against the schema's declared tag (the survey's columns)."""

    CONSISTENT = "consistent"         # derived and declared agree
    CONTRADICTING = "contradicting"   # derived differentiable, declared non- (or vice versa)
    PROPOSED = "proposed"             # declared unknown, the body decides
    UNDECIDED = "undecided"           # the body's paths cross an unknown tag or graph
    NOT_APPLICABLE = "not applicable"  # no gradient-carrying type, not given, not built


_PREFERRED = ("tensor(float)", "tensor(double)", "tensor(float16)", "tensor(bfloat16)")


@dataclass(frozen=True)
class Override:
    """What the survey's node needs beyond the defaults, and why."""

    why: str
    attributes: dict[str, int] = field(default_factory=dict)
    shapes: dict[int, tuple[int | str, ...]] = field(default_factory=dict)  # input -> shape
    absent: tuple[int, ...] = ()   # inputs left out


OVERRIDES: dict[str, Override] = {
    "GroupNormalization": Override("num_groups is required and has no default",
                                   attributes={"num_groups": 1}),
    "DepthToSpace": Override("blocksize is required and has no default",
                             attributes={"blocksize": 2}),
    "SpaceToDepth": Override("blocksize is required and has no default",
                             attributes={"blocksize": 2}),
    "LinearAttention": Override("q_num_heads and kv_num_heads are required",
                                attributes={"q_num_heads": 2, "kv_num_heads": 2}),
    "RotaryEmbedding": Override(
        "the builder reads X's rank (3 or 4: batch, heads, sequence, head size)",
        shapes={0: ("B", "H", "S", "D"), 1: ("S", "D2"), 2: ("S", "D2"), 3: ("B", "S")}),
    "CausalConvWithState": Override(
        "the builder reads the kernel size from weight's shape (input [N, C, L], weight "
        "[C, 1, K] depthwise, bias [C], past_state [N, C, K-1])",
        shapes={0: (1, 4, 8), 1: (4, 1, 3), 2: (4,), 3: (1, 4, 2)}),
    "Attention": Override(
        "onnx's builder returns no body when nonpad_kv_seqlen (int64) is given with "
        "past_key and past_value; it carries no gradient either way", absent=(6,)),
}


def _type_of(allowed: list[str]) -> str:
    for t in _PREFERRED:
        if t in allowed:
            return t
    floats = [t for t in allowed if carries_gradient(t)]
    return (floats or sorted(allowed))[0]


def _proto(type_str: str, shape: tuple[int | str, ...] | None) -> onnx.TypeProto:
    if type_str.startswith("seq("):
        return helper.make_sequence_type_proto(_proto(type_str[4:-1], shape))
    if type_str.startswith("optional("):
        return helper.make_optional_type_proto(_proto(type_str[9:-1], shape))
    elem = onnx.TensorProto.DataType.Value(type_str[len("tensor("):-1].upper())
    return helper.make_tensor_type_proto(elem, None if shape is None else list(shape))


def survey_node(schema: onnx.defs.OpSchema) -> tuple[onnx.NodeProto, list[onnx.TypeProto]]:
    """The survey's node of ``schema`` and its input types (schema defaults are added by
    ``function_body.derive``, as for a case's node)."""
    o = OVERRIDES.get(schema.name, Override(""))
    constraints = {c.type_param_str: list(c.allowed_type_strs) for c in schema.type_constraints}
    inputs, types = [], []
    for i, p in enumerate(schema.inputs):
        if i in o.absent:
            inputs.append("")
            types.append(onnx.TypeProto())
            continue
        inputs.append(p.name)
        types.append(_proto(_type_of(constraints.get(p.type_str, [p.type_str])),
                            o.shapes.get(i)))
    while inputs and not inputs[-1]:
        inputs.pop()
        types.pop()
    node = helper.make_node(schema.name, inputs, [p.name for p in schema.outputs],
                            **o.attributes)
    return node, types


@dataclass(frozen=True)
class SurveyRow:
    """One parameter of one schema version with a body, against its declared tag."""

    op: str
    since_version: int
    io: str
    index: int
    name: str
    tag: Tag
    finding: Finding
    check: BodyCheck
    kind: BodyKind | None
    opset: int | None


def check(outcome: B, tag: Tag) -> BodyCheck:
    """A derived outcome against a declared tag."""
    if outcome in (B.NOT_APPLICABLE, B.NOT_BUILT):
        return BodyCheck.NOT_APPLICABLE
    if outcome is B.UNKNOWN:
        return BodyCheck.UNDECIDED
    if tag == Tag.UNKNOWN:
        return BodyCheck.PROPOSED
    said = Tag.DIFF if outcome is B.DIFF else Tag.NONDIFF
    return BodyCheck.CONSISTENT if said == tag else BodyCheck.CONTRADICTING


def schemas_with_body() -> list[onnx.defs.OpSchema]:
    """Every ai.onnx schema version with a function body, static or context-dependent."""
    return sorted((s for s in onnx.defs.get_all_schemas_with_history()
                   if s.domain in ("", "ai.onnx")
                   and (s.has_function or s.has_context_dependent_function)),
                  key=lambda s: (s.name, s.since_version))


def survey_one(schema: onnx.defs.OpSchema) -> BodyResult:
    """A schema version's newest body, expanded for ``survey_node``'s node: derived at the
    newer of its own version and its newest body's (Elu-22's body is keyed 18, the opset
    its primitives are read at; at opset 18 itself Elu-6 is in force)."""
    versions = list(schema.function_opset_versions) + list(
        schema.context_dependent_function_opset_versions)
    node, types = survey_node(schema)
    return derive(schema.name, max(schema.since_version, *versions), node, types,
                  schema.domain)


def survey() -> tuple[SurveyRow, ...]:
    """Every parameter of every schema version with a body, checked against its tag."""
    rows = []
    for s in schemas_with_body():
        res = survey_one(s)
        assert res.since_version == s.since_version, (s.name, s.since_version)
        tags = schema_tags(s.name, s.since_version, s.domain)
        for io, formals in (("input", tags.inputs), ("output", tags.outputs)):
            for f in formals:
                found = res.finding(io, f.position)
                rows.append(SurveyRow(s.name, s.since_version, io, f.position, f.name,
                                      Tag(f.tag), found, check(found.outcome, Tag(f.tag)),
                                      res.kind, res.opset))
    return tuple(rows)
