"""Graph mapping: which PyTorch tensor became each input and output of the target ONNX node.

Attribution is by data dependency, not by trusting names or positions: each node input
is traced back to the graph inputs and module parameters (initializers) it depends on,
through any glue nodes; each node output forward to the graph outputs it reaches.
An attribution that would let a gradient be credited to the wrong parameter makes the case
*invalid* (docs/design.md §1.3): a tensor that reaches a graph output around the node, or a node
output whose graph output other tensors also reach.

A node in context is not invalid for that: an input computed by another op from several
tensors (``through`` names it) or an output that reaches the graph outputs through
computing ops has no autograd witness about this node, so nothing can be mis-credited;
the numeric witness speaks for it. A tensor feeding several inputs of the node
(``x @ x.T``) costs those inputs their autograd witness (``shared``; its gradient is the
sum over them), not the case: the outputs keep theirs, since the tensor reaches the graph
outputs only through the node.

Each attribution also says which nodes on its path *compute* (``through``): a tensor that
reaches the node via ``Shape``, ``Floor``, a comparison or a quantizer is still attributed,
but PyTorch's gradient for it is evidence about that computation, not about this node, so
the autograd witness counts only when ``through`` is empty (value-preserving glue only:
``VALUE_SLOTS``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterable

import onnx

ABSENT, CONSTANT, TENSOR = "absent", "constant", "tensor"

_ALL = frozenset(range(64))
VALUE_SLOTS: dict[str, frozenset[int]] = {
    "Identity": frozenset({0}), "Reshape": frozenset({0}), "Transpose": frozenset({0}),
    "Squeeze": frozenset({0}), "Unsqueeze": frozenset({0}), "Flatten": frozenset({0}),
    "Slice": frozenset({0}), "Split": frozenset({0}), "Concat": _ALL, "Expand": frozenset({0}),
    "Tile": frozenset({0}), "Gather": frozenset({0}), "GatherElements": frozenset({0}),
    "GatherND": frozenset({0}), "Cast": frozenset({0}), "CastLike": frozenset({0}),
    "Optional": frozenset({0}), "OptionalGetElement": frozenset({0}),
    "SequenceConstruct": _ALL, "SequenceInsert": frozenset({0, 1}),
    "SequenceAt": frozenset({0}), "SplitToSequence": frozenset({0}),
    "ConcatFromSequence": frozenset({0}),
}
"""Glue that moves, copies or re-types values without computing on them: op type -> the
input slots through which a value passes unchanged. Cast/CastLike count only float to
float (a cast to an integer type is a Floor in disguise). ConcatFromSequence is the
sequence form of Concat: it lays the elements side by side (new_axis=1 stacks them)."""
_FLOAT_TYPES = ("float", "double", "complex", "bfloat")


def is_float_dtype(name: str | None) -> bool:
    """An element type name (``float64``, ``complex64``, ``bfloat16``) that carries gradients."""
    return bool(name) and name.startswith(_FLOAT_TYPES)


@dataclass(frozen=True)
class Attribution:
    """Where one node input (or output) comes from (or goes to)."""

    io: str                 # "input" | "output"
    index: int
    kind: str               # absent | constant | tensor
    source: str | None      # graph input / initializer / graph output name
    dtype: str | None       # ONNX elem type name of the node value, when known
    path: tuple[str, ...]   # op types of glue nodes between source and the node
    problem: str | None = None   # set when the attribution is ambiguous
    through: tuple[str, ...] = ()   # computing (not value-preserving) ops on the path
    sources: tuple[str, ...] = ()   # several tensors (source None): assembled by glue alone,
    # or computed from by an op before the node (``through`` then names it)
    shared: tuple[str, tuple[int, ...]] | None = None   # (tensor, the node inputs it feeds)

    @property
    def all_sources(self) -> tuple[str, ...]:
        return self.sources or ((self.source,) if self.source else ())


@dataclass(frozen=True)
class Guard:
    """An exporter's guard around the target: ``Where(cond, a, b)`` with one value branch
    computed from the target node's output and the other the node's input ``source`` itself
    (through glue only) -- the dynamo exporter writes ``F.softplus`` as ``Where(x * beta > threshold, x,
    Softplus(x))``. The bypass does not make the case invalid: the node's own witness decides
    its parameters (``engine/attribution/guard.py`` says whether a probe point selected the bypass)."""

    where: int              # the Where node's index in graph.node
    source: str             # the tensor the bypass carries
    bypass_slot: int        # 1: the bypass is taken where cond is true; 2: where it is false

    @property
    def text(self) -> str:
        taken = "true" if self.bypass_slot == 1 else "false"
        return (f"{self.source} also reaches the output around the node, through an exporter's "
                f"guard (Where node #{self.where}: {self.source} itself where its condition is "
                f"{taken}): the node's own witness decides its parameters")


@dataclass(frozen=True)
class NodeMapping:
    node_name: str
    inputs: tuple[Attribution, ...]
    outputs: tuple[Attribution, ...]
    invalid: str | None = None    # whole-case problem (no / several target nodes)
    node_index: int | None = None  # the target node's index in graph.node
    others: tuple[str, ...] = ()   # helper nodes of the same type, not the target
    guards: tuple[Guard, ...] = ()  # exporter guards around the node (not ambiguities)

    @property
    def shared_notes(self) -> list[str]:
        """One line per tensor feeding several node inputs: what it costs, and the stricter
        proof (each input its own tensor)."""
        seen = dict.fromkeys(a.shared for a in self.inputs if a.shared)
        return [f"{src} feeds inputs {', '.join(map(str, idxs))} of the node, so autograd "
                f"cannot credit its gradient to one of them (the numeric witness decides each); "
                f"for a stricter proof give each input its own tensor: pass {src} and "
                f"{src}.detach().clone()" for src, idxs in seen]

    @property
    def problems(self) -> list[str]:
        found = [self.invalid] if self.invalid else []
        return found + [a.problem for a in self.inputs + self.outputs if a.problem]


def _elem_type(t: int) -> str:
    return onnx.helper.tensor_dtype_to_np_dtype(t).name if t else "unknown"


def subgraphs(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    """The graphs a node's attributes hold (If's branches, Loop/Scan bodies, SequenceMap's
    body): the one place that knows a graph attribute is ``g`` or ``graphs``."""
    return [g for attr in node.attribute
            for g in list(attr.graphs) + ([attr.g] if attr.HasField("g") else [])]


def subgraph_names(node: onnx.NodeProto) -> set[str]:
    """Names read inside a node's subgraphs (If/Loop/Scan bodies capture outer values)."""
    names: set[str] = set()
    for g in subgraphs(node):
        for n in g.node:
            names.update(n.input)
            names |= subgraph_names(n)
    return names


