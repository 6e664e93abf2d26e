"""torch_prover: prove ONNX operator differentiability tags with PyTorch autograd.

Library surface: ``prove(model, inputs, op=...)`` and ``prove_case(case)`` return a
``Proof`` that can be printed (``report.proof_text(proof.record())``), rendered and saved
(``evidence.write_proof``).

The names are imported on first use (PEP 562), not with the package: the console script
imports ``torch_prover.cli`` first, and a Ctrl-C during torch's 5-second import must reach
``cli.run``, which says "interrupted" in one line, not the interpreter's traceback.
"""
from __future__ import annotations

import importlib
import os
from typing import Any

from .version import __version__

# onnxruntime's telemetry writes a device id and a usage database (megabytes, over time)
# under $XDG_CACHE_HOME/Microsoft/DeveloperTools/ as soon as it is imported: torch-prover
# writes only its own files (docs/safety.md). A user who
# set the variable keeps their value.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

_WHERE = {"Bool": ".case", "Case": ".case", "Custom": ".case", "Expect": ".case",
          "Fixed": ".case", "Float": ".case", "Int": ".case", "Spec": ".case",
          "CaseError": ".errors", "Proof": ".engine.prove", "prove": ".engine.prove",
          "prove_case": ".engine.prove"}

__all__ = ["__version__", "Bool", "Case", "CaseError", "Custom", "Expect", "Fixed", "Float",
           "Int", "Spec", "Proof", "prove", "prove_case"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'torch_prover' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
