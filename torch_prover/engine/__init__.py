"""One proof, stage by stage (docs/design.md §1). ``prove.py`` runs the stages in order,
each passing frozen dataclasses one way:

1. autograd probe -- ``probe`` (``pytorch_source``: whose autograd the witness is, and what
   derivatives.yaml says);
2. export -- ``export`` at the asked opset, refused when it is not (``exporters``: whether
   this torch has the TorchScript exporter; ``fast_export``: the exporter's tables
   memoised), an op newer than the exporter raised by ``versions/``;
3. attribution -- ``attribution/``: which case tensor is which node input and output;
4. the numeric witness -- ``numeric/``: the whole model's checks and the node's own
   derivative, run where ``versions/`` says the schema version runs; the function-body
   witness -- ``bodies/``;
5. the verdict -- ``witnesses``: the witnesses per ONNX parameter, scoped by the
   attribution, decided by ``rules/`` (the verdict table and the by-type rule);

then ``record``: the Proof and its JSON record (``test_data``: how its evidence re-runs);
``recheck``: a record read back re-derived before it is trusted.

``onnx_points/`` is verify-all's third numeric witness: ONNX's own node tests as points.

The modules at this top are the pipeline; each package is a whole the pipeline calls into
and imports nothing of the pipeline, and a package imports another only through the
interfaces its docstring names (tests/test_layout.py checks both). The engine imports
nothing above itself (no catalogue, batch, output, PR workflow or CLI)."""