def _node_inputs(node: onnx.NodeProto) -> list[str]:
    return [n for n in node.input if n] + sorted(subgraph_names(node))


class _Graph:
    def __init__(self, model: onnx.ModelProto):
        g = model.graph
        self.graph = g
        self.producer: dict[str, int] = {}
        for i, n in enumerate(g.node):
            for o in n.output:
                if o:
                    self.producer[o] = i
        self.consumers: dict[str, list[int]] = {}
        for i, n in enumerate(g.node):
            for name in _node_inputs(n):
                self.consumers.setdefault(name, []).append(i)
        self.graph_inputs = [i.name for i in g.input]
        self.initializers = {t.name: t for t in g.initializer}
        self.outputs = [o.name for o in g.output]
        self.types: dict[str, str] = {}
        try:
            inferred = onnx.shape_inference.infer_shapes(model).graph
        except Exception:
            inferred = g
        for vi in list(inferred.value_info) + list(inferred.input) + list(inferred.output):
            if vi.type.HasField("tensor_type"):
                self.types[vi.name] = _elem_type(vi.type.tensor_type.elem_type)
        for t in g.initializer:
            self.types[t.name] = _elem_type(t.data_type)
        for n in g.node:
            if n.op_type == "Constant" and n.output:
                for a in n.attribute:
                    if a.name == "value" and a.HasField("t"):
                        self.types[n.output[0]] = _elem_type(a.t.data_type)

    def _passes(self, node: onnx.NodeProto, slot: int, name: str) -> bool:
        """Does the value in input ``slot`` reach the node's outputs unchanged?"""
        if slot not in VALUE_SLOTS.get(node.op_type, ()) or node.domain not in ("", "ai.onnx"):
            return False
        if node.op_type in ("Cast", "CastLike"):
            out = self.types.get(node.output[0], "")
            return is_float_dtype(self.types.get(name)) and is_float_dtype(out)
        return True

    def roots(self, value: str, tracked: set[str], memo: dict, float_only: bool = False
              ) -> tuple[frozenset[str], tuple[str, ...], tuple[str, ...]]:
        """Tracked sources ``value`` depends on, the op types of the nodes on the way, and
        those of them that compute on a tracked value (not value-preserving glue).

        ``float_only``: along floating values only -- the paths a gradient can take (a
        tensor reaching the node only through ``Shape``, an ArgMax or an integer Cast is no
        source of its gradient). ``memo`` must be kept per ``float_only``."""
        if value in memo:
            return memo[value]
        if value in tracked:
            memo[value] = (frozenset([value]), (), ())
            return memo[value]
        if value not in self.producer or (float_only and not self.is_float(value)):
            memo[value] = (frozenset(), (), ())   # untracked initializer or constant input
            return memo[value]
        node = self.graph.node[self.producer[value]]
        found: set[str] = set()
        carried: list[str] = []     # glue on the paths that carry the value itself
        computed: list[str] = []    # the paths of slots the node computes from (Shape...)
        computing: list[str] = []
        carries = False
        for slot, name in enumerate(_node_inputs(node)):
            if float_only and not self.is_float(name):
                continue
            r, p, c = self.roots(name, tracked, memo, float_only)
            found |= r
            if r:
                computing.extend(c)
                if self._passes(node, slot, name):
                    carries = True
                    carried.extend(p)
                else:
                    computed.extend(p)
                    computing.append(node.op_type)
        # the source column lists the glue on the value's own path: Reshape(updates,
        # Concat(Slice(Shape(updates)))) is "updates via Reshape", not via Shape/Slice/Concat
        path = (carried if carries else computed) + [node.op_type]
        memo[value] = (frozenset(found), tuple(dict.fromkeys(path)),
                       tuple(dict.fromkeys(computing)))
        return memo[value]

    def computing_after(self, value: str, skip_node: int) -> tuple[str, ...]:
        """Computing ops between a node output and the graph outputs it reaches."""
        found: list[str] = []
        seen: set[str] = set()
        stack = [value]
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            for c in self.consumers.get(v, []):
                if c == skip_node:
                    continue
                node = self.graph.node[c]
                slots = [k for k, n in enumerate(_node_inputs(node)) if n == v]
                if not all(self._passes(node, k, v) for k in slots):
                    found.append(node.op_type)
                stack.extend(o for o in node.output if o)
        return tuple(dict.fromkeys(found))

    def is_float(self, value: str) -> bool:
        t = self.types.get(value)
        return t is None or t == "unknown" or is_float_dtype(t)

    def guard(self, src: str, t: int) -> Guard | None:
        """The Where whose value branches are the target's output and ``src``, each through
        glue only, when it is ``src``'s only way to the outputs around node ``t``."""
        made = {o for o in self.graph.node[t].output if o}
        for w, n in enumerate(self.graph.node):
            if n.op_type != "Where" or n.domain not in ("", "ai.onnx") or len(n.input) != 3:
                continue
            # the bypass carries src itself; the node's branch may compute on its output
            # (bfloat16's Div by beta)
            found = [self.roots(n.input[k], {src} | made, {}) for k in (1, 2)]
            kinds = [next(iter(r)) if len(r) == 1 and (not c or r <= made) else None
                     for r, _, c in found]
            if (src in kinds and any(k in made for k in kinds)
                    and not self.reachable_outputs([src], t, True, also_skip=w)):
                return Guard(w, src, 1 + kinds.index(src))
        return None

    def reachable_outputs(self, start: Iterable[str], skip_node: int | None,
                          float_only: bool = False, also_skip: int | None = None) -> set[str]:
        """Graph outputs reachable from ``start`` values without going through ``skip_node``
        (or ``also_skip``; ``float_only``: along floating values only, the paths a gradient
        can take)."""
        seen: set[str] = set()
        stack = list(start)
        while stack:
            v = stack.pop()
            if v in seen or (float_only and not self.is_float(v)):
                continue
            seen.add(v)
            for c in self.consumers.get(v, []):
                if c not in (skip_node, also_skip):
                    stack.extend(o for o in self.graph.node[c].output if o)
        return {o for o in self.outputs if o in seen}


