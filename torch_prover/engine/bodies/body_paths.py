"""Where a gradient can go in an expanded function body: reachability over tagged steps.

The walk behind ``function_body`` (which says why): from one input's value, forward
through the body's nodes in order; a step from node input i to output j is
differentiable (``D``) when both are tagged differentiable in the primitive's schema at
the body's opset, unknown (``U``) when either is tagged unknown, and no step when either
is non-differentiable or either value's type carries no gradient (the inferred type,
else the primitive's type constraint). A path's level is its weakest step's. ``If``
branches, ``Loop`` and ``Scan`` bodies are entered (carried values to a fixpoint); any
other graph-valued node is opaque: what reaches it reaches its outputs as unknown.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Iterable, Sequence

import onnx
from onnx import helper

from ...tags.schema import SchemaTags, carries_gradient, schema_tags
from ...vocab import Tag

D, U = 2, 1   # reach levels: a path of differentiable steps, a path with an unknown step


@dataclass(frozen=True)
class Reach:
    """How a value is reached from the input under study: its level, the path, and (for an
    unknown path) the first unknown step it crosses."""

    level: int
    path: tuple[str, ...]
    why: str = ""


def better(a: Reach | None, b: Reach | None) -> Reach | None:
    """The higher level wins; at the same level the first path found stays (deterministic)."""
    if b is None:
        return a
    if a is None or b.level > a.level:
        return b
    return a


def step(r: Reach, level: int, label: str, why: str = "") -> Reach:
    """``r`` extended by one step of ``level``: the path's level is its weakest step's."""
    if level >= r.level:
        return Reach(r.level, r.path + (label,), r.why)
    return Reach(level, r.path + (label,), r.why or why)


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


def carries(t: onnx.TypeProto | None, allowed: Sequence[str]) -> bool:
    """Whether a value can carry a gradient: its inferred type decides; where inference
    gave none, the primitive's type constraint (any gradient-carrying allowed type); with
    neither (a graph's own input or output), it may: a path is never cut on a guess."""
    s = type_str(t)
    if s is not None:
        return carries_gradient(s)
    return any(carries_gradient(a) for a in allowed) if allowed else True


def types_of(graph: onnx.GraphProto, outer: dict[str, onnx.TypeProto]
             ) -> dict[str, onnx.TypeProto]:
    """The types shape inference recorded in ``graph`` (a subgraph: over its outer scope's)."""
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
class Walk:
    """Forward reachability through one expanded body, from one input at a time."""

    def __init__(self, opset: int) -> None:
        self.opset = opset

    def edge(self, node: onnx.NodeProto, i: int, j: int, types: dict[str, onnx.TypeProto]
             ) -> tuple[int, str] | None:
        """The step from node input ``i`` to output ``j``: (level, why unknown) or None."""
        tags = _tags(node.op_type, self.opset, node.domain)
        if tags is None:
            return U, (f"{node.op_type} ({node.domain or 'ai.onnx'}), which has no schema at "
                       f"opset {self.opset}")
        fin, fout = tags.formal("input", i), tags.formal("output", j)
        if fin is None or fout is None:
            return U, (f"{tags.op}-{tags.since_version} input {i} / output {j}, which its "
                       "schema does not declare")
        if not (carries(types.get(node.input[i]), fin.types)
                and carries(types.get(node.output[j]), fout.types)):
            return None
        if Tag.NONDIFF in (fin.tag, fout.tag):
            return None
        if fin.tag == fout.tag == Tag.DIFF:
            return D, ""
        unknown = fin if fin.tag != Tag.DIFF else fout
        return U, f"{tags.op}-{tags.since_version} {unknown.io} '{unknown.name}', tagged unknown"

    def run(self, nodes: Iterable[onnx.NodeProto], scope: dict[str, Reach],
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
                        best = better(best, step(scope[inp], e[0], label, e[1]))
            if best is not None:
                scope[out] = better(scope.get(out), best)

    def _exit(self, r: Reach | None, out: str, types, label: str) -> Reach | None:
        if r is None or not out or not carries(types.get(out), ()):
            return None
        return step(r, D, label)

    def _if(self, node, scope, types, prefix) -> None:
        """Both branches entered with the outer values in scope; branch output k is If's
        output k (If's own tags are unknown: the branches are what decides)."""
        found: list[Reach | None] = [None] * len(node.output)
        for attr in node.attribute:
            if attr.type != onnx.AttributeProto.GRAPH:
                continue
            g = attr.g
            inner_types = types_of(g, types)
            inner = dict(scope)
            self.run(g.node, inner, inner_types, f"{prefix}If/{attr.name}/")
            for k, o in enumerate(g.output[:len(node.output)]):
                if o.name in inner and carries(inner_types.get(o.name), ()):
                    found[k] = better(found[k], self._exit(inner[o.name], node.output[k],
                                                            types, prefix + "If"))
        for out, r in zip(node.output, found):
            if r is not None:
                scope[out] = better(scope.get(out), r)

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
                inits: list[Reach | None], carried: int) -> None:
        """A body run any number of times: body input ``in_at + k`` takes the node's k-th
        value input, and (for the carried ones) the body's output ``out_at + k`` of the
        previous run, to a fixpoint; node output k is the last carried value or its initial
        one (zero runs), then the body's remaining outputs (scan outputs)."""
        inner_types = types_of(body, types)
        state = list(inits)
        for _ in range(2 * len(state) + 2):
            inner = dict(scope)
            for k, r in enumerate(state):
                name = body.input[in_at + k].name if in_at + k < len(body.input) else ""
                if r is not None and name and carries(inner_types.get(name), ()):
                    inner[name] = r
            self.run(body.node, inner, inner_types, f"{prefix}{node.op_type}/body/")
            nxt = list(state)
            for k in range(carried):
                nxt[k] = better(state[k], inner.get(body.output[out_at + k].name))
            if [r and r.level for r in nxt] == [r and r.level for r in state]:
                break
            state = nxt
        for k, out in enumerate(node.output):
            src = body.output[out_at + k].name if out_at + k < len(body.output) else None
            r = inner.get(src) if src else None
            if k < carried:
                r = better(inits[k], r)
            r = self._exit(r, out, types, prefix + node.op_type)
            if r is not None:
                scope[out] = better(scope.get(out), r)

    def _opaque(self, node, scope, types, prefix) -> None:
        """A graph-valued op the analysis does not enter (not If, Loop or Scan): whatever
        reaches it, or its subgraphs' outer values, reaches its outputs as unknown."""
        used = {x for x in node.input if x} | _outer_names(node)
        reached = [scope[x] for x in sorted(used) if x in scope]
        if not reached:
            return
        r = step(reached[0], U, prefix + node.op_type,
                 f"{node.op_type}'s subgraph, not entered (body-dependent)")
        for out in node.output:
            if out:
                scope[out] = better(scope.get(out), r)


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
