"""ai.onnx.preview.training Gradient-1, decided at ONNX's own model tests of it
(``onnx/backend/test/case/model/gradient.py``: ``test_gradient_of_add``, c = a + b, and
``test_gradient_of_add_and_mul``, d = (a + b) a), for the differentiability table
(docs/table.md, "Other domains").

Why not a case: no runtime runs a Gradient node (onnx.reference raises NotImplementedError,
onnxruntime registers no such op; tests/test_domain_cases.py checks both), so the numeric
witness cannot run the node as it runs every other op. Both witnesses compute the node by
its definition instead -- its ``Outputs`` are dy/dx at the values its ``Inputs`` give the
tensors named by its attributes ``xs`` and ``zs`` -- and measure how those outputs move with
its inputs, which is the forward graph's *second* derivative:

- numeric: the test's model less the Gradient node (the forward graph: inputs ``xs`` then
  ``zs``, output ``y``), cast to float64 (Add and Mul admit double), run in onnxruntime;
  the node's outputs by central differences of it (checked against ONNX's expected outputs
  at ONNX's point), then central differences of those with respect to each node input, at
  ONNX's point and two seeded re-drawn points, steps 1e-3 and 1e-4 on both levels;
- autograd: the same forward graph as a PyTorch formula (``FORMULAS``, its forward checked
  against onnxruntime's), ``torch.autograd.grad(create_graph=True)`` for the node's outputs,
  then differentiated again (double backward); compared with the numeric second
  derivatives, as a case's VJP is with its finite differences.

Whether ``Outputs`` moves with ``Inputs`` is the graph's business: zero for c = a + b, nonzero
for d = (a + b) a -- exactly what makes If's, Loop's and Scan's data ``body-dependent``
(conventions.py). So each test's verdict is the two witnesses' math under that convention,
as If's case is (``engine.rules.verdict.under_convention``, the one helper): the math half
(differentiable at add_and_mul, flat at add: the counter-example) kept in the reason, the
tag the convention implies (unknown) supported. ONNX's own Gradient-1 text chains Gradient
nodes for second derivatives, which presumes a graph whose Gradient outputs move with its
inputs -- as a smooth body makes If's outputs differentiable, not every body.

The records are built when the table is (``scripts/table_data.py``), in the shape of a
proof record's (``op``, ``case`` -- the ONNX test's name --, ``parameters``), and read by
``batch/domain_versions.domain_ops`` and ``output/table.build`` like the cases' records.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

TRAINING = "ai.onnx.preview.training"
STEPS = (1e-3, 1e-4)
"""The central-difference steps, each used on both levels (the first and second
derivative), in float64."""
ZERO = 1e-6
"""A second derivative at most this (times max(1, the first derivatives' scale)) at both
steps is zero: float64's rounding leaves about 1e-7 at the 1e-4 steps on these graphs."""
REDRAWN = 2
"""Re-drawn points beside ONNX's (seed 0, a standard normal per input), as a case measures
three points."""

FORMULAS: dict[str, Callable[..., Any]] = {
    "test_gradient_of_add": lambda a, b: a + b,
    "test_gradient_of_add_and_mul": lambda a, b: (a + b) * a,
}
"""ONNX's model tests of Gradient: the forward graph each one's Gradient node
differentiates, as a PyTorch formula of its inputs in the node's order (xs, then zs)."""


@dataclass(frozen=True)
class GradientTest:
    """One of ONNX's model tests of Gradient: its model and first data set."""

    name: str
    model: Any
    inputs: tuple[np.ndarray, ...]
    outputs: tuple[np.ndarray, ...]


def onnx_tests() -> list[GradientTest]:
    """ONNX's model tests of Gradient, from the installed onnx's own generator (every
    ``export_*`` of ``onnx.backend.test.case.model.gradient.Gradient``); the generator's
    module-level list is left as it was found."""
    from onnx.backend.test.case import model as cases
    from onnx.backend.test.case.model.gradient import Gradient
    before = len(cases._SimpleModelTestCases)
    try:
        for name in sorted(n for n in vars(Gradient) if n.startswith("export")):
            getattr(Gradient, name)()
        made = cases._SimpleModelTestCases[before:]
    finally:
        del cases._SimpleModelTestCases[before:]
    return [GradientTest(t.name, t.model, tuple(t.data_sets[0][0]), tuple(t.data_sets[0][1]))
            for t in made]


def _node(model: Any) -> Any:
    (node,) = [n for n in model.graph.node if n.op_type == "Gradient" and n.domain == TRAINING]
    return node


def _attr(node: Any, name: str) -> Any:
    import onnx
    a = next((a for a in node.attribute if a.name == name), None)
    return None if a is None else onnx.helper.get_attribute_value(a)


def forward_model(model: Any) -> Any:
    """The forward graph a test's Gradient node differentiates: the model less that node,
    its inputs the tensors ``xs`` then ``zs`` name, its output ``y``, every value float64."""
    import onnx
    from onnx import TensorProto, helper
    node = _node(model)
    names = [n.decode() if isinstance(n, bytes) else n
             for n in list(_attr(node, "xs") or []) + list(_attr(node, "zs") or [])]
    y = _attr(node, "y")
    y = y.decode() if isinstance(y, bytes) else y
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(model.graph.input) + list(model.graph.output)}
    graph = helper.make_graph(
        [n for n in model.graph.node if n is not node], "forward",
        [helper.make_tensor_value_info(n, TensorProto.DOUBLE, shapes.get(n)) for n in names],
        [helper.make_tensor_value_info(y, TensorProto.DOUBLE, shapes.get(y))])
    opsets = [o for o in model.opset_import if o.domain != TRAINING]
    forward = helper.make_model(graph, opset_imports=opsets, ir_version=model.ir_version)
    onnx.checker.check_model(forward, full_check=True)
    return forward


class Forward:
    """The forward graph in onnxruntime (float64): y at given values of the node's inputs."""

    def __init__(self, model: Any) -> None:
        import onnxruntime as ort
        self.session = ort.InferenceSession(model.SerializeToString(),
                                            providers=["CPUExecutionProvider"])
        self.names = [i.name for i in self.session.get_inputs()]

    def __call__(self, values: list[np.ndarray]) -> np.ndarray:
        (y,) = self.session.run(None, dict(zip(self.names, values)))
        return np.asarray(y, np.float64)


def _bumped(values: list[np.ndarray], i: int, k: int, h: float) -> list[np.ndarray]:
    out = [v.copy() for v in values]
    out[i].reshape(-1)[k] += h
    return out


def first(f: Callable[[list[np.ndarray]], np.ndarray], values: list[np.ndarray], n_xs: int,
          h: float) -> list[np.ndarray]:
    """The Gradient node's outputs by its definition: dy/dx_i for each of the first ``n_xs``
    inputs, by central differences of a scalar y (step ``h``)."""
    out = []
    for i in range(n_xs):
        g = np.zeros(values[i].size)
        for k in range(values[i].size):
            g[k] = (f(_bumped(values, i, k, h)).sum() - f(_bumped(values, i, k, -h)).sum()) / (2 * h)
        out.append(g.reshape(values[i].shape))
    return out


def second_numeric(f: Callable[[list[np.ndarray]], np.ndarray], values: list[np.ndarray],
                   n_xs: int, h: float) -> np.ndarray:
    """[output k, input j]: the largest |d Outputs[k] / d Inputs[j]| over their elements, by
    central differences (step ``h``) of ``first`` (step ``h``)."""
    out = np.zeros((n_xs, len(values)))
    for j in range(len(values)):
        for e in range(values[j].size):
            up = first(f, _bumped(values, j, e, h), n_xs, h)
            down = first(f, _bumped(values, j, e, -h), n_xs, h)
            for k in range(n_xs):
                out[k, j] = max(out[k, j], float(np.abs((up[k] - down[k]) / (2 * h)).max()))
    return out


def second_autograd(formula: Callable[..., Any], values: list[np.ndarray], n_xs: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's double backward of ``formula`` at ``values`` (float64): [output k, input j]
    the largest |d Outputs[k] / d Inputs[j]|, and whether autograd tracked that derivative
    at all (an output with no graph -- y = a + b's constant dy/da -- gives None)."""
    import torch
    xs = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    y = formula(*xs).sum()
    grads = torch.autograd.grad(y, xs[:n_xs], create_graph=True, allow_unused=True)
    size = np.zeros((n_xs, len(xs)))
    tracked = np.zeros((n_xs, len(xs)), bool)
    for k, g in enumerate(grads):
        if g is None or not g.requires_grad:
            continue
        for e in range(g.numel()):
            d = torch.autograd.grad(g.reshape(-1)[e], xs, retain_graph=True, allow_unused=True)
            for j, dj in enumerate(d):
                if dj is not None:
                    tracked[k, j] = True
                    size[k, j] = max(size[k, j], float(dj.abs().max()))
    return size, tracked


@dataclass(frozen=True)
class Measured:
    """One test's second derivatives at every point: numeric at each step, autograd."""

    test: str
    numeric: tuple[np.ndarray, ...]   # per step, [output k, input j], max over the points
    autograd: np.ndarray              # [output k, input j], max over the points
    tracked: np.ndarray               # [output k, input j]: autograd had a graph there
    scale: float                      # the first derivatives' scale (what ZERO is times)
    first_error: float                # |the node's outputs by definition - ONNX's expected|
    forward_error: float              # |onnxruntime's y - the formula's y| over the points
    points: int


def measure(test: GradientTest) -> Measured:
    """Both witnesses at ONNX's point of ``test`` and ``REDRAWN`` re-drawn ones."""
    import torch
    model = test.model
    node = _node(model)
    n_xs = len(_attr(node, "xs") or [])
    f = Forward(forward_model(model))
    given = dict(zip([i.name for i in model.graph.input], test.inputs))
    onnx_point = [np.asarray(given[n], np.float64) for n in node.input]
    rng = np.random.default_rng(0)
    points = [onnx_point] + [[rng.standard_normal(v.shape) for v in onnx_point]
                             for _ in range(REDRAWN)]
    expected = dict(zip([o.name for o in model.graph.output], test.outputs))
    at_onnx = first(f, onnx_point, n_xs, STEPS[0])
    first_error = max(float(np.abs(g - expected[o]).max()) for g, o in zip(at_onnx, node.output))
    formula = FORMULAS[test.name]
    numeric = [np.zeros((n_xs, len(node.input))) for _ in STEPS]
    size = np.zeros((n_xs, len(node.input)))
    tracked = np.zeros((n_xs, len(node.input)), bool)
    scale = forward_error = 0.0
    for p in points:
        forward_error = max(forward_error, float(np.abs(
            f(p) - formula(*[torch.tensor(v) for v in p]).numpy()).max()))
        scale = max([scale] + [float(np.abs(g).max()) for g in first(f, p, n_xs, STEPS[0])])
        for s, h in enumerate(STEPS):
            numeric[s] = np.maximum(numeric[s], second_numeric(f, p, n_xs, h))
        a, t = second_autograd(formula, p, n_xs)
        size, tracked = np.maximum(size, a), tracked | t
    return Measured(test.name, tuple(numeric), size, tracked, scale, first_error,
                    forward_error, len(points))


MATH = {
    "test_gradient_of_add":
        "the forward graph c = a + b: dc/da = dc/db = 1, constant in a and b, so every "
        "second derivative is 0 (the counter-example: flat for this graph)",
    "test_gradient_of_add_and_mul":
        "the forward graph d = (a + b) a: dd/da = 2a + b, dd/db = a, so d(dd/da)/da = 2, "
        "d(dd/da)/db = 1, d(dd/db)/da = 1, d(dd/db)/db = 0: Outputs move with Inputs",
}
"""Each test's math, declared with it as a case declares the math a convention sets aside."""

GRAPH = ("its Outputs are the derivatives of the graph its attributes xs, zs and y name, so "
         "whether they move with its Inputs is that graph's second derivative -- "
         "a property of the graph, not of Gradient, as If's body decides If's")


def _numeric(m: Measured, cells: list[tuple[int, int]]) -> tuple[Any, str]:
    """The numeric witness's outcome over (output k, input j) pairs, and its detail."""
    from ..vocab import NumericOutcome as N
    tol = ZERO * max(1.0, m.scale)
    coarse, fine = (max(float(s[k, j]) for k, j in cells) for s in m.numeric)
    how = (f"the Gradient node evaluated by its definition (no runtime registers it): "
           f"central differences of the forward graph run in onnxruntime in float64, then "
           f"their central differences ({m.points} points: ONNX's and {m.points - 1} "
           f"re-drawn; steps {STEPS[0]:g}, {STEPS[1]:g} on both levels)")
    if coarse <= tol and fine <= tol:
        return N.FLAT, f"flat: every second derivative <= {tol:.3g} ({how})"
    if coarse > tol and fine > tol and abs(coarse - fine) <= 1e-3 * max(coarse, fine):
        return N.SMOOTH, f"smooth: second derivative up to {fine:.3g} ({how})"
    return N.JUMP, f"unstable: {coarse:.3g} at step {STEPS[0]:g}, {fine:.3g} at {STEPS[1]:g} ({how})"


def _autograd(m: Measured, cells: list[tuple[int, int]]) -> tuple[Any, str, str]:
    """The autograd witness's outcome over (output k, input j) pairs, its detail and the
    evidence class a record names (docs/design.md §1.1)."""
    from ..vocab import AutogradOutcome as A
    tol = ZERO * max(1.0, m.scale)
    tracked = [m.autograd[k, j] for k, j in cells if m.tracked[k, j]]
    how = "double backward of the forward graph's PyTorch formula (float64)"
    if any(v > tol for v in tracked):
        return A.GRAD, f"nonzero second derivative (max {max(tracked):.3g}; {how})", "grad"
    if tracked:
        return A.ZERO, f"second derivative zero at every point ({how})", "zero-grad"
    return A.NONE, f"no second derivative: the first derivatives carry no graph ({how})", \
        "no-grad"


def record(m: Measured) -> dict[str, Any]:
    """One test's record, in a proof record's shape: Gradient-1's ``Inputs`` (every node
    input j, into any output) and ``Outputs`` (every output k, from any input), each
    decided by ``engine.rules.verdict.decide`` from the two witnesses, then under the
    ``body-dependent`` convention (``under_convention``), as If's case is."""
    import onnxruntime as ort
    import torch

    from ..conventions import Applies, Convention
    from ..engine.rules.verdict import Vjp, Witness, decide, under_convention
    from ..tags.schema import schema_tags
    n_out, n_in = m.autograd.shape
    tags = schema_tags("Gradient", 1, TRAINING)
    tol = ZERO * max(1.0, m.scale)
    agrees = np.abs(m.autograd - m.numeric[1]) <= 1e-4 * np.maximum(1.0, m.autograd)
    forward = None
    if m.forward_error > 1e-9:
        forward = f"onnxruntime's forward graph differs from the formula by {m.forward_error:.3g}"
    elif m.first_error > 1e-5:
        forward = (f"the node's outputs by its definition differ from ONNX's expected ones by "
                   f"{m.first_error:.3g}")
    # Inputs and Outputs are each one variadic parameter: each is judged over every
    # (output k, input j) pair, so both rest on the same witnesses, measured once
    cells = [(k, j) for k in range(n_out) for j in range(n_in)]
    a, a_detail, evidence = _autograd(m, cells)
    n, n_detail = _numeric(m, cells)
    compared = [(k, j) for k, j in cells if m.autograd[k, j] > tol]
    vjp = Vjp.FAILED if not all(agrees[k, j] for k, j in cells) else Vjp.PASSED
    params = []
    for f in tags.inputs + tags.outputs:
        d = decide(autograd=Witness(a, a_detail, source="PyTorch formula of the forward graph"),
                   numeric=Witness(n, n_detail), tag=f.tag, forward=forward, vjp=vjp,
                   vjp_detail=(f"autograd's second derivatives match the central differences "
                               f"at step {STEPS[1]:g} (rel err <= 1e-4, {len(compared)} nonzero)"
                               if vjp == Vjp.PASSED else "autograd's second derivatives differ "
                               "from the central differences"),
                   reference=True)
        d = under_convention(d, Applies(Convention.BODY_DEPENDENT,
                                        f"{MATH[m.test]}; Gradient: {GRAPH}"), f.tag, "Gradient")
        params.append({"io": f.io, "index": f.position, "name": f.name,
                       "source": ", ".join(f"{f.io} {i}" for i in
                                           range(n_in if f.io == "input" else n_out)),
                       "evidence": evidence, "tag": str(f.tag), "verdict": str(d.verdict),
                       "supports": None if d.supports is None else str(d.supports),
                       "rule": str(d.rule), "convention": str(Convention.BODY_DEPENDENT),
                       "witnesses": {"autograd": {"outcome": str(a), "detail": a_detail},
                                     "numeric": {"outcome": str(n), "detail": n_detail}},
                       "reason": d.reason})
    return {"kind": "gradient test", "op": "Gradient", "domain": TRAINING,
            "case": m.test, "schema_version": 1, "status": "proved",
            "witness": {"runtime": "onnxruntime", "onnxruntime": ort.__version__,
                        "torch": torch.__version__.split("+")[0],
                        "graph": "the forward graph: the test's model less the Gradient node",
                        "node": "evaluated by central differences (no runtime registers it)",
                        "steps": list(STEPS), "precision": "float64", "points": m.points},
            "parameters": params}


def records() -> list[dict[str, Any]]:
    """Gradient-1's records: one per ONNX model test of it that has a formula here (a test
    without one is an error: a new test must be read and given its formula)."""
    tests = onnx_tests()
    missing = sorted({t.name for t in tests} - set(FORMULAS))
    if missing:
        raise RuntimeError(f"ONNX's model tests of Gradient {missing} have no forward "
                           "formula in batch/gradient_witness.FORMULAS")
    return [record(measure(t)) for t in tests]
