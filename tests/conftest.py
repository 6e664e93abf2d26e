"""Shared fixtures: proofs are cached per session because each costs an export."""
from __future__ import annotations

import functools

import pytest

from torch_prover.cases import all_cases
from torch_prover.prove import Proof, prove_case


@functools.lru_cache(maxsize=None)
def _proof(name: str, numeric: bool = True) -> Proof:
    case = next(c for c in all_cases() if c.name == name)
    return prove_case(case, numeric=numeric)


@pytest.fixture(scope="session")
def proof_of():
    """proof_of("reshape_basic") -> Proof (cached for the session)."""
    return _proof


def param(proof: Proof, io: str, index: int):
    return next(p for p in proof.parameters if p.io == io and p.index == index)
