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
unknown, never differentiable. ``If`` branches and ``Loop`` and ``Scan`` bodies are entered (carried
values to a fixpoint), so a path through them is followed, not guessed.

The outcome per parameter (``vocab.BodyOutcome``): an input is differentiable when some
output is reachable from it on such a path, an output when it is reachable from some
input; the first path found is recorded (``X -> Sub -> Div -> Mul -> Y``). It decides
nothing alone: ``engine/verdict.py`` flags a verdict it contradicts. The derivation is
memoised per (schema version, body opset, node attributes, input types), so every body of
the installed onnx costs well under a second.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import StrEnum
from typing import Iterable, Sequence

import onnx
import onnx.defs
import onnx.inliner
import onnx.shape_inference
from onnx import helper

from ..tags.schema import SchemaTags, carries_gradient, schema_tags
from ..vocab import BodyOutcome as B
from ..vocab import Tag
from . import body_nodes

BODY_DOMAIN = "torch_prover.body"   # the private domain the body is inlined from
_D, _U = 2, 1                       # reach levels: a differentiable path, an unknown one


class BodyKind(StrEnum):
    """Where the body comes from: the schema's own, or built by onnx for the node."""

    FUNCTION = "function"
    CONTEXT_DEPENDENT = "context-dependent"


class BodyCheck(StrEnum):
    """A derived outcome against the schema's declared tag (the survey's columns)."""

    CONSISTENT = "consistent"         # derived and declared agree
    CONTRADICTING = "contradicting"   # derived differentiable, declared non- (or vice versa)
    PROPOSED = "proposed"             # declared unknown, the body decides
    UNDECIDED = "undecided"           # the body's paths cross an unknown tag or graph
    NOT_APPLICABLE = "not applicable"  # no gradient-carrying type, not given, not built


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
        if index < len(found):
            return found[index]
        return Finding(B.NOT_APPLICABLE, f"{io} {index} is not given")

    @property
    def label(self) -> str:
        """``Clip-13 (context-dependent body, opset 13)``: what the witness derived from."""
        if self.kind is None:
            return f"{self.op}-{self.since_version}"
        return f"{self.op}-{self.since_version} ({self.kind} body, opset {self.opset})"


@dataclass(frozen=True)
class _Reach:
    """How a value is reached from the input under study: its level, the path, and (for an
    unknown path) the first unknown step it crosses."""

    level: int
    path: tuple[str, ...]
    why: str = ""


def _better(a: _Reach | None, b: _Reach | None) -> _Reach | None:
    """The higher level wins; at the same level the first path found stays (deterministic)."""
    if b is None:
        return a
    if a is None or b.level > a.level:
        return b
    return a


def _step(r: _Reach, level: int, label: str, why: str = "") -> _Reach:
    """``r`` extended by one step of ``level``: the path's level is its weakest step's."""
    if level >= r.level:
        return _Reach(r.level, r.path + (label,), r.why)
    return _Reach(level, r.path + (label,), r.why or why)


# ----------------------------------------------------------------------------- types
def type_str(t: onnx.TypeProto | None) -> str | None:
    """``tensor(float)``, ``seq(tensor(int64))``... of an inferred type, or None when
    inference left the element type unknown."""
    if t is None:
        return None
    which = t.WhichOneof("value")
    if which == "tensor_type" and t.tensor_type.elem_type:
        return f"tensor({onnx.TensorProto.DataType.Name(t.tensor_type.elem_type).lower()})"
    if which == "sequence_type":
        inner = type_str(t.sequence_type.elem_type)
        return None if inner is None else f"seq({inner})"
    if which == "optional_type":
        inner = type_str(t.optional_type.elem_type)
        return None if inner is None else f"optional({inner})"
    return None


def _carries(t: onnx.TypeProto | None, allowed: Sequence[str]) -> bool:
    """Whether a value can carry a gradient: its inferred type decides; where inference
    gave none, the primitive's type constraint (any gradient-carrying allowed type)."""
    s = type_str(t)
    if s is not None:
        return carries_gradient(s)
    return any(carries_gradient(a) for a in allowed) if allowed else True


