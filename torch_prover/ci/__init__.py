"""CI's languages: a batch report as GitHub workflow annotations, a step summary and JUnit
XML (``outcomes`` enumerates the tests once, the other modules render them), and the
evidence tree as ONNX backend tests (``node_tests``). docs/ci.md is the user's side."""
