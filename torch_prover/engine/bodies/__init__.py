"""The function-body witness: an op's ONNX function body, the primitive ops' tags pushed
through it (docs/verdicts.md, "The third witness").

``function_body``: the body built for the node and what it says per parameter;
``body_paths``: where a gradient can go in it (tagged steps, types, If/Loop/Scan entered);
``body_survey``: every schema version with a body against its tags, without a case
(``scripts/function_bodies.py``).

May import: the lowest layers and ``tags`` (the primitive ops' tags); nothing else of the
engine (tests/test_layout.py)."""
