"""The numeric witness of one ONNX node: "the op, as exported, has this derivative".

docs/design.md §1, stage 4. Independent of PyTorch: the target node is cut out of the exported
model with its actual input values, every input it reads is lifted to a model input, and
each floating node input's directional derivative into each floating node output is
measured by central differences at three points and two step sizes.

1. **Isolate** (``isolate``): one run of the exported model on the given feeds captures
   the node's inputs (graph inputs, initializers, ``Constant`` outputs, folded constants,
   and the outer-scope values its subgraphs read) and outputs. ``onnx.utils.Extractor``
   cuts the one-node model (the model's IR version, opset imports and the local functions
   the node calls are kept); every captured input becomes a graph input, none stays an
   initializer, so one runtime session serves every perturbation. A name the node reads
   twice (``Mul(x, x)``, or an input its subgraph also reads) gets one graph input per
   use, so each node input index can be moved alone. Value types come from the captured
   values themselves (exact where shape inference can only guess); tensor sequences
   (SequenceAt, ConcatFromSequence...) are values like tensors, perturbed element-wise.
2. **Measure** (``measure``): per floating node input ``i`` and floating node output
   ``j``, at the captured point and two seeded draws of input ``i`` near it (the other
   inputs stay as captured: a structural float such as Resize's scales is never moved
   to measure the data), with relative steps ``h`` (``numeric.STEP``) and ``h/10``
   along a seeded direction ``v``, each point is *regular* (``flat`` or ``smooth``) or
   *irregular*: a difference that does not settle as the step shrinks (a jump),
   one-sided differences that disagree and do not shrink (a kink or a tie: ReduceMax
   with tied maxima, Relu at 0), an output whose shape changes, a value that is or turns
   non-finite, or a point the runtime refuses (a probability pushed out of [0, 1]). An
   irregular point is re-drawn (seeded, up to ``TRIES`` times, each move larger) and
   the move is recorded with its reasons; a point still irregular after the last try
   makes ``i -> j`` a ``jump`` (or ``not run`` when it never ran or never was finite).
   An input flat at every point that changes an output's shape under a larger move
   (Range's ``limit``) is a shape input: a ``jump``.
3. **VJP** (``vjp``): ``<dy, (f(p + h v) - f(p - h v)) / 2h>`` for one node input, for
   comparison with PyTorch's ``<grad_i, v>``.

Thresholds, with their margins (float64 / float32):

- *zero*: a central difference ``|f(p+sv) - f(p-sv)|`` at most ``ZERO[dtype] * Y``,
  ``Y`` the largest finite output magnitude seen at the point. float64: ``1e-10``,
  about 5e5 ulps above rounding, while a derivative of the output's own scale moves
  the output by 2e-7 at the small step (2000x above); float32: ``1e-5`` (80 ulps;
  20x below a unit-scale derivative at step 1e-4).
- *settled*: the central difference at ``h/10`` within ``SETTLE = 0.1`` (relative) of
  the one at ``h``. Smooth: truncation error ~h^2 (1e-12 / 1e-6 relative); a jump
  crossed at both steps makes them differ by 0.9, one crossed at ``h`` only by 1.
- *kink*: one-sided differences at ``h/10`` differ by more than ``KINK = 0.1`` of their
  size and by more than half their difference at ``h``. Smooth: they differ by ~s·f''
  and shrink tenfold with the step; at a kink the gap is O(1) and does not shrink.
Differences below the zero threshold (converted to the step) never count as unsettled
or kinked, so rounding noise cannot make a point irregular. Outcomes are decided on
ratios far from every threshold; detail strings carry only counts, the fixed steps
and categorical words, never a measured value, so they repeat on any machine
(a runtime's refusal is quoted with its decimal numbers masked).

Known limit: an op that draws random numbers on every run (onnxruntime's Bernoulli,
Dropout in training mode) changes between the runs of one finite difference; the
witness then reports what it saw (usually a jump), not a derivative.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import onnx
import onnx.defs

from .isolate import (IsolatedNode, Point, Value, WitnessError, elem_dtype, flat_values,
                      is_float_value, isolate, shaped_like, value_dtype, value_parts)
from .measure import MOVE, InputWitness, NodeWitness, Outcome, OutputWitness, measure
from .numeric import STEP

__all__ = ["witness", "vjp", "isolate", "measure", "IsolatedNode", "NodeWitness",
           "InputWitness", "OutputWitness", "Outcome", "Point", "WitnessError"]


def witness(model: onnx.ModelProto, node_index: int, feeds: Mapping[str, np.ndarray], *,
            seed: int = 0, steps: str | None = None) -> NodeWitness:
    """Isolate ``model.graph.node[node_index]`` on ``feeds`` and measure it. A node that
    cannot be isolated or run gives every parameter ``NOT_RUN`` with the reason.
    ``steps``: difference at that precision's steps (``measure``; the float64 re-measure's)."""
    try:
        node = isolate(model, node_index, feeds)
    except WitnessError as exc:
        return _not_run(model, node_index, str(exc), seed)
    if not node.lifted:   # RandomUniform, Constant: no input to perturb, whatever it draws
        return measure(node, seed=seed, steps=steps)
    why = _random_op(model, node_index) or _draws_anew(node) or _differs(node)
    if why:
        return _not_run(model, node_index, why, seed)
    return measure(node, seed=seed, steps=steps)


def _differs(node: IsolatedNode) -> str:
    """Why the isolated node's finite differences would not be about the exported node: it
    does not give the outputs the exported model computed there (onnx.reference's
    Optional returns a one-element list where onnxruntime returns the element) -- ''
    when it does."""
    if node.reproduces:
        return ""
    return (f"the isolated node, run in {node.runtime}, does not give the outputs the exported "
            f"model computed at the captured point ({node.capture_runtime})"
            + (f"; {node.why}" if node.why else ""))


def _random_op(model: onnx.ModelProto, node_index: int) -> str:
    """Why a sampling op is not measured: its schema has a ``seed`` attribute (Dropout,
    Bernoulli, RandomNormalLike...). A finite difference then differentiates one
    realization of its random draws (a runtime may even redraw them on every run),
    which is not the op's derivative ('' for a deterministic op)."""
    n = model.graph.node[node_index]
    version = next((i.version for i in model.opset_import if i.domain == n.domain), None)
    try:
        schema = onnx.defs.get_schema(n.op_type, version, n.domain) if version else \
            onnx.defs.get_schema(n.op_type, n.domain)
    except Exception:
        return ""
    if "seed" in schema.attributes:
        return (f"{n.op_type} samples random numbers (its schema has a seed attribute): a "
                "finite difference would differentiate one realization, not the op")
    return ""


