"""torch_prover: prove ONNX operator differentiability tags with PyTorch autograd.

Library surface: ``prove(model, inputs, op=...)`` and ``prove_case(case)`` return a
``Proof`` that can be printed (``report.proof_text(proof.record())``), rendered and saved
(``evidence.write_proof``).
"""
from .version import __version__
from .case import Bool, Case, Custom, Expect, Float, Int, Spec, Fixed
from .errors import CaseError
from .engine.prove import Proof, prove, prove_case

__all__ = ["__version__", "Bool", "Case", "CaseError", "Custom", "Expect", "Fixed", "Float", "Int", "Spec",
           "Proof", "prove", "prove_case"]
