"""``node-tests --run``: the written tree run as ONNX's runner runs a model test.

The tests come from ONNX's own loader (``load_model_tests(data_dir=OUT, kind=KIND)``),
and each is run the way ``onnx.backend.test.runner.Runner`` runs one: the backend
prepares ``model.onnx`` on the CPU, ``test_data_set_*/input_<i>.pb`` are counted by glob
and fed in graph-input order, and the outputs are compared with
``Runner.assert_similar_outputs`` at the loader's tolerances (ONNX's defaults, rtol 1e-3
and atol 1e-7). The kind ``onnxruntime`` runs in ``onnxruntime.backend``; the kind
``onnx-reference`` in ``ReferenceBackend``, ``onnx.reference.ReferenceEvaluator`` behind
ONNX's backend interface -- the runtime those directories' records name. A backend that
skips a test (``unittest.SkipTest``: an opset onnxruntime does not support) fails it
here: the record said that runtime reproduced it.
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import describe, first_line
from ..output.evidence_data import load_pb


@dataclass(frozen=True)
class Ran:
    name: str
    kind: str
    passed: bool
    detail: str   # empty when passed: the first line of what failed


def _reference_backend():
    """``onnx.reference`` behind ``onnx.backend.base.Backend`` (made on first use: onnx is
    imported only when a run is asked for)."""
    from onnx.backend.base import Backend, BackendRep
    from onnx.reference import ReferenceEvaluator

    class ReferenceRep(BackendRep):
        def __init__(self, model):
            self.evaluator = ReferenceEvaluator(model)
            self.names = [i.name for i in model.graph.input]

        def run(self, inputs: Any, **kwargs: Any):
            return self.evaluator.run(None, dict(zip(self.names, inputs)))

    class ReferenceBackend(Backend):
        @classmethod
        def prepare(cls, model, device: str = "CPU", **kwargs: Any):
            return ReferenceRep(model)

        @classmethod
        def supports_device(cls, device: str) -> bool:
            return device == "CPU"

    return ReferenceBackend


def backend_for(kind: str):
    """The backend that runs tests of ``kind`` (a module or class with ONNX's interface)."""
    if kind == "onnxruntime":
        import warnings
        with warnings.catch_warnings():   # onnxruntime.backend reads onnx.version on import
            warnings.filterwarnings("ignore", "onnx.version is deprecated", DeprecationWarning)
            import onnxruntime.backend
        return onnxruntime.backend
    return _reference_backend()


def run_case(case: Any, backend: Any) -> str:
    """Run one loaded test case as ONNX's runner does; '' when it passes."""
    import unittest

    import onnx
    from onnx.backend.test.runner import Runner
    model_dir = str(case.model_dir)
    model = onnx.load(os.path.join(model_dir, "model.onnx"))
    options = {"log_severity_level": 3} if backend.__name__ == "onnxruntime.backend" else {}
    try:
        prepared = backend.prepare(model, "CPU", **options)
        for data_dir in sorted(glob.glob(os.path.join(model_dir, "test_data_set*"))):
            n_in = len(glob.glob(os.path.join(data_dir, "input_*.pb")))
            n_out = len(glob.glob(os.path.join(data_dir, "output_*.pb")))
            inputs = [load_pb(os.path.join(data_dir, f"input_{i}.pb")) for i in range(n_in)]
            refs = [load_pb(os.path.join(data_dir, f"output_{i}.pb")) for i in range(n_out)]
            outputs = list(prepared.run(inputs))
            Runner.assert_similar_outputs(refs, outputs, rtol=case.rtol, atol=case.atol,
                                          model_dir=model_dir)
    except unittest.SkipTest as exc:
        return f"the backend skipped it: {first_line(exc)}"
    except AssertionError as exc:
        lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
        return "outputs differ: " + " ".join(lines[:4])[:400]
    except Exception as exc:   # the backend refused or crashed on the model
        return describe(exc)[:400]
    return ""


def run_tree(out: Path, kinds: list[str]) -> list[Ran]:
    """Every test of ``kinds`` under ``out``, loaded by ONNX's loader, run in its backend."""
    from onnx.backend.test.loader import load_model_tests
    found = []
    for kind in kinds:
        backend = backend_for(kind)
        for case in sorted(load_model_tests(data_dir=str(out), kind=kind), key=lambda c: c.name):
            detail = run_case(case, backend)
            found.append(Ran(case.name, kind, not detail, detail))
    return found
