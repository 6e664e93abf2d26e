"""ONNX's own node tests as witness points: the third numeric witness (docs/verdicts.md,
"ONNX's points").

ONNX requires every op to ship node tests (``onnx/backend/test/case/node/<op>.py``), inputs
its contributors chose at the opset the op was added at. ``source`` reads them (from the
installed onnx, or from a checkout's committed ``onnx/backend/test/data/node``;
``generators`` makes them from a PR checkout's own generators where it commits none, in a
child process, ``generator_child``), ``store``
keeps the installed onnx's collection (collecting builds every case in Python),
``witness`` checks that the runtime reproduces a test's expected outputs before measuring
the node there (``engine/numeric/node_witness.witness``), and ``judge`` says per decided cell
whether ONNX's points agree, contradict, did not exercise it, or were not available.

Used by verify-all (``batch/onnx_points.py``, ``batch/case_free.py``), not by one proof.
May import: the lowest layers and ``tags``; of the engine, ``numeric.node_witness`` and
``numeric.numeric`` (a test is measured by the catalogue's own node witness, in the runtime
it would choose), ``numeric.redraw`` (flat at a test's points, again in float64 and at re-drawn values),
``bodies.function_body`` (the body built for the test's node),
``versions.runtimes`` (the schema version in force at a test's opset) and ``rules.verdict``
(what an outcome says, by the catalogue's own table). Nothing of the pipeline at engine/'s
top (tests/test_layout.py).
"""