def _types_of(graph: onnx.GraphProto, outer: dict[str, onnx.TypeProto]
              ) -> dict[str, onnx.TypeProto]:
    types = dict(outer)
    for v in list(graph.input) + list(graph.value_info) + list(graph.output):
        if v.type.WhichOneof("value"):
            types[v.name] = v.type
    for t in graph.initializer:
        types[t.name] = helper.make_tensor_type_proto(t.data_type, None)
    return types


@functools.lru_cache(maxsize=None)
def _tags(op: str, opset: int, domain: str) -> SchemaTags | None:
    try:
        return schema_tags(op, opset, domain)
    except LookupError:
        return None


# ----------------------------------------------------------------------------- propagation
class _Walk:
    """Forward reachability through one expanded body, from one input at a time."""

    def __init__(self, opset: int) -> None:
        self.opset = opset

    def edge(self, node: onnx.NodeProto, i: int, j: int, types: dict[str, onnx.TypeProto]
             ) -> tuple[int, str] | None:
        """The step from node input ``i`` to output ``j``: (level, why unknown) or None."""
        tags = _tags(node.op_type, self.opset, node.domain)
        name = f"{node.op_type}-{self.opset}"
        if tags is None:
            return _U, f"{node.op_type} ({node.domain or 'ai.onnx'}) has no schema at opset {self.opset}"
        fin, fout = tags.formal("input", i), tags.formal("output", j)
        if fin is None or fout is None:
            return _U, f"{name} declares no input {i} / output {j}"
        if not (_carries(types.get(node.input[i]), fin.types)
                and _carries(types.get(node.output[j]), fout.types)):
            return None
        if Tag.NONDIFF in (fin.tag, fout.tag):
            return None
        if fin.tag == fout.tag == Tag.DIFF:
            return _D, ""
        unknown = fin if fin.tag != Tag.DIFF else fout
        return _U, (f"{tags.op}-{tags.since_version} {unknown.io} '{unknown.name}' "
                    "is tagged unknown")

    def run(self, nodes: Iterable[onnx.NodeProto], scope: dict[str, _Reach],
            types: dict[str, onnx.TypeProto], prefix: str = "") -> None:
        """Push the reached values of ``scope`` through ``nodes`` (topologically sorted, as
        ONNX requires), adding every value reached to ``scope``."""
        for node in nodes:
            graphs = [a for a in node.attribute if a.type in (onnx.AttributeProto.GRAPH,
                                                              onnx.AttributeProto.GRAPHS)]
            if not graphs:
                self._plain(node, scope, types, prefix)
            elif node.op_type == "If" and node.domain in ("", "ai.onnx"):
                self._if(node, scope, types, prefix)
            elif node.op_type == "Loop" and node.domain in ("", "ai.onnx"):
                self._loop(node, scope, types, prefix)
            elif node.op_type == "Scan" and node.domain in ("", "ai.onnx"):
                self._scan(node, scope, types, prefix)
            else:
                self._opaque(node, scope, types, prefix)

    def _plain(self, node, scope, types, prefix) -> None:
        label = prefix + node.op_type
        for j, out in enumerate(node.output):
            if not out:
                continue
            best = None
            for i, inp in enumerate(node.input):
                if inp and inp in scope:
                    e = self.edge(node, i, j, types)
                    if e is not None:
                        best = _better(best, _step(scope[inp], e[0], label, e[1]))
            if best is not None:
                scope[out] = _better(scope.get(out), best)

    def _exit(self, r: _Reach | None, out: str, types, label: str) -> _Reach | None:
        if r is None or not out or not _carries(types.get(out), ()):
            return None
        return _step(r, _D, label)

    def _if(self, node, scope, types, prefix) -> None:
        """Both branches entered with the outer values in scope; branch output k is If's
        output k (If's own tags are unknown: the branches are what decides)."""
        found: list[_Reach | None] = [None] * len(node.output)
        for attr in node.attribute:
            if attr.type != onnx.AttributeProto.GRAPH:
                continue
            g = attr.g
            inner_types = _types_of(g, types)
            inner = dict(scope)
            self.run(g.node, inner, inner_types, f"{prefix}If/{attr.name}/")
            for k, o in enumerate(g.output[:len(node.output)]):
                if o.name in inner and _carries(inner_types.get(o.name), ()):
                    found[k] = _better(found[k], self._exit(inner[o.name], node.output[k],
                                                             types, prefix + "If"))
        for out, r in zip(node.output, found):
            if r is not None:
                scope[out] = _better(scope.get(out), r)

    def _loop(self, node, scope, types, prefix) -> None:
        """Loop(M, cond, v_initial...) with body(iter, cond, v...) -> (cond, v..., scans...):
        v_final is the last carried value, or v_initial after zero trips."""
        body = next(a.g for a in node.attribute if a.name == "body")
        inits = [scope.get(x) if x else None for x in node.input[2:]]
        self._repeat(node, body, scope, types, prefix, 2, 1, inits, len(inits))

    def _scan(self, node, scope, types, prefix) -> None:
        """Scan(states..., scan inputs...) with body(states..., slices...) -> (states...,
        scan outputs...): the same as a Loop whose carried values are the states (Scan-8's
        first input, sequence_lens, is an integer and left out)."""
        body = next(a.g for a in node.attribute if a.name == "body")
        first = 1 if self.opset < 9 else 0
        inits = [scope.get(x) if x else None for x in node.input[first:]]
        scans = next((a.i for a in node.attribute if a.name == "num_scan_inputs"), 0)
        self._repeat(node, body, scope, types, prefix, 0, 0, inits, len(inits) - scans)

    def _repeat(self, node, body, scope, types, prefix, in_at: int, out_at: int,
                inits: list[_Reach | None], carried: int) -> None:
        """A body run any number of times: body input ``in_at + k`` takes the node's k-th
        value input, and (for the carried ones) the body's output ``out_at + k`` of the
        previous run, to a fixpoint; node output k is the last carried value or its initial
        one (zero runs), then the body's remaining outputs (scan outputs)."""
        inner_types = _types_of(body, types)
        state = list(inits)
        for _ in range(2 * len(state) + 2):
            inner = dict(scope)
            for k, r in enumerate(state):
                name = body.input[in_at + k].name if in_at + k < len(body.input) else ""
                if r is not None and name and _carries(inner_types.get(name), ()):
                    inner[name] = r
            self.run(body.node, inner, inner_types, f"{prefix}{node.op_type}/body/")
            nxt = list(state)
            for k in range(carried):
                nxt[k] = _better(state[k], inner.get(body.output[out_at + k].name))
            if [r and r.level for r in nxt] == [r and r.level for r in state]:
                break
            state = nxt
        for k, out in enumerate(node.output):
            src = body.output[out_at + k].name if out_at + k < len(body.output) else None
            r = inner.get(src) if src else None
            if k < carried:
                r = _better(inits[k], r)
            r = self._exit(r, out, types, prefix + node.op_type)
            if r is not None:
                scope[out] = _better(scope.get(out), r)

    def _opaque(self, node, scope, types, prefix) -> None:
        """A graph-valued op the analysis does not enter (Scan, SequenceMap...): whatever
        reaches it, or its subgraphs' outer values, reaches its outputs as unknown."""
        used = {x for x in node.input if x} | _outer_names(node)
        reached = [scope[x] for x in sorted(used) if x in scope]
        if not reached:
            return
        r = _step(reached[0], _U, prefix + node.op_type,
                  f"{node.op_type}'s subgraph (body-dependent: not entered)")
        for out in node.output:
            if out:
                scope[out] = _better(scope.get(out), r)


