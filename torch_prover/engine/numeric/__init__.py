"""The numeric witness: what the exported ONNX model computes, measured (docs/design.md §1,
stage 4).

``numeric``: the whole model's forward and VJP checks against PyTorch (the record's
``numeric``), the runtime that runs them, and the steps and tolerances per dtype;
``node_witness``: the node's own derivative, ``witness()`` = ``isolate`` (the target node cut
out, every input lifted) + ``measure`` (its finite differences, point by point);
``precision``: the precision a runtime really computed in, which the steps and tolerances
follow; ``redraw``: a parameter flat at the points given, measured again in float64 and at
re-drawn points before a zero counts (``run`` and case-free verdicts alike).

May import: the lowest layers; of the engine, ``versions.runtimes`` and
``versions.float32_copy`` (a number counts for schema version V only where a runtime that
implements V computed it, a float32 copy where that runtime lacks the float64 kernel) and
``attribution.mapping``'s graph facts (``subgraph_names``, ``is_float_dtype``: a node's
captured values and its gradient-carrying types, read as attribution reads them). Nothing
of the pipeline at engine/'s top (tests/test_layout.py)."""