def _domains(domain: str) -> set[str]:
    return {domain, "ai.onnx"} if domain in ("", "ai.onnx") else {domain}


def _targets(g: _Graph, op: str, domain: str) -> tuple[list[int], tuple[str, ...]]:
    """The ``op`` nodes a proof is about, and the same-type helper nodes set aside."""
    targets = [i for i, n in enumerate(g.graph.node)
               if n.op_type == op and n.domain in _domains(domain)]
    helpers: tuple[str, ...] = ()
    if len(targets) > 1:
        # an exporter may add a helper node of the same type (MaxPool's indices come from a
        # second, 1x1 MaxPool): the target is the one whose floating outputs reach the graph
        main = [i for i in targets if g.reachable_outputs(
            [o for o in g.graph.node[i].output if o and g.is_float(o)], None, float_only=True)]
        if len(main) == 1:
            helpers = tuple(g.graph.node[i].name or f"{op}#{i}" for i in targets if i != main[0])
            targets = main
    return targets, helpers


def target_nodes(model: onnx.ModelProto, op: str, domain: str = "") -> tuple[int, ...]:
    """The indices of the ``op`` nodes a proof of ``model`` is about, once same-type helper
    nodes are set aside: several when the script uses the op more than once (``run`` then
    proves each one)."""
    return tuple(_targets(_Graph(model), op, domain)[0])


