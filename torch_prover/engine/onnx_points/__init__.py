"""ONNX's own node tests as witness points: the third numeric witness (docs/verdicts.md,
"ONNX's points").

ONNX requires every op to ship node tests (``onnx/backend/test/case/node/<op>.py``), inputs
its contributors chose at the opset the op was added at. ``source`` reads them (from the
installed onnx, or from a checkout's committed ``onnx/backend/test/data/node``), ``store``
keeps the installed onnx's collection (collecting builds every case in Python),
``witness`` checks that the runtime reproduces a test's expected outputs before measuring
the node there (``engine/node_witness.witness``), and ``judge`` says per decided cell
whether ONNX's points agree, contradict, did not exercise it, or were not available.
"""
