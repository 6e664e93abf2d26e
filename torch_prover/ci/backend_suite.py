"""``torch_prover.ci.backend_test``: the evidence as a test class pytest collects.

ONNX's own way to run its backend tests under pytest is ``BackendTest(backend, __name__)``
and ``globals().update(backend_test.test_cases)``; pointing it at another data directory
takes its private ``_add_model_test``. This is the public path instead: a tree written by
``torch-prover node-tests MODELS -o OUT`` (``node_tests.py``) is loaded with ONNX's public
loader (``load_model_tests(data_dir=OUT, kind=KIND)``) and each test becomes one method of a
``unittest.TestCase`` subclass, run the way ONNX's ``Runner`` runs a model test
(``node_tests_run.run_case``: prepared on the CPU, inputs by glob, outputs compared with
``Runner.assert_similar_outputs``). A backend's skip fails the test, as in ``node-tests
--run``: the record says that runtime reproduced it. In a test module of any ONNX backend::

    import onnxruntime.backend
    from torch_prover.ci import backend_test

    TestEvidence = backend_test(onnxruntime.backend, "node-tests")   # pytest collects it

docs/ci.md, "Evidence as ONNX backend tests".
"""
from __future__ import annotations

import os
import unittest
from typing import Any

from ..errors import UsageError

KINDS = ("onnxruntime", "onnx-reference")
"""The loader kinds node-tests writes (``node_tests.KIND_OF``'s values)."""


def backend_test(backend: Any, data_dir: str | os.PathLike, kind: str = "onnxruntime",
                 name: str = "TestTorchProverEvidence") -> type[unittest.TestCase]:
    """A ``unittest.TestCase`` subclass named ``name`` with one ``test_<case>`` method per
    test of ``kind`` under ``data_dir`` (a node-tests tree), each run in ``backend`` (a
    module or class with ONNX's backend interface: ``prepare``). UsageError when the tree
    holds no test of that kind: a helper that collects nothing would pass silently."""
    from onnx.backend.test.loader import load_model_tests

    from .node_tests_run import run_case
    if kind not in KINDS:
        raise UsageError(f"backend_test: kind {kind!r}: node-tests writes "
                         f"{', '.join(KINDS)}")
    found = os.path.isdir(os.path.join(data_dir, kind))   # else the loader raises ValueError
    cases = sorted(load_model_tests(data_dir=str(data_dir), kind=kind) if found else [],
                   key=lambda c: c.name)
    if not cases:
        raise UsageError(f"backend_test: no {kind} test under {data_dir}; write them with "
                         f"`torch-prover node-tests MODELS -o {data_dir}`")

    def method(case: Any):
        def test(self: unittest.TestCase) -> None:
            detail = run_case(case, backend)
            if detail:
                self.fail(f"{case.name}: {detail}")
        test.__name__ = case.name
        test.__doc__ = f"{case.name} ({kind}): the evidence of {case.model_dir}"
        return test

    return type(name, (unittest.TestCase,), {c.name: method(c) for c in cases})
