"""The whole catalogue: every case valid, unambiguous, with the verdicts it declares.

Disagreements are declared in the case with their reason (``expect=``); the engine has
no per-op exceptions. ``pytest -k cumsum`` selects one op's cases.
"""
import pytest

from torch_prover.engine import fast_export
from torch_prover.cases import all_cases, all_missing
from torch_prover.output.coverage import coverage, summary
from catalogue_checks import unexplained_parameters, verdict_problems

CASES = all_cases()


@pytest.fixture(scope="module", autouse=True)
def _fast():
    fast_export.enable()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_verdicts_are_as_declared(case, proof_of):
    problems = verdict_problems(case, proof_of(case.name))
    assert not problems, "\n".join(problems)


def test_every_formal_parameter_is_exercised_or_explained(proof_of):
    """Across an op's cases, each formal parameter has deciding evidence, or a case says why
    none can exercise it."""
    gaps = unexplained_parameters(CASES, proof_of)
    assert not gaps, "parameters neither exercised nor explained:\n" + "\n".join(gaps)


def test_coverage_lists_every_op_with_a_reason():
    entries = coverage()
    s = summary(entries)
    assert s["ops"] == 203
    for e in entries:
        assert e["status"] == "covered" or e["reason"], e
    assert set(all_missing()).isdisjoint({c.op for c in CASES}), \
        "an op is both covered and listed as missing"
