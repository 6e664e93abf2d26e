"""torch_prover: prove ONNX operator differentiability tags with PyTorch autograd.

Library surface: ``prove(model, inputs, op=...)`` and ``prove_case(case)`` return a
``Proof`` that can be printed (``report.proof_text(proof.record())``), rendered and saved
(``evidence.write_proof``).
"""
from .case import B, Case, Custom, Expect, F, I, Spec, T
from .errors import CaseError
from .engine.prove import Proof, prove, prove_case

__all__ = ["B", "Case", "CaseError", "Custom", "Expect", "F", "I", "Spec", "T",
           "Proof", "prove", "prove_case"]
