"""What a node-test runner needs to re-run a case's evidence: the record's ``test_data``.

The evidence directory is ONNX's node-test layout (docs/evidence.md): the inputs,
PyTorch's outputs, the ``dy`` backpropagated into each output (``grad_output_<j>.pb``) and
the gradient it gave each graph input (``grad_input_<j>.pb``). Those files alone do not
say how to re-check them, so the record does:

- ``runtime``: the runtime the numeric check ran, which reproduced the outputs
  (onnxruntime, or ``onnx.reference`` where onnxruntime lacks the op, opset or float64
  kernel -- and ``why``);
- ``copy``: ``float32`` when onnxruntime ran a float32 copy of the model (it lacks the
  float64 kernel, and no faithful float64 runtime ran it: ``engine/float32_copy.py``); a
  re-run derives the same copy from ``model.onnx`` and feeds it the inputs as float32;
- ``fwd_tol``: the forward tolerance, scaled as ``numeric.forward_bound`` scales it;
- per output, ``check``: ``compare``, ``random draw`` (the output depends on a sampling
  node: another runtime or seed draws other values, unless the case says why every draw
  is the same, ``Case.fixed_draw``) or ``declared mismatch`` (the runtime computes
  another function, and the case declares that verdict: HammingWindow's coefficients).
"""
from __future__ import annotations

from typing import Any, Sequence

import onnx

from ..case import Case
from ..vocab import OutputCheck, Runtime, Verdict
from .numeric import RANDOM_OPS, NumericResult
from .verdict import Rule
from .witnesses import Parameter


def input_file(j: int) -> str:
    return f"input_{j}.pb"


def output_file(j: int) -> str:
    return f"output_{j}.pb"


def grad_input_file(j: int) -> str:
    """PyTorch's gradient of graph input ``j`` for the dy in the ``grad_output`` files."""
    return f"grad_input_{j}.pb"


def grad_output_file(j: int) -> str:
    """The dy backpropagated into graph output ``j`` (PyTorch's ``grad_output``)."""
    return f"grad_output_{j}.pb"


DATA_FILE_PATTERN = r"^(input|output|grad_input|grad_output)_\d+\.pb$"

RUNTIME_OF = {"onnxruntime": Runtime.ONNXRUNTIME, "reference": Runtime.REFERENCE}
"""numeric.Runner's kind -> the runtime's name in the record."""


def _sampling(node: onnx.NodeProto) -> bool:
    """A node that draws random values: a random op, or Dropout given a training_mode."""
    if node.op_type in RANDOM_OPS:
        return True
    return node.op_type == "Dropout" and len(node.input) > 2 and bool(node.input[2])


def random_sources(model: onnx.ModelProto) -> dict[str, str]:
    """Graph output name -> the sampling op it depends on (the graph's own nodes, in
    their topological order; a sampling node inside a subgraph is not followed)."""
    drawn: dict[str, str] = {}
    for node in model.graph.node:
        if _sampling(node):
            by = node.op_type
        else:
            by = next((drawn[i] for i in node.input if i in drawn), None)
        if by is not None:
            drawn.update({o: by for o in node.output if o})
    return {o.name: drawn[o.name] for o in model.graph.output if o.name in drawn}


def _declared_forward(parameters: Sequence[Parameter], j: int) -> str | None:
    """The case's reason when it declares the forward mismatch (output ``j``'s parameter
    first, else any parameter decided by the forward rule as declared)."""
    declared = [p for p in parameters if p.rule == Rule.FORWARD and p.expected == p.verdict
                and p.expected == Verdict.INCONCLUSIVE]
    mine = [p for p in declared if p.io == "output" and p.index == j]
    chosen = (mine or declared or [None])[0]
    return None if chosen is None else chosen.expected_reason


def record(case: Case, model: onnx.ModelProto, graph_outputs: Sequence[str],
           numeric: NumericResult | None, parameters: Sequence[Parameter],
           off: str | None) -> dict[str, Any]:
    """The ``test_data`` section of a proof record (module docstring). ``off``: why no
    numeric check ran, when none did."""
    random = random_sources(model)
    outputs = []
    for j, name in enumerate(graph_outputs):
        ok = (numeric.outputs_ok[j] if numeric is not None and j < len(numeric.outputs_ok)
              else None)
        declared = _declared_forward(parameters, j) if ok is False else None
        if name in random and not case.fixed_draw:
            check, reason = OutputCheck.RANDOM, (
                f"drawn by {random[name]}: another runtime or seed draws other values; "
                "only its shape and type can be compared")
        elif declared is not None:
            check, reason = OutputCheck.DECLARED, declared
        else:
            check = OutputCheck.COMPARE
            reason = (case.fixed_draw or None) if name in random else None
        outputs.append({"file": output_file(j), "name": name, "check": check,
                        "reason": reason})
    runtime = None if numeric is None else RUNTIME_OF.get(numeric.runtime or "")
    if runtime is None:
        why = off if numeric is None else numeric.why
    else:
        why = numeric.why or None   # why onnxruntime could not, when the reference ran
    return {"runtime": runtime, "why": why or None,
            **({"copy": "float32"} if numeric is not None and numeric.copy else {}),
            "fwd_tol": None if numeric is None else numeric.fwd_tol, "outputs": outputs}
