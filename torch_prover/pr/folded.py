"""Ops the script's module computes that its exported graph lacks: folded or rewritten.

Why: a proof script proves an op only if the exported graph still has it. The exporter
may fold an op that reads parameters only into a constant (``x * softplus(self.raw)``
becomes ``Mul(x, constant)``), or write it with other ops (Gelu below opset 20). The proof
of what is left is still right, but it is not a proof of the op the author meant, and
nothing else would say so. The module the prover holds (:mod:`module`, a
``torch.export`` program) lists the ATen ops it calls; each with an ONNX op of exactly
its meaning (:data:`ONNX_OF`) that the graph lacks is named, with how to keep it.

Only the ExportedProgram form is read: a TorchScript-traced module (the fallback) is not
compared, and the record says nothing then (``folded`` empty, ``compared`` false).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import onnx

from ..compat import StrEnum

ONNX_OF: dict[str, str] = {
    "abs": "Abs", "acos": "Acos", "acosh": "Acosh", "asin": "Asin", "asinh": "Asinh",
    "atan": "Atan", "atanh": "Atanh", "ceil": "Ceil", "cos": "Cos", "cosh": "Cosh",
    "erf": "Erf", "exp": "Exp", "floor": "Floor", "log": "Log", "neg": "Neg",
    "reciprocal": "Reciprocal", "round": "Round", "sigmoid": "Sigmoid", "sign": "Sign",
    "sin": "Sin", "sinh": "Sinh", "sqrt": "Sqrt", "tan": "Tan", "tanh": "Tanh",
    "relu": "Relu", "elu": "Elu", "selu": "Selu", "celu": "Celu", "gelu": "Gelu",
    "softplus": "Softplus", "softsign": "Softsign", "hardsigmoid": "HardSigmoid",
    "hardswish": "HardSwish", "mish": "Mish", "leaky_relu": "LeakyRelu",
    "matmul": "MatMul", "mul": "Mul", "div": "Div", "add": "Add", "sub": "Sub",
    "einsum": "Einsum", "affine_grid_generator": "AffineGrid",
}
"""ATen op -> the ai.onnx op computing exactly the same function. Only exact matches: an
ATen op the exporter legitimately writes as another ONNX op (``mm`` as Gemm, ``sum`` as
ReduceSum, ``clamp`` as Max/Min) is left out, so a name here never misreports."""


class Lost(StrEnum):
    FOLDED = "folded"           # computed from parameters and constants only: a constant now
    REWRITTEN = "rewritten"     # computed on the inputs, written with other ops


@dataclass(frozen=True)
class MissingOp:
    op: str                     # the ai.onnx op
    aten: str                   # what the module called (aten.softplus)
    lost: Lost
    keep: str                   # how to keep it, one line

    def line(self) -> str:
        what = ("folded into a constant (it reads parameters and constants only)"
                if self.lost is Lost.FOLDED else "written with other ops by the exporter")
        return (f"the module computes {self.op} ({self.aten}), which the exported graph "
                f"lacks: {what}; to keep it: {self.keep}")


def _reads_inputs(node: Any) -> bool:
    """Does this FX node depend on a placeholder (the module's inputs)?"""
    seen, stack = set(), [node]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n.op == "placeholder":
            return True
        stack.extend(n.all_input_nodes)
    return False


def called(graph_module: Any) -> list[tuple[str, bool]]:
    """(ATen op name, reads the inputs) of every ATen call in the module's graph."""
    import torch
    found = []
    for node in graph_module.graph.nodes:
        target = node.target
        if node.op == "call_function" and isinstance(target, torch._ops.OpOverload):
            name = target._schema.name
            if name.startswith("aten::"):
                found.append((name.removeprefix("aten::"), _reads_inputs(node)))
    return found


def _first_version(op: str) -> int | None:
    """The first opset at which ai.onnx has ``op``."""
    try:
        return min(s.since_version for s in onnx.defs.get_all_schemas_with_history()
                   if s.name == op and s.domain in ("", "ai.onnx"))
    except ValueError:
        return None


def missing_ops(graph_module: Any, model: onnx.ModelProto, exporter: str,
                opset: int) -> tuple[MissingOp, ...]:
    """The ops ``graph_module`` (the script's module as a torch.export graph) computes
    whose ai.onnx op ``model`` has no node of, each once, in call order."""
    present = {n.op_type for n in model.graph.node if n.domain in ("", "ai.onnx")}
    keep_folding = "optimize=False" if exporter == "dynamo" else "do_constant_folding=False"
    out: dict[str, MissingOp] = {}
    for aten, reads in called(graph_module):
        op = ONNX_OF.get(aten)
        if op is None or op in present or op in out:
            continue
        if not reads:
            keep = (f"export with {keep_folding}, or make what it reads an input of the "
                    "module instead of a parameter")
            lost = Lost.FOLDED
        else:
            first = _first_version(op)
            keep = (f"ai.onnx has {op} from opset {first}; the model is at opset {opset}: "
                    f"export with opset_version={first} or later" if first and first > opset
                    else "this exporter writes it with other ops; a proof of it needs a "
                         "model that keeps it (another exporter or opset)")
            lost = Lost.REWRITTEN
        out[op] = MissingOp(op, f"aten.{aten}", lost, keep)
    return tuple(out.values())


def module_ops(graph_module: Any) -> list[str]:
    """The ai.onnx ops (:data:`ONNX_OF`: exact meanings only) of the ATen calls the module
    makes on its inputs, once each, in call order: what the script computes, by name."""
    return list(dict.fromkeys(ONNX_OF[aten] for aten, reads in called(graph_module)
                              if reads and aten in ONNX_OF))
