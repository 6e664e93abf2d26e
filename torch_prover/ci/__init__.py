"""CI's languages: a batch report as GitHub workflow annotations, a step summary and JUnit
XML (``outcomes`` enumerates the tests once, the other modules render them), and the
evidence tree as ONNX backend tests (``node_tests``), runnable under pytest in any ONNX
backend (``backend_test``). docs/ci.md is the user's side."""
from .backend_suite import backend_test

__all__ = ["backend_test"]