def map_node(model: onnx.ModelProto, op: str, domain: str, tracked: Iterable[str],
             node: int | None = None) -> NodeMapping:
    """Attribute the inputs and outputs of the single ``op`` node of ``model`` (or of node
    number ``node``, which must be an ``op`` node: ``run --all-ops`` proves each one).

    ``tracked`` names the graph inputs and initializers that are PyTorch tensors with
    an identity of their own (case inputs, module parameters); everything else that
    feeds the node is a constant.
    """
    g = _Graph(model)
    targets, helpers = _targets(g, op, domain)
    if node is not None:
        every = [i for i, n in enumerate(g.graph.node) if n.op_type == op
                 and n.domain in _domains(domain)]
        targets, helpers = ([node] if node in every else []), ()
    if len(targets) != 1:
        ops = sorted({n.op_type for n in g.graph.node})
        what = "no" if not targets else f"{len(targets)}"
        return NodeMapping("", (), (), invalid=f"the exported graph has {what} {op} node"
                       f"{'s' if len(targets) != 1 else ''} (it has: {', '.join(ops) or 'no nodes'})")
    t = targets[0]
    node = g.graph.node[t]
    tracked = set(tracked) & (set(g.graph_inputs) | set(g.initializers))
    memo: dict = {}
    grad_memo: dict = {}
    inputs: list[Attribution] = []
    feeding: dict[str, list[int]] = {}
    for i, name in enumerate(node.input):
        if not name:
            inputs.append(Attribution("input", i, ABSENT, None, None, ()))
            continue
        roots, path, through = g.roots(name, tracked, memo)
        live, _, live_through = g.roots(name, tracked, grad_memo, float_only=True)
        dtype = g.types.get(name)
        if not roots:
            inputs.append(Attribution("input", i, CONSTANT, None, dtype, path))
        elif not live:
            # depends on tracked tensors only through integer values (Shape -> zeros for
            # LSTM's initial_h): attributed for the record, but no gradient path, so it
            # makes nothing ambiguous
            src = sorted(roots)[0] if len(roots) == 1 else None
            inputs.append(Attribution("input", i, TENSOR if src else CONSTANT, src, dtype, path,
                                      through=through))
        elif len(live) == 1:
            (src,) = live
            feeding.setdefault(src, []).append(i)
            inputs.append(Attribution("input", i, TENSOR, src, dtype, path,
                                      through=live_through))
        elif not live_through:
            # assembled from several tensors by value-preserving glue only (ONNX's LSTM B is
            # PyTorch's bias_ih and bias_hh concatenated): each part is this input's alone
            for src in live:
                feeding.setdefault(src, []).append(i)
            inputs.append(Attribution("input", i, TENSOR, None, dtype, path,
                                      sources=tuple(sorted(live))))
        else:
            # computed from several tensors by an op before the node (Linear -> HardSwish:
            # HardSwish's X is Gemm(x, W, b)): attributed to them together; PyTorch's
            # gradient for them is about that op (``through``), so only the numeric witness
            # speaks for this input -- not an ambiguity
            for src in live:
                feeding.setdefault(src, []).append(i)
            inputs.append(Attribution("input", i, TENSOR, None, dtype, path,
                                      sources=tuple(sorted(live)), through=live_through))
    # a tensor reaching the outputs around the node is ambiguous for every input it feeds
    # whose autograd witness would count; one feeding several node inputs (x @ x.T) only
    # costs those inputs their autograd witness: its gradient is the sum over them
    by_index = {a.index: a for a in inputs}
    problems: dict[int, str] = {}
    shared: dict[int, tuple[str, tuple[int, ...]]] = {}
    guards: list[Guard] = []
    for src, idxs in feeding.items():
        bypass = g.reachable_outputs([src], skip_node=t, float_only=True)
        guard = g.guard(src, t) if bypass else None
        if guard is not None:
            # its gradient mixes the node's with the bypass's: autograd says nothing about
            # the node alone, so each input it feeds is decided by the numeric witness
            guards.append(guard)
            inputs = [dataclasses.replace(a, through=a.through + ("Where",))
                      if a.index in idxs else a for a in inputs]
            by_index = {a.index: a for a in inputs}
        elif bypass:
            for i in idxs:
                if not by_index[i].through:
                    problems.setdefault(i, f"{src} reaches graph output "
                                           f"{', '.join(sorted(bypass))} without passing "
                                           f"through the {op} node")
        elif len(idxs) > 1:
            for i in idxs:
                shared.setdefault(i, (src, tuple(idxs)))
    inputs = [dataclasses.replace(a, shared=shared[a.index])
              if a.index in shared and a.index not in problems else a for a in inputs]
    inputs = [a if a.index not in problems else
              dataclasses.replace(a, problem=problems[a.index]) for a in inputs]
    outputs: list[Attribution] = []
    node_outs = list(node.output)
    for j, name in enumerate(node_outs):
        if not name:
            outputs.append(Attribution("output", j, ABSENT, None, None, ()))
            continue
        reached = sorted(g.reachable_outputs([name], skip_node=None),
                         key=g.outputs.index)
        dtype = g.types.get(name)
        if not reached:
            outputs.append(Attribution("output", j, ABSENT, None, dtype, (),
                                       ))
            continue
        problem = None
        after = g.computing_after(name, t)
        around = [] if after else sorted(r for r in tracked
                        if reached[0] in g.reachable_outputs([r], skip_node=t, float_only=True))
        if around:
            problem = (f"graph output {reached[0]} also depends on {', '.join(around)} other "
                       f"than through the {op} node")
        elif len(reached) > 1 and not after:
            problem = f"output {j} of the {op} node reaches several graph outputs ({', '.join(reached)})"
        elif not after:
            others = [o for k, o in enumerate(node_outs) if o and k != j
                      and reached[0] in g.reachable_outputs([o], skip_node=None)]
            if others:
                problem = (f"graph output {reached[0]} depends on several outputs of the {op} node")
        outputs.append(Attribution("output", j, TENSOR, reached[0], dtype, (), problem,
                                   through=after))
    return NodeMapping(node.name or f"{op}#{t}", tuple(inputs), tuple(outputs), node_index=t,
                   others=helpers, guards=tuple(guards))
