"""PyTorch gradient conventions in a script's module: where its gradient differs from the op's
derivative on purpose.

Why: ``nn.Embedding(padding_idx=0)`` zeroes the padding row's gradient by design (the row is
a fixed pad vector), ``scale_grad_by_freq=True`` divides each row's gradient by how often
its index occurs in the batch, and ``max_norm`` renormalizes the looked-up rows in place,
out of autograd's sight. Gather (the ONNX op) has none of these: its derivative in the
table is 1 at every looked-up row. So PyTorch's VJP and the ONNX model's finite difference
differ, and without a name the run reads a convention as a failed check ("rel err 0.4").
Read from the module's ``torch.export`` graph (``aten.embedding``'s own arguments,
``aten.embedding_renorm_``), each is named in the VJP detail, the verdict's reason and the
script record, and the verdict rests on what both witnesses still decide (both see a
gradient in the table: differentiable).
"""
from __future__ import annotations

from typing import Any


def _param(node: Any) -> str | None:
    """The parameter an FX argument reads (``get_attr`` in an unlifted module), through a
    ``detach`` (what ``embedding_renorm_`` is given)."""
    while getattr(node, "op", None) == "call_function" and node.args and \
            "detach" in str(node.target):
        node = node.args[0]
    return str(node.target) if getattr(node, "op", None) == "get_attr" else None


def gradient_conventions(graph_module: Any) -> dict[str, str]:
    """Parameter name -> the conventions its embedding lookups use, in words."""
    found: dict[str, list[str]] = {}
    for node in getattr(graph_module, "graph", graph_module).nodes:
        if node.op != "call_function":
            continue
        name = str(getattr(node.target, "_schema", None) and node.target._schema.name or "")
        args = list(node.args)
        if name == "aten::embedding" and args:
            weight = _param(args[0])
            padding = args[2] if len(args) > 2 else node.kwargs.get("padding_idx", -1)
            by_freq = args[3] if len(args) > 3 else node.kwargs.get("scale_grad_by_freq", False)
            if weight and isinstance(padding, int) and padding >= 0:
                found.setdefault(weight, []).append(
                    f"padding_idx={padding} (nn.Embedding zeroes the padding row's gradient on "
                    "purpose; Gather's derivative there is 1)")
            if weight and by_freq:
                found.setdefault(weight, []).append(
                    "scale_grad_by_freq=True (each row's gradient is divided by how often its "
                    "index occurs in the batch)")
        elif name == "aten::embedding_renorm_" and args:
            weight = _param(args[0])
            if weight:
                found.setdefault(weight, []).append(
                    f"max_norm={args[2] if len(args) > 2 else '?'} (rows are renormalized in "
                    "place, outside autograd)")
    return {k: "; ".join(dict.fromkeys(v)) for k, v in found.items()}
