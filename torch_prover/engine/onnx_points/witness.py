"""One node test measured: the fidelity check, then the numeric witness at its points.

Fidelity costs nothing (the test's model runs once anyway): the runtime the verdict uses
(``numeric.choose_runtime``: onnxruntime, else the reference evaluator where it follows the
version, else onnxruntime's float32 copy) must give ONNX's expected outputs within the
test's rtol/atol at every data set before its points count; otherwise the test says "the
runtime does not compute Op-V as ONNX's tests say" and no point of it is used. Then the
node is measured at the first data set's inputs by ``engine/numeric/node_witness.witness`` (the
same isolate + finite differences as a catalogue case's node witness).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import onnx

from ...errors import capped, describe
from ...tags.schema import UnknownOpError, schema_tags
from ...vocab import BodyOutcome, NumericOutcome, PointsSkip
from ..bodies.function_body import for_node
from ..numeric.node_witness import witness
from ..numeric.numeric import choose_runtime
from ..numeric.redraw import measured_in
from ..versions.runtimes import Target
from .source import NodeTest


@dataclass(frozen=True)
class ParamOutcome:
    """The numeric witness's outcome for one formal parameter at one test's points (a
    variadic formal: the best over its node positions, smooth first)."""

    io: str
    name: str
    outcome: NumericOutcome
    body: BodyOutcome = BodyOutcome.NOT_APPLICABLE   # the function-body witness, same node
    redrawn: bool = False    # flat here, smooth at re-drawn values of the test's inputs
    float64: bool = False    # flat here in the test's precision, smooth in float64 here


@dataclass(frozen=True)
class TestWitness:
    """One node test measured (``skip`` set: its points are not used, ``detail`` says why)."""

    test: str
    op: str
    version: int
    runtime: str | None
    params: tuple[ParamOutcome, ...]
    skip: PointsSkip | None = None
    detail: str = ""
    precision: str = ""      # how a flat parameter was re-measured (redraw.Float64Run.words)
    measured_in: str = ""    # the test's own precision and runtime (redraw.measured_in)

    def as_dict(self) -> dict[str, Any]:
        return {"test": self.test, "op": self.op, "version": self.version,
                "runtime": self.runtime, "skip": self.skip.value if self.skip else None,
                "detail": self.detail, "precision": self.precision,
                "measured_in": self.measured_in,
                "params": [[p.io, p.name, p.outcome.value, p.body.value, p.redrawn, p.float64]
                           for p in self.params]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "TestWitness":
        return cls(d["test"], d["op"], d["version"], d["runtime"],
                   tuple(ParamOutcome(io, name, NumericOutcome(o), BodyOutcome(b), *rest)
                         for io, name, o, b, *rest in d["params"]),
                   PointsSkip(d["skip"]) if d["skip"] else None, d["detail"],
                   d.get("precision", ""), d.get("measured_in", ""))


_RANK = (NumericOutcome.SMOOTH, NumericOutcome.JUMP, NumericOutcome.FLAT, NumericOutcome.NONE,
         NumericOutcome.INTEGER, NumericOutcome.NOT_RUN, NumericOutcome.ABSENT)

_BODY_RANK = (BodyOutcome.DIFF, BodyOutcome.NONDIFF, BodyOutcome.UNKNOWN, BodyOutcome.NOT_BUILT,
              BodyOutcome.NOT_APPLICABLE)


def _close(got: Any, want: np.ndarray, rtol: float, atol: float) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if want.dtype.kind in "OUS" or got.dtype.kind in "OUS":
        return bool(np.array_equal(got.astype(str), want.astype(str)))
    try:
        g, w = got.astype(np.float64), want.astype(np.float64)
    except (TypeError, ValueError):
        return bool(np.array_equal(got, want))
    return bool(np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True))


def fidelity(test: NodeTest, model: onnx.ModelProto) -> tuple[str | None, str]:
    """The runtime that reproduces every data set's expected outputs, or None and why not."""
    names = [i.name for i in model.graph.input]
    runtime = None
    for d, (ins, outs) in enumerate(test.data_sets):
        feeds = dict(zip(names, ins))
        runner, got, why = choose_runtime(model, feeds, Target(test.op))
        if runner is None:
            return None, f"no runtime computes {test.op}-{test.version}: {why}"
        runtime = runner.kind if runner.copy is None else f"{runner.kind} (float32 copy)"
        bad = [j for j, (g, w) in enumerate(zip(got, outs)) if not _close(g, w, test.rtol, test.atol)]
        if bad or len(got) != len(outs):
            return None, (f"the runtime does not compute {test.op}-{test.version} as ONNX's tests "
                          f"say: {runtime} differs from {test.name}'s expected output "
                          f"{', '.join(map(str, bad)) or 'count'} (data set {d}, rtol "
                          f"{test.rtol:g}, atol {test.atol:g})")
    return runtime, ""


