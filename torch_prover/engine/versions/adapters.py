"""Adapters: a node exported at one opset brought to an older schema version's signature.

A case variant that no exporter produces at its opset is exported where one does and
*relabelled* (``next_opset.relabel_opset``). Where a node's schema changed in between, the
export may carry what the older version lacks: an attribute (Resize-18's
``keep_aspect_ratio_policy``), an input the older version takes as an attribute
(Unsqueeze-13's ``axes``), an output it does not have (MaxPool-8's ``Indices``). Dropping
such a thing silently would prove another version's semantics, so every change is an
*adaptation* that is valid only where the two versions compute the same thing:

- an attribute is dropped only at the value where the newer version behaves as the older
  one (its default, documented in the newer schema, unless the table says otherwise and
  why);
- an input becomes the older version's attribute only when it is a constant of the graph;
- an input the older version lacks is dropped only when absent or constant at the value
  where the versions coincide;
- an output the older version lacks is dropped only when nothing reads it.

Anything else is refused with a typed reason (:class:`Refusal`), naming the node: the
variant then fails with that reason instead of proving something else. The facts are data
(``engine/versions/adapter_table.py``); each is checked by a test that builds the node, adapts it
and runs both in onnxruntime (tests/test_adapters.py). Every adaptation is returned
(:class:`Adaptation`) and recorded with the proof (``adaptations`` in the record).
"""
from __future__ import annotations

import enum
import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np
import onnx
import onnx.defs
import onnx.helper
import onnx.numpy_helper

from ...errors import CaseError
from ..attribution.graph_values import constant_value, inferred_shapes
from .runtimes import version_at


class Refusal(enum.Enum):
    """Why a node cannot be brought to an older version's signature."""

    ATTRIBUTE_VALUE = "sets an attribute the older version lacks at a value where the " \
                      "two versions compute differently"
    INPUT_NOT_CONSTANT = "gives as a computed input what the older version takes as an " \
                         "attribute"
    INPUT_VALUE = "gives an input the older version lacks at a value where the two " \
                  "versions compute differently"
    OUTPUT_CONSUMED = "has an output the older version lacks (or types differently), and " \
                      "the graph reads it"
    SHAPE_UNKNOWN = "needs a static shape the model does not give"
    NO_ADAPTER = "differs from the older version's signature in a way no adapter covers"


class AdaptError(CaseError):
    """A node that cannot be adapted: its reason is typed (``refusal``)."""

    def __init__(self, refusal: Refusal, node: str, detail: str):
        super().__init__(f"{node} {refusal.value}: {detail}")
        self.refusal, self.node, self.detail = refusal, node, detail


@dataclass(frozen=True)
class Adaptation:
    """One semantics-preserving change made to one node: what, and why it is valid."""

    node: str          # the node's name (or op type when unnamed)
    op: str
    source: int        # the schema version the node had
    target: int        # the schema version it was brought to
    change: str        # e.g. "attribute keep_aspect_ratio_policy='stretch' dropped (...)"

    def text(self) -> str:
        where = f" ({self.node})" if self.node != self.op else ""
        return f"{self.op}-{self.source}->{self.target}{where} {self.change}"


def node_label(node: onnx.NodeProto) -> str:
    return f"node {node.name!r} ({node.op_type})" if node.name else f"a {node.op_type} node"


# ----------------------------------------------------------------------------- the graph
@dataclass
class ModelView:
    """What an adapter may read and add: constants, consumers, static shapes, fresh names
    and initializers (the model is the relabelled copy; adapters change it in place)."""

    model: onnx.ModelProto
    _shapes: dict[str, list[int | None]] | None = field(default=None, repr=False)
    _fresh: int = 0

    def constant(self, name: str) -> np.ndarray | None:
        """The value of ``name`` when it is an initializer (not an overridable graph input)
        or a Constant node's output, anywhere in the model; else None."""
        if not name:
            return None
        inputs = {i.name for i in self.model.graph.input}
        for g in _graphs(self.model.graph):
            for t in g.initializer:
                if t.name == name and name not in inputs:
                    return onnx.numpy_helper.to_array(t)
            for n in g.node:
                if n.op_type == "Constant" and list(n.output) == [name]:
                    return constant_value(n)
        return None

    def consumed(self, name: str) -> bool:
        """Whether any node (subgraphs included) or a graph output reads ``name``."""
        if not name:
            return False
        if any(o.name == name for o in self.model.graph.output):
            return True
        return any(name in n.input for g in _graphs(self.model.graph) for n in g.node)

    def shape(self, name: str) -> list[int | None] | None:
        """The static shape of ``name`` (onnx shape inference on the model as exported)."""
        if self._shapes is None:   # an unknown shape is refused by the adapter asking
            self._shapes = inferred_shapes(self.model)
        return self._shapes.get(name)

    def add_initializer(self, hint: str, value: np.ndarray) -> str:
        names = {t.name for t in self.model.graph.initializer} | {
            o for n in self.model.graph.node for o in n.output} | {
            i.name for i in self.model.graph.input}
        while True:
            self._fresh += 1
            name = f"adapted_{hint}_{self._fresh}"
            if name not in names:
                break
        self.model.graph.initializer.append(onnx.numpy_helper.from_array(value, name))
        return name

    def to_initializer(self, node: onnx.NodeProto, value: np.ndarray) -> None:
        """Replace a main-graph Constant node by an initializer of its output's name."""
        self.model.graph.initializer.append(
            onnx.numpy_helper.from_array(np.asarray(value), node.output[0]))
        self.model.graph.node.remove(node)

    def fresh_output(self, hint: str) -> str:
        used = {o for g in _graphs(self.model.graph) for n in g.node for o in n.output}
        while True:
            self._fresh += 1
            name = f"adapted_{hint}_{self._fresh}"
            if name not in used:
                return name


