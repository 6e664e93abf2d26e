"""Which node stands for which schema version, and where it runs (docs/versions.md).

``runtimes``: which runtime implements which schema version (data, each entry tested);
``next_opset``: ops newer than the exporter, emitted in a private domain and raised after
export, and a variant relabelled to an opset no exporter produces; ``adapters``: a
relabelled node brought to an older version's signature, only where both compute the same
(the facts in ``adapter_table``, the rules that need the whole node in
``adapter_specials``); ``fidelity``: a node checked against version V itself;
``float32_copy``: a float32 copy of a model where V's only faithful runtime lacks the
float64 (or float16) kernel.

May import: the lowest layers (errors, vocab, case), and of the engine only
``attribution.mapping``'s graph walk (``subgraphs``: the one place that knows a graph
attribute is ``g`` or ``graphs``) and ``attribution.graph_values`` (a Constant's value and a
graph's inferred shapes, read one way for ModelView, the adapters and fidelity). Nothing of
the pipeline at engine/'s top
(tests/test_layout.py)."""
