"""The third witness: an op's ONNX function body, with the primitive ops' tags pushed through it.

Why: ONNX already holds a pure implementation of 48 ops (75 schema versions) -- their
function bodies (``schema.has_function``, or built for a node's types and attributes when
``schema.has_context_dependent_function``). As DaCeML derives a backward pass from an
op's implementation, the body says where a gradient can go: an output is differentiable
with respect to input X when a path X -> ... -> Y exists on which every step goes from
a *differentiable* input of a node to a *differentiable* output of that node -- the
primitive ops' own schema tags, at the body's opset import. A value whose type carries no
gradient (integer, bool, float8: ``onnx.shape_inference`` on the body expanded for the
node's concrete types, else the primitive's type constraints) stops a path; a step across
an ``Unknown`` tag, or through a graph the analysis does not enter, makes the path
unknown, never differentiable. ``If`` branches and ``Loop`` and ``Scan`` bodies are
entered (``body_paths``), so a path through them is followed, not guessed.

The outcome per parameter (``vocab.BodyOutcome``): an input is differentiable when some
output is reachable from it on such a path, an output when it is reachable from some
input; the first path found is recorded (``X -> Sub -> Div -> Mul -> Y``). It decides
nothing alone: ``engine/rules/verdict.py`` flags a verdict it contradicts. The derivation is
memoised per (schema version, body opset, node attributes, input types), so every body of
the installed onnx costs well under a second.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from ...compat import StrEnum
from typing import Sequence

import onnx
import onnx.defs
import onnx.inliner
import onnx.shape_inference
from onnx import helper

from ...errors import describe
from ...tags.schema import carries_gradient
from ...vocab import BodyOutcome as B
from .body_paths import D, Reach, Walk, better, carries, type_str, types_of

BODY_DOMAIN = "torch_prover.body"   # the private domain the body is inlined from


class BodyKind(StrEnum):
    """Where the body comes from: the schema's own, or built by onnx for the node."""

    FUNCTION = "function"
    CONTEXT_DEPENDENT = "context-dependent"


@dataclass(frozen=True)
class Finding:
    """The function-body witness of one parameter."""

    outcome: B
    detail: str
    path: tuple[str, ...] = ()


@dataclass(frozen=True)
class BodyResult:
    """One schema version's body, expanded for one node: a finding per node input/output."""

    op: str
    since_version: int
    kind: BodyKind | None          # None: the schema version has no function body
    opset: int | None              # the body's ai.onnx opset import (primitive tags from there)
    inputs: tuple[Finding, ...]
    outputs: tuple[Finding, ...]
    problem: Finding | None = None  # every parameter's finding when there is no derivation

    def finding(self, io: str, index: int) -> Finding:
        if self.problem is not None:
            return self.problem
        found = self.inputs if io == "input" else self.outputs
        return found[index] if index < len(found) else _absent(io, index)


def _absent(io: str, index: int) -> Finding:
    return Finding(B.NOT_APPLICABLE,
                   f"{io} {index} is not {'given' if io == 'input' else 'produced'}")


# ----------------------------------------------------------------------------- expansion
def _no_body(op: str, version: int, detail: str) -> BodyResult:
    return BodyResult(op, version, None, None, (), (), Finding(B.NOT_APPLICABLE, detail))


def _body_version(versions: Sequence[int], opset: int) -> int | None:
    """The body in force at ``opset``: the newest one not newer than it (as onnx picks)."""
    usable = [v for v in versions if v <= opset]
    return max(usable) if usable else None


def _call_model(fn: onnx.FunctionProto, node: onnx.NodeProto,
                types: Sequence[onnx.TypeProto]) -> onnx.ModelProto:
    """A one-node model calling the body as a local function, for the inliner."""
    fn = onnx.FunctionProto.FromString(fn.SerializeToString())
    fn.domain, fn.name = BODY_DOMAIN, node.op_type
    call = onnx.NodeProto.FromString(node.SerializeToString())
    call.domain = BODY_DOMAIN
    inputs = [helper.make_value_info(x, t) for x, t in zip(node.input, types) if x]
    outputs = [helper.make_value_info(y, onnx.TypeProto()) for y in node.output if y]
    graph = helper.make_graph([call], "body", inputs, outputs)
    imports = list(fn.opset_import) + [helper.make_opsetid(BODY_DOMAIN, 1)]
    return helper.make_model(graph, opset_imports=imports, functions=[fn])