def measure_test(test: NodeTest, body: bool = False) -> TestWitness:
    """The fidelity check, then the node's finite differences at the test's first data set;
    with ``body``, the function-body witness of the same node too (what a case-free verdict
    hears; the default run's check needs the numbers only, and the body's shape inference
    would double the cost)."""
    model = test.proto()
    try:
        runtime, why = fidelity(test, model)
    except Exception as exc:   # a runtime refusing ONNX's own model is that test's finding
        runtime, why = None, f"{test.op}-{test.version} could not run: {capped(describe(exc), 160)}"
    if runtime is None:
        return TestWitness(test.name, test.op, test.version, None, (), PointsSkip.MISMATCH, why)
    if not test.data_sets:
        return TestWitness(test.name, test.op, test.version, runtime, (), None, "no data set")
    feeds = dict(zip([i.name for i in model.graph.input], test.data_sets[0][0]))
    w = witness(model, 0, feeds)
    try:
        tags = schema_tags(test.op, test.opset)
    except UnknownOpError as exc:
        return TestWitness(test.name, test.op, test.version, runtime, (), PointsSkip.NO_SCHEMA,
                           str(exc))
    found = for_node(model, 0) if body else None
    best: dict[tuple[str, str], NumericOutcome] = {}
    said: dict[tuple[str, str], BodyOutcome] = {}
    for io, ws in (("input", w.inputs), ("output", w.outputs)):
        for x in ws:
            f = tags.formal(io, x.index) if x.index is not None else None
            if f is None:
                continue
            key, o = (io, f.name), NumericOutcome(x.outcome)
            if key not in best or _RANK.index(o) < _RANK.index(best[key]):
                best[key] = o
            b = BodyOutcome(found.finding(io, x.index).outcome) if found else \
                BodyOutcome.NOT_APPLICABLE
            if key not in said or _BODY_RANK.index(b) < _BODY_RANK.index(said[key]):
                said[key] = b
    redrawn, in64, precision = _redrawn(model, feeds, tags, best) if body else (set(), set(), "")
    return TestWitness(test.name, test.op, test.version, runtime,
                       tuple(ParamOutcome(io, n, o, said[(io, n)], (io, n) in redrawn,
                                          (io, n) in in64)
                             for (io, n), o in best.items()),
                       None, w.why if not best else "", precision,
                       measured_in(feeds, runtime.split(" ")[0]) if precision else "")


def _redrawn(model: onnx.ModelProto, feeds: dict[str, Any], tags: Any,
             best: Mapping[tuple[str, str], NumericOutcome]
             ) -> tuple[set[tuple[str, str]], set[tuple[str, str]], str]:
    """The parameters flat at the test's point that are smooth when measured again
    (``engine/numeric/redraw``): in float64 at the same point (RNN's ``R`` where tanh
    saturates below float32's resolution), or at re-drawn values of its inputs (``R`` at a
    zero initial state); and how float64 ran (runtime, schema version) or why not.
    Measured for case-free verdicts only, and only when something is flat."""
    if NumericOutcome.FLAT not in best.values():
        return set(), set(), ""
    from ..numeric.redraw import measure_redrawn
    flat = {(io, i) for io in ("input", "output") for i in range(len(_node_of(model, io)))
            if (f := tags.formal(io, i)) is not None
            and best.get((io, f.name)) is NumericOutcome.FLAT}
    seen = measure_redrawn(model, 0, [feeds], flat=flat)
    found, in64 = set(), set()
    for io, index in set(seen.smooth) | seen.given64:
        f = tags.formal(io, index)
        if f is None or best.get((io, f.name)) is not NumericOutcome.FLAT:
            continue
        (in64 if seen.in_float64(io, index) else found).add((io, f.name))
    return found - in64, in64, seen.float64.words() if seen.float64 else ""


def _node_of(model: onnx.ModelProto, io: str) -> Sequence[str]:
    n = model.graph.node[0]
    return n.input if io == "input" else n.output


def float_inputs(test: NodeTest) -> frozenset[int]:
    """The graph input positions the test gives a floating value (what it can exercise)."""
    ins = test.data_sets[0][0] if test.data_sets else ()
    return frozenset(j for j, x in enumerate(ins)
                     if np.issubdtype(np.asarray(x).dtype, np.floating))


def choose(tests: Sequence[NodeTest], per_version: int) -> list[NodeTest]:
    """At most ``per_version`` tests of one schema version, chosen for coverage: each pick
    is the test giving floats to the most inputs no earlier pick did, then to the most inputs
    (ties: by name, so the choice is the same on every run). A cell's witness needs a point where each
    parameter is a float first (Clip's ``min`` is given by some tests only); the further
    picks are more points for the parameters already given."""
    left = sorted(tests, key=lambda t: t.name)
    picked: list[NodeTest] = []
    seen: set[int] = set()
    while left and len(picked) < per_version:
        best = max(left, key=lambda t: (len(float_inputs(t) - seen), len(float_inputs(t)),
                                        -left.index(t)))
        picked.append(best)
        seen |= float_inputs(best)
        left.remove(best)
    return picked
