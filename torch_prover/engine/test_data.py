"""What a node-test runner needs to re-run a case's evidence: the record's ``test_data``.

The evidence directory is ONNX's node-test layout (docs/evidence.md): the inputs,
PyTorch's outputs, the ``dy`` backpropagated into each output (``grad_output_<j>.pb``) and
the gradient it gave each graph input (``grad_input_<j>.pb``). Those files alone do not
say how to re-check them, so the record does:

- ``runtime``: the runtime the numeric check ran, which reproduced the outputs
  (onnxruntime, or ``onnx.reference`` where onnxruntime lacks the op, opset or float64
  kernel -- and ``why``);
- ``copy``: ``float32`` when onnxruntime ran a float32 copy of the model (it lacks the
  float64 kernel, and no faithful float64 runtime ran it: ``engine/versions/float32_copy.py``); a
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
from .numeric.numeric import RANDOM_OPS, NumericResult
from .rules.verdict import Rule
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


def random_reason(op: str) -> str:
    """A random-draw output's reason: the sampling op that draws it."""
    return (f"drawn by {op}: another runtime or seed draws other values; only its shape "
            "and type can be compared")


def _declared_forward(parameters: Sequence[Parameter], j: int) -> str | None:
    """The case's reason when it declares the forward mismatch (output ``j``'s parameter
    first, else any parameter decided by the forward rule as declared)."""
    return _declared_of([(p.rule, p.expected, p.verdict, p.io, p.index, p.expected_reason)
                         for p in parameters], j)


def _declared_of(rows: Sequence[tuple[Any, Any, Any, Any, Any, Any]], j: int) -> str | None:
    """``_declared_forward`` over (rule, expected, verdict, io, index, expected reason)."""
    declared = [r for r in rows if r[0] == Rule.FORWARD and r[1] == r[2]
                and r[1] == Verdict.INCONCLUSIVE]
    mine = [r for r in declared if r[3] == "output" and r[4] == j]
    chosen = (mine or declared or [None])[0]
    return None if chosen is None else chosen[5]


INVALID_OFF = "the case is invalid: no numeric check ran"
NUMERIC_OFF = "numeric checks off (--no-numeric): no runtime ran the model"
"""Why no runtime ran, in a record with no numeric check (``engine/record.py``)."""


def problem(rec: dict[str, Any], model: onnx.ModelProto, fixed_draw: str) -> str | None:
    """Why ``rec``'s ``test_data`` is not what its own numeric check, its parameters and
    ``model`` (model.onnx, already matched to the record's sha256) give (None: it is), so
    nothing a re-run decides is read on its word (docs/safety.md): the runtime, its why, the
    float32 copy and the tolerance are the numeric check's; an output is a ``random draw``
    exactly when a sampling node of the model draws it (unless the case's ``fixed_draw``
    says every draw is the same), and a ``declared mismatch`` only in a failed forward check
    a parameter declares, with that declaration's reason. ``fixed_draw``: the case's ("" for
    a record of no catalogue case). A malformed field is a problem too, never a crash."""
    try:
        return _problem(rec, model, fixed_draw)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        return f"test_data: malformed ({type(exc).__name__}: {exc})"


def _problem(rec: dict[str, Any], model: onnx.ModelProto, fixed_draw: str) -> str | None:
    data, num = rec.get("test_data"), rec.get("numeric")
    if not isinstance(data, dict):
        return "the record has no test_data"
    if num is None:
        want = {"runtime": None, "why": INVALID_OFF if rec.get("invalid") else NUMERIC_OFF,
                "fwd_tol": None, "copy": None}
    else:
        want = {"runtime": RUNTIME_OF.get(num.get("runtime") or ""), "why": num.get("why"),
                "fwd_tol": num.get("fwd_tol"),
                "copy": "float32" if num.get("copy") is not None else None}
    for key, value in want.items():
        if data.get(key) != value:
            return f"test_data.{key} is {data.get(key)!r}, its numeric check gives {value!r}"
    names = [o.name for o in model.graph.output]
    outputs = data["outputs"]
    if len(outputs) != len(names):
        return f"test_data lists {len(outputs)} outputs, model.onnx has {len(names)}"
    random = random_sources(model)
    rows = [(Rule(p["rule"]), p.get("expected", {}).get("verdict"), p["verdict"], p["io"],
             p["index"], p.get("expected", {}).get("reason")) for p in rec["parameters"]]
    failed = num is not None and num.get("forward_ok") is False
    for j, (o, name) in enumerate(zip(outputs, names)):
        if (o["file"], o["name"]) != (output_file(j), name):
            return f"test_data output {j} is {o['file']} ({o['name']}), model.onnx's " \
                   f"{output_file(j)} ({name})"
        declared = _declared_of(rows, j) if failed else None
        if name in random and not fixed_draw:
            allowed = {(OutputCheck.RANDOM, random_reason(random[name]))}
        else:
            plain = (OutputCheck.COMPARE, (fixed_draw or None) if name in random else None)
            allowed = {plain} | ({(OutputCheck.DECLARED, declared)} if declared else set())
        check = OutputCheck(o["check"])
        if (check, o["reason"]) not in allowed:
            return f"test_data: {o['file']} is checked as {check!r}, not what the record " \
                   f"and model.onnx give"
    return None


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
            check, reason = OutputCheck.RANDOM, random_reason(random[name])
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
