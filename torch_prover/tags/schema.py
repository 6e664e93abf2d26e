"""Schema tags: what ONNX says about each input and output of an operator.

Three explicit states -- differentiable, non-differentiable, unknown -- read from
onnx.defs for the schema version in force at a given opset (and the latest one).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import onnx.defs

from ..errors import ProverError

DIFF, NONDIFF, UNKNOWN = "differentiable", "non-differentiable", "unknown"
TAG_STATES = (DIFF, NONDIFF, UNKNOWN)

_CATEGORY = {
    onnx.defs.OpSchema.DifferentiationCategory.Differentiable: DIFF,
    onnx.defs.OpSchema.DifferentiationCategory.NonDifferentiable: NONDIFF,
    onnx.defs.OpSchema.DifferentiationCategory.Unknown: UNKNOWN,
}
_OPTION = {
    onnx.defs.OpSchema.FormalParameterOption.Single: "single",
    onnx.defs.OpSchema.FormalParameterOption.Optional: "optional",
    onnx.defs.OpSchema.FormalParameterOption.Variadic: "variadic",
}
_GRADIENT_TYPES = {f"tensor({t}" for t in ("float16", "float", "double", "bfloat16",
                                              "complex64", "complex128")}
_NON_DIFF_TYPE_PREFIXES = ("tensor(int", "tensor(uint", "tensor(bool", "tensor(string",
                           "seq(tensor(int", "seq(tensor(uint", "seq(tensor(bool", "seq(tensor(string")

_STORAGE_FLOATS = ("tensor(float8", "tensor(float4")


def _element_type(t: str) -> str:
    """``optional(seq(tensor(float)))`` -> ``tensor(float``: the tensor type inside."""
    while t.startswith(("seq(", "optional(")):
        t = t.split("(", 1)[1][:-1]
    return t.rstrip(")")


def carries_gradient(type_str: str) -> bool:
    """Whether a value of this type (``tensor(float)``, ``seq(tensor(int64))``...) can carry a
    gradient: a floating or complex element type; float8/float4 are storage types that
    cannot. The one test for a schema's allowed types and an inferred value's type alike."""
    return _element_type(type_str) in _GRADIENT_TYPES


@dataclass(frozen=True)
class Formal:
    """One formal parameter of a schema."""

    io: str          # "input" | "output"
    position: int    # index among the schema's formal parameters
    name: str
    tag: str         # one of TAG_STATES
    option: str      # single | optional | variadic
    types: tuple[str, ...]

    @property
    def float_capable(self) -> bool:
        """Some allowed type can carry a gradient (float8/float4 storage types cannot):
        integer evidence alone says nothing then."""
        return any(carries_gradient(t) for t in self.types)

    @property
    def quantized_storage(self) -> bool:
        """Some allowed type is a float8/float4 storage type: a by-type decision here rests
        on those being quantized codes, not gradient carriers (the 'quantized storage'
        convention, conventions.py), not on the types alone."""
        return any(_element_type(t).startswith(_STORAGE_FLOATS) for t in self.types)

    @property
    def non_differentiable_by_type(self) -> bool:
        """All allowed types are integer/bool/string: no gradient can flow, case or not."""
        return bool(self.types) and all(t.startswith(_NON_DIFF_TYPE_PREFIXES) for t in self.types)


@dataclass(frozen=True)
class SchemaTags:
    op: str
    domain: str
    since_version: int
    inputs: tuple[Formal, ...]
    outputs: tuple[Formal, ...]
    source: str = "onnx.defs"

    def formal(self, io: str, index: int) -> Formal | None:
        """The formal parameter behind node input/output ``index`` (variadic: the last one)."""
        formals = self.inputs if io == "input" else self.outputs
        if index < len(formals):
            return formals[index]
        if formals and formals[-1].option == "variadic":
            return formals[-1]
        return None


def _formals(io: str, params, type_map: dict[str, tuple[str, ...]]) -> tuple[Formal, ...]:
    return tuple(
        Formal(io, i, p.name, _CATEGORY[p.differentiation_category], _OPTION[p.option],
               type_map.get(p.type_str, (p.type_str,)))
        for i, p in enumerate(params))


def _from_schema(s: onnx.defs.OpSchema) -> SchemaTags:
    type_map = {c.type_param_str: tuple(sorted(c.allowed_type_strs)) for c in s.type_constraints}
    return SchemaTags(s.name, s.domain, s.since_version,
                      _formals("input", s.inputs, type_map), _formals("output", s.outputs, type_map))


class UnknownOpError(ProverError, LookupError):
    """An op name onnx.defs does not know; the message names the closest ones."""


def schema_tags(op: str, opset: int | None = None, domain: str = "") -> SchemaTags:
    """Tags of ``op`` for the schema in force at ``opset`` (latest when None)."""
    try:
        if opset is None:
            return _from_schema(onnx.defs.get_schema(op, domain))
        return _from_schema(onnx.defs.get_schema(op, opset, domain))
    except onnx.defs.SchemaError:
        if opset is not None and onnx.defs.has(op, domain):
            first = min(s.since_version for s in onnx.defs.get_all_schemas_with_history()
                        if s.name == op and s.domain == domain)
            raise UnknownOpError(f"{op} has no schema at opset {opset} (its first version is "
                                 f"{first})") from None
        import difflib
        close = difflib.get_close_matches(op, all_ops(), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownOpError(f"unknown ONNX op {op!r}" + hint) from None


@functools.lru_cache(maxsize=1)
def installed_digest() -> str:
    """A digest of every schema version's tags and types in the installed onnx: what a
    report names as its tag source when the tags came from onnx.defs, so a report made
    with another onnx (or an ONNX branch build that kept the version string) is told
    apart from this one's."""
    import hashlib
    h = hashlib.sha256()
    for s in sorted(onnx.defs.get_all_schemas_with_history(),
                    key=lambda s: (s.domain, s.name, s.since_version)):
        h.update(repr(_from_schema(s)).encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def all_ops() -> tuple[str, ...]:
    """Every op of the default (ai.onnx) domain of the installed onnx, deprecated ones
    (Scatter, Upsample) included: their tags still stand in older opsets."""
    return tuple(sorted({s.name for s in onnx.defs.get_all_schemas_with_history()
                         if s.domain in ("", "ai.onnx")}))


def canonical_op(op: str) -> str:
    """Accept any capitalisation (``reshape`` -> ``Reshape``); raise UnknownOpError otherwise."""
    if op in all_ops():
        return op
    by_lower = {o.lower(): o for o in all_ops()}
    if op.lower() in by_lower:
        return by_lower[op.lower()]
    schema_tags(op)  # raises with suggestions
    return op


@functools.lru_cache(maxsize=None)
def has_graph_attribute(op: str, domain: str = "") -> bool:
    """Whether the op's latest schema has a graph-valued attribute (If, Loop, Scan,
    SequenceMap): its subgraphs may read outer-scope tensors, inputs its formal parameters
    do not list. Read from onnx.defs whatever the tag source: attributes are not tags, and
    Operators.md lists them only as prose. An op onnx.defs does not know: False."""
    try:
        s = onnx.defs.get_schema(op, domain)
    except onnx.defs.SchemaError:
        return False
    graph_types = (onnx.defs.OpSchema.AttrType.GRAPH, onnx.defs.OpSchema.AttrType.GRAPHS)
    return any(a.type in graph_types for a in s.attributes.values())


def is_deprecated(op: str, domain: str = "") -> bool:
    """Whether the op's latest schema is deprecated (Scatter, Upsample): its tags stand in
    older opsets only, so coverage counts it apart."""
    return bool(onnx.defs.get_schema(op, domain).deprecated)
