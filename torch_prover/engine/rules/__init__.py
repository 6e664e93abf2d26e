"""The rules that turn witnesses into a verdict: pure, no witness run, no I/O.

``verdict``: the verdict table (docs/design.md §1.2, docs/verdicts.md): what each witness
outcome says, which row decides, and a declared convention over it; ``by_type``: when the
schema's types alone decide a parameter, with or without a case.

May import: the lowest layers (vocab, conventions) and ``tags``; nothing else of the engine,
so every reader of a verdict -- the pipeline, ONNX's points, the batch's per-version table
-- applies the same table (tests/test_layout.py)."""