def _draws_anew(node: IsolatedNode) -> str:
    """Why finite differences cannot measure the node: its outputs differ between two runs
    at the same point (Dropout in training, Bernoulli: a random op draws anew on every
    run), checked at the captured point and at a nudged one ('' when deterministic)."""
    m = MOVE["float32"]
    with np.errstate(all="ignore"):   # an inf or nan element stays what it is
        nudged = {a.name: shaped_like(x, flat_values(x) + m * (1 + np.abs(flat_values(x))))
                  for a in node.lifted if is_float_value(x := node.point[a.name])}
    for values in ({}, nudged):
        try:
            first, second = node.run(values), node.run(values)
        except Exception:   # a point the runtime refuses is measure's business
            continue
        for j, (a, b) in enumerate(zip(first, second)):
            if a is None or b is None:
                continue
            if any(not _same(x, y) for x, y in zip(value_parts(a), value_parts(b))):
                return (f"output {j} differs between two runs at the same point: the node draws "
                        "new random numbers on every run, so finite differences measure noise")
    return ""


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    """Two runs' values are equal (NaN equal to NaN where the dtype has one; a string output,
    as ONNX's StringNormalizer test gives, has none)."""
    return bool(np.array_equal(x, y, equal_nan=x.dtype.kind in "fc" and y.dtype.kind in "fc"))


def _not_run(model: onnx.ModelProto, node_index: int, why: str, seed: int) -> NodeWitness:
    if not 0 <= node_index < len(model.graph.node):
        return NodeWitness("", "", node_index, "", None, None, why, seed, (), ())
    n = model.graph.node[node_index]
    ins = tuple(InputWitness(i, name, "", Outcome.ABSENT if not name else Outcome.NOT_RUN,
                             "optional input not given" if not name else why)
                for i, name in enumerate(n.input))
    outs = tuple(OutputWitness(j, name, "", Outcome.ABSENT if not name else Outcome.NOT_RUN,
                               "optional output not given" if not name else why)
                 for j, name in enumerate(n.output))
    return NodeWitness(n.op_type, n.domain, node_index, n.name or f"{n.op_type}#{node_index}",
                       None, None, why, seed, ins, outs)


# ----------------------------------------------------------------------------- VJP
def vjp(node: IsolatedNode, index: int, v: Value, dy: Sequence[Value | None], *,
        point: Mapping[str, Value] | Point | None = None, step: float | None = None,
        seed: int = 0) -> float:
    """``<dy, (f(p + h v) - f(p - h v)) / 2h>`` for node input ``index``.

    ``v`` has the input's shape (a list of tensors for a sequence input); ``dy`` has one
    entry per node output (None: not contracted). ``point`` is the captured point by
    default, a ``Point`` of ``measure`` (with its ``seed``), or values by lifted input
    name overriding the captured ones. ``step`` defaults to ``numeric.STEP`` for the
    input's dtype. Compare with PyTorch's ``<grad_index, v>``.
    """
    if not 0 <= index < len(node.input_names) or node.input_names[index] is None:
        raise WitnessError(f"node input {index} is absent or does not exist")
    gname = node.input_names[index]
    if isinstance(point, Point):
        values = node.values_at(point, seed)
    else:
        values = dict(node.point)
        values.update(point or {})
    x = values[gname]
    if not is_float_value(x):
        raise WitnessError(f"node input {index} is {value_dtype(x)}: not differentiable")
    h = step if step is not None else STEP.get(elem_dtype(x), 1e-3)
    flat, dv = flat_values(x), flat_values(v)
    plus = node.run({**values, gname: shaped_like(x, flat + h * dv)})
    minus = node.run({**values, gname: shaped_like(x, flat - h * dv)})
    total = 0.0
    for j, d in enumerate(dy):
        if d is None:
            continue
        total += float(np.sum(flat_values(d) * (flat_values(plus[j]) - flat_values(minus[j]))) / (2 * h))
    return total