def _outer_names(node: onnx.NodeProto) -> set[str]:
    """Every name a node's subgraphs read (their own values included: a superset of the
    outer values they capture, enough to know whether a reached value flows in)."""
    names: set[str] = set()
    for a in node.attribute:
        for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
            for n in g.node:
                names.update(x for x in n.input if x)
                names |= _outer_names(n)
    return names


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
            B.NOT_BUILT, f"onnx could not build the {kind} body: {str(exc).splitlines()[0]}"))
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
            B.NOT_BUILT, f"onnx could not inline the {kind} body: {str(exc).splitlines()[0]}"))
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
    types = _types_of(graph, {})
    walk = _Walk(opset)
    reach: dict[tuple[int, int], _Reach] = {}
    for i, x in enumerate(node.input):
        if not x or not _carries(types.get(x), ()):
            continue
        scope = {x: _Reach(_D, (in_names[i],))}
        walk.run(graph.node, scope, types)
        for j, y in enumerate(node.output):
            r = scope.get(y) if y else None
            if r is not None and y != x and _carries(types.get(y), ()):
                reach[i, j] = _Reach(r.level, r.path + (out_names[j],), r.why)
            elif r is not None and y == x:
                reach[i, j] = _Reach(r.level, (in_names[i], out_names[j]), r.why)

    def finding(io: str, k: int, value: str) -> Finding:
        if not value:
            return Finding(B.NOT_APPLICABLE, f"{io} {k} is not " +
                           ("given" if io == "input" else "produced"))
        t = type_str(types.get(value))
        if t is not None and not carries_gradient(t):
            return Finding(B.NOT_APPLICABLE, f"{t} carries no gradient")
        pairs = [r for (i, j), r in sorted(reach.items())
                 if (i if io == "input" else j) == k]
        best = None
        for r in pairs:
            best = _better(best, r)
        where = "to any output" if io == "input" else "from any input"
        if best is None:
            return Finding(B.NONDIFF, f"no path a gradient can take {where} in the body")
        shown = " -> ".join(best.path)
        if best.level == _D:
            return Finding(B.DIFF, f"gradient path {shown}", best.path)
        return Finding(B.UNKNOWN, f"the only paths {where} cross {best.why}: {shown}",
                       best.path)

    return BodyResult(op, version, kind, opset,
                      tuple(finding("input", i, x) for i, x in enumerate(node.input)),
                      tuple(finding("output", j, y) for j, y in enumerate(node.output)))


