"""Attribution: which case tensor became each input and output of the target node
(docs/design.md §1.3, stage 3).

``mapping``: ``map_node``, traced by data dependency through value-preserving glue, an
ambiguous attribution made a finding; and the graph facts other packages read the same way
(``subgraphs``, ``subgraph_names``, ``is_float_dtype``); ``guard``: an exporter's Where guard
around the node (did a probe point take the bypass?); ``folding``: which module parameter a
folded constant holds (the report names it); ``graph_values``: what a graph states
without a run (a Constant's value in any of its attributes, inferred shapes), the one reader
for folding here and for the version machinery.

May import: the lowest layers only; nothing else of the engine (tests/test_layout.py)."""
