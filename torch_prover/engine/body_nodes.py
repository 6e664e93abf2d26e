"""The node each schema version's function body is expanded for in the survey.

A case expands the body for its own node (``function_body.for_node``); the survey of every
schema version with a body (``function_body.survey``, ``scripts/function_bodies.py``) has
no case, so it makes a node: every input given, each of a gradient-carrying type its
constraint allows (``float`` first) or else its first allowed type, shapes unknown, the
schema's default attributes. Where onnx's builder needs more than that to build a body
-- a required attribute, a rank or a shape it reads -- this table gives it, with why.
Values are what the ONNX docs' own examples use, not chosen to make a derivation come out.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import onnx
import onnx.defs
from onnx import helper

from ..tags.schema import carries_gradient

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