@functools.lru_cache(maxsize=None)
def _derive(op: str, domain: str, opset: int, node_bytes: bytes,
            type_bytes: tuple[bytes, ...], names: tuple[tuple[str, ...], tuple[str, ...]]
            ) -> BodyResult:
    """The derivation, memoised on what determines it (all hashable bytes)."""
    schema = onnx.defs.get_schema(op, opset, domain)
    version = schema.since_version
    node = onnx.NodeProto.FromString(node_bytes)
    types = [onnx.TypeProto.FromString(b) for b in type_bytes]
    required_graph = [a for a, s in schema.attributes.items()
                      if s.type in (onnx.defs.OpSchema.AttrType.GRAPH,
                                    onnx.defs.OpSchema.AttrType.GRAPHS)
                      and not any(x.name == a for x in node.attribute)]
    if schema.has_function:
        kind, body_v = BodyKind.FUNCTION, _body_version(schema.function_opset_versions, opset)
    else:
        kind = BodyKind.CONTEXT_DEPENDENT
        body_v = _body_version(schema.context_dependent_function_opset_versions, opset)
    if body_v is None:
        return _no_body(op, version, f"{op}-{version} has no function body at opset {opset}")
    if required_graph:
        return BodyResult(op, version, kind, body_v, (), (), Finding(
            B.UNKNOWN, f"body-dependent: {op}'s function runs the node's own "
                       f"'{required_graph[0]}' graph, which this node does not give"))
    try:
        if kind is BodyKind.FUNCTION:
            raw = schema.get_function_with_opset_version(body_v)
        else:
            raw = schema.get_context_dependent_function_with_opset_version(
                body_v, node_bytes, list(type_bytes))
    except Exception as exc:  # noqa: BLE001 - onnx's builder: any failure is "not built"
        return BodyResult(op, version, kind, body_v, (), (), Finding(
            B.NOT_BUILT, f"onnx could not build the {kind} body: {describe(exc)}"))
    if not raw:
        return BodyResult(op, version, kind, body_v, (), (), Finding(
            B.NOT_BUILT, f"onnx's builder returned no {kind} body for this node's inputs and "
                         "attributes"))
    fn = onnx.FunctionProto.FromString(raw)
    body_opset = next((o.version for o in fn.opset_import if o.domain in ("", "ai.onnx")),
                      body_v)
    try:
        model = onnx.inliner.inline_local_functions(_call_model(fn, node, types))
    except Exception as exc:  # noqa: BLE001 - the inliner's refusal is the finding
        return BodyResult(op, version, kind, body_opset, (), (), Finding(
            B.NOT_BUILT, f"onnx could not inline the {kind} body: {describe(exc)}"))
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - no inferred types: the type constraints decide
        pass
    return _propagate(op, version, kind, body_opset, model.graph, node, names)


