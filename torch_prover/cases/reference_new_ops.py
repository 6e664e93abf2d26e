"""Ops new in opsets 26-28: CumProd, BitCast (26), LinearAttention, CausalConvWithState (27),
SwiGLU (28). No case can export them with torch 2.13; measured, not assumed:

torch 2.13's dynamo exporter always builds the model at opset 18 (torchlib's opset), then
converts it to the asked opset. onnxscript's converter handles 18..25; for 26-28 it falls
back to ``onnx.version_converter`` (the C API), which walks the opsets one by one and
needs an adapter for every node whose op has a schema at the next version. For an op new
at version V it has none ("No Adapter From Version $V-1 for CumProd"); the exporter logs
that as a warning and keeps the unconverted model, which declares opset 18. So a
reference op emitting the node at V (``translation_at(V)``, or at any opset >= V) gives an
opset-18 model (export.py refuses it), and emitting it at V in a model asked for an
opset below V leaves a node onnx.checker rejects ("No Op registered for SwiGLU with
domain_version of 26"). Models without such an op do export at 26, 27 and 28 (Add;
Conv1d + CumSum + Relu: measured), so the fallback to 18 is specific to graphs holding a
node the C converter has no adapter for.

The runtimes are not the obstacle: a hand-built opset-26/27/28 model of each op passes
onnx.checker and runs in the onnx reference evaluator (CumProd also in onnxruntime 1.31).
"""

_HOW = "reference case with Case(opset=N), the node emitted at max(N, {v}): "
_TO_18 = ("at opset {targets} the model declares opset 18 (torch 2.13 builds at 18 and its "
          "fallback onnx.version_converter has no adapter for {op} at {v}: 'No Adapter From "
          "Version ${prev} for {op}', caught and ignored by the exporter)")
_BELOW = ("; at opset {below} the node stays in the model and onnx.checker rejects it ('No Op "
          "registered for {op} with domain_version of {first}')")


def _reason(op: str, v: int) -> str:
    targets = "/".join(str(t) for t in range(v, 29))
    text = _HOW.format(op=op, v=v) + _TO_18.format(targets=targets, op=op, v=v, prev=v - 1)
    if v > 26:
        below = "/".join(str(t) for t in range(26, v))
        text += _BELOW.format(below=below, op=op, first=26)
    return text


MISSING = {
    op: ("exporter cannot produce it", _reason(op, since))
    for op, since in (("CumProd", 26), ("BitCast", 26), ("LinearAttention", 27),
                      ("CausalConvWithState", 27), ("SwiGLU", 28))
}