def derive(op: str, opset: int, node: onnx.NodeProto, input_types: Sequence[onnx.TypeProto],
           domain: str = "") -> BodyResult:
    """The function-body witness of ``node`` (an ``op`` node of a model at ``opset``), its
    inputs of ``input_types`` (one per node input; absent ones ignored): derived from the
    body in force at ``opset``, or why there is none."""
    try:
        schema = onnx.defs.get_schema(op, opset, domain)
    except onnx.defs.SchemaError:
        return _no_body(op, 0, f"onnx.defs has no {op} at opset {opset}")
    if not (schema.has_function or schema.has_context_dependent_function):
        return _no_body(op, schema.since_version, "no function body")
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
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, domain)
    except onnx.defs.SchemaError:
        return _no_body(node.op_type, 0, f"onnx.defs has no {node.op_type} at opset {opset}")
    if not (schema.has_function or schema.has_context_dependent_function):
        return _no_body(node.op_type, schema.since_version, "no function body")
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph
    except Exception:  # noqa: BLE001 - the declared types of inputs and outputs still stand
        inferred = model.graph
    types = _types_of(inferred, {})
    return derive(node.op_type, opset, node,
                  [types.get(x, onnx.TypeProto()) for x in node.input], domain)


# ----------------------------------------------------------------------------- the survey
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
    """A schema version's newest body, expanded for the node ``body_nodes`` describes."""
    versions = list(schema.function_opset_versions) + list(
        schema.context_dependent_function_opset_versions)
    node, types = body_nodes.survey_node(schema)
    return derive(schema.name, max(versions), node, types, schema.domain)


def survey() -> tuple[SurveyRow, ...]:
    """Every parameter of every schema version with a body, checked against its tag."""
    rows = []
    for s in schemas_with_body():
        res = survey_one(s)
        tags = schema_tags(s.name, s.since_version, s.domain)
        for io, formals in (("input", tags.inputs), ("output", tags.outputs)):
            for f in formals:
                found = res.finding(io, f.position)
                rows.append(SurveyRow(s.name, s.since_version, io, f.position, f.name,
                                      Tag(f.tag), found, check(found.outcome, Tag(f.tag)),
                                      res.kind, res.opset))
    return tuple(rows)
