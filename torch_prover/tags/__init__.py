"""The tags under test: ``schema`` reads them from onnx.defs, ``operators_md`` from an
Operators.md (``--tags-from``)."""