def _propagate(op: str, version: int, kind: BodyKind, opset: int, graph: onnx.GraphProto,
               node: onnx.NodeProto, names: tuple[tuple[str, ...], tuple[str, ...]]
               ) -> BodyResult:
    """Reachability from each given input to each produced output, then the findings."""
    in_names, out_names = names
    types = types_of(graph, {})
    walk = Walk(opset)
    reach: dict[tuple[int, int], Reach] = {}
    for i, x in enumerate(node.input):
        if not x or not carries(types.get(x), ()):
            continue
        scope = {x: Reach(D, (in_names[i],))}
        walk.run(graph.node, scope, types)
        for j, y in enumerate(node.output):
            r = scope.get(y) if y else None
            if r is not None and y != x and carries(types.get(y), ()):
                reach[i, j] = Reach(r.level, r.path + (out_names[j],), r.why)
            elif r is not None and y == x:
                reach[i, j] = Reach(r.level, (in_names[i], out_names[j]), r.why)

    def finding(io: str, k: int, value: str) -> Finding:
        if not value:
            return _absent(io, k)
        t = type_str(types.get(value))
        if t is not None and not carries_gradient(t):
            return Finding(B.NOT_APPLICABLE, f"{t} carries no gradient")
        pairs = [r for (i, j), r in sorted(reach.items())
                 if (i if io == "input" else j) == k]
        best = None
        for r in pairs:
            best = better(best, r)
        where = "to any output" if io == "input" else "from any input"
        if best is None:
            return Finding(B.NONDIFF, f"no path a gradient can take {where} in the body")
        shown = " -> ".join(best.path)
        if best.level == D:
            return Finding(B.DIFF, f"gradient path {shown}", best.path)
        return Finding(B.UNKNOWN, f"the only paths {where} cross {best.why}: {shown}",
                       best.path)

    return BodyResult(op, version, kind, opset,
                      tuple(finding("input", i, x) for i, x in enumerate(node.input)),
                      tuple(finding("output", j, y) for j, y in enumerate(node.output)))


def _schema(op: str, opset: int, domain: str) -> onnx.defs.OpSchema | BodyResult:
    """The schema in force at ``opset`` when it has a function body, else why not."""
    try:
        schema = onnx.defs.get_schema(op, opset, domain)
    except onnx.defs.SchemaError:
        return _no_body(op, 0, f"onnx.defs has no {op} at opset {opset}")
    if not (schema.has_function or schema.has_context_dependent_function):
        return _no_body(op, schema.since_version, "no function body")
    return schema


def derive(op: str, opset: int, node: onnx.NodeProto, input_types: Sequence[onnx.TypeProto],
           domain: str = "") -> BodyResult:
    """The function-body witness of ``node`` (an ``op`` node of a model at ``opset``), its
    inputs of ``input_types`` (one per node input; absent ones ignored): derived from the
    body in force at ``opset``, or why there is none."""
    schema = _schema(op, opset, domain)
    if isinstance(schema, BodyResult):
        return schema
    call = helper.make_node(op, [f"in{i}" if x else "" for i, x in enumerate(node.input)],
                            [f"out{j}" if y else "" for j, y in enumerate(node.output)],
                            domain=domain)
    given = {a.name for a in node.attribute}
    call.attribute.extend(node.attribute)
    call.attribute.extend(a.default_value for name, a in sorted(schema.attributes.items())
                          if name not in given and a.default_value.type)
    formal_in = [p.name for p in schema.inputs]
    formal_out = [p.name for p in schema.outputs]
    names = (tuple(formal_in[min(i, len(formal_in) - 1)] for i in range(len(node.input))),
             tuple(formal_out[min(j, len(formal_out) - 1)] for j in range(len(node.output))))
    types = tuple((t if x else onnx.TypeProto()).SerializeToString()
                  for x, t in zip(node.input, input_types))
    return _derive(op, domain, opset, call.SerializeToString(deterministic=True), types, names)


def for_node(model: onnx.ModelProto, node_index: int) -> BodyResult:
    """The witness for node ``node_index`` of an exported model: its actual input types and
    attributes (shape inference on the model gives the types of intermediate values)."""
    node = model.graph.node[node_index]
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    domain = "" if node.domain == "ai.onnx" else node.domain
    schema = _schema(node.op_type, opset, domain)
    if isinstance(schema, BodyResult):   # no body: no need to infer the model's types
        return schema
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph
    except Exception:  # noqa: BLE001 - the declared types of inputs and outputs still stand
        inferred = model.graph
    types = types_of(inferred, {})
    return derive(node.op_type, opset, node,
                  [types.get(x, onnx.TypeProto()) for x in node.input], domain)