def _graphs(graph: onnx.GraphProto) -> Iterable[onnx.GraphProto]:
    yield graph
    for n in graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    yield from _graphs(g)


# ----------------------------------------------------------------------------- one node
@dataclass
class NodeEdit:
    """A node being adapted across one version boundary (``newer`` -> ``older``)."""

    view: ModelView
    node: onnx.NodeProto
    newer: int
    older: int
    done: list[str] = field(default_factory=list)
    gone: bool = False      # the node was replaced (a Constant turned initializer)

    @property
    def label(self) -> str:
        return node_label(self.node)

    def attribute(self, name: str) -> onnx.AttributeProto | None:
        return next((a for a in self.node.attribute if a.name == name), None)

    def value(self, name: str) -> Any:
        a = self.attribute(name)
        return None if a is None else onnx.helper.get_attribute_value(a)

    def drop_attribute(self, name: str) -> None:
        keep = [a for a in self.node.attribute if a.name != name]
        del self.node.attribute[:]
        self.node.attribute.extend(keep)

    def set_attribute(self, name: str, value: Any) -> None:
        self.drop_attribute(name)
        self.node.attribute.append(onnx.helper.make_attribute(name, value))

    def input_index(self, name: str) -> int:
        """Position of input ``name`` in the newer version's schema."""
        names = [p.name for p in onnx.defs.get_schema(self.node.op_type, self.newer, "").inputs]
        return names.index(name)

    def input_name(self, name: str) -> str:
        i = self.input_index(name)
        got = self.node.input[i] if i < len(self.node.input) else ""
        return "" if got == _REMOVED else got

    def remove_input(self, name: str) -> None:
        """Mark input ``name`` (by its position in the newer schema) for removal; the slots
        close up after the boundary's rules, so every rule reads the newer positions."""
        i = self.input_index(name)
        if i < len(self.node.input):
            self.node.input[i] = _REMOVED

    def close_up(self) -> None:
        kept = [n for n in self.node.input if n != _REMOVED]
        del self.node.input[:]
        self.node.input.extend(kept)

    def refuse(self, refusal: Refusal, detail: str) -> None:
        raise AdaptError(refusal, self.label, detail)


Rule = Callable[[NodeEdit], None]
_REMOVED = "\x00removed"   # a slot a rule removed, until NodeEdit.close_up


@functools.lru_cache(maxsize=None)
def _versions_of(op: str) -> tuple[int, ...]:
    return tuple(sorted({s.since_version for s in onnx.defs.get_all_schemas_with_history()
                         if s.name == op and s.domain in ("", "ai.onnx")}))


def adapt_node(view: ModelView, node: onnx.NodeProto, source: int, target: int,
               rules: dict[tuple[str, int], list[Rule]]) -> list[Adaptation]:
    """Bring ``node`` (ai.onnx, its schema in force at opset ``source``) to its schema in
    force at opset ``target``: the rules of every version boundary in between, newest
    first, then a check of the result against the target schema. Raises AdaptError."""
    op = node.op_type
    have, want = version_at(op, source), version_at(op, target)
    if have is None or want is None or have == want:
        return []
    versions = [v for v in _versions_of(op) if want < v <= have]
    out: list[Adaptation] = []
    name = node.name or op
    for newer in reversed(versions):
        older = version_at(op, newer - 1)
        edit = NodeEdit(view, node, newer, older)
        for rule in rules.get((op, newer), ()):
            rule(edit)
        edit.close_up()
        out += [Adaptation(name, op, newer, older, d) for d in edit.done]
        if edit.gone:   # became an initializer: no node left to fit
            return out
    _fits(node, want)
    return out


def _fits(node: onnx.NodeProto, version: int) -> None:
    """The node's attributes, inputs and outputs fit ``version``'s schema (trailing absent
    optional inputs and outputs trimmed); otherwise refuse, naming the difference."""
    schema = onnx.defs.get_schema(node.op_type, version, "")
    label = node_label(node)
    extra = sorted(a.name for a in node.attribute if a.name not in schema.attributes)
    if extra:
        raise AdaptError(Refusal.NO_ADAPTER, label,
                         f"{node.op_type}-{version} has no attribute {', '.join(extra)}")
    for slots, params, kind in ((node.input, schema.inputs, "input"),
                                (node.output, schema.outputs, "output")):
        while len(slots) > 1 and not slots[-1]:
            slots.pop()
        variadic = any(p.option == onnx.defs.OpSchema.FormalParameterOption.Variadic
                       for p in params)
        if len(slots) > len(params) and not variadic:
            raise AdaptError(Refusal.NO_ADAPTER, label,
                             f"{len(slots)} {kind}s where {node.op_type}-{version} has "
                             f"{len(params)}")
