"""The whole catalogue: every case valid, unambiguous, with the verdicts it declares.

Disagreements are declared in the case with their reason (``expect=``); the engine has
no per-op exceptions. ``pytest -k cumsum`` selects one op's cases.
"""
import pytest

from torch_prover.engine import fast_export
from torch_prover.cases import all_cases, all_missing
from torch_prover.output.coverage import coverage, summary
from torch_prover.tags.schema import schema_tags
from torch_prover.engine.prove import expected_verdict
from torch_prover.batch.versions import schema_versions

CASES = all_cases()


@pytest.fixture(scope="module", autouse=True)
def _fast():
    fast_export.enable()


def _describe(case, p):
    return (f"{p.io} {p.index} ({p.name}): got {p.verdict}, expected "
            f"{expected_verdict(case, p)} [evidence {p.evidence}, tag {p.tag}, autograd "
            f"{p.autograd.outcome}, numeric {p.numeric.outcome}] - {p.reason}")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_verdicts_are_as_declared(case, proof_of):
    proof = proof_of(case.name)
    assert proof.invalid is None, proof.invalid
    assert not proof.unexpected, "\n".join(_describe(case, p) for p in proof.unexpected)
    declared = {f"{p.io} {p.index}" for p in proof.parameters}
    # or of an older version its variants prove (BatchNormalization-9's saved_mean)
    first, last = case.opsets or (7, proof.opset)
    for s in schema_versions(case.op) if case.domain == "" else ():
        if s.last >= first and s.first <= last:
            older = schema_tags(case.op, s.first, case.domain)
            declared |= {f"{f.io} {f.position}" for f in older.inputs + older.outputs}
    stray = set(case.expect) - declared
    assert not stray, f"expect keys {stray} name no parameter of the node"


def test_every_formal_parameter_is_exercised_or_explained(proof_of):
    """Across an op's cases, each formal parameter has deciding evidence, or a case says why
    none can exercise it."""
    gaps = []
    by_op = {}
    for c in CASES:
        by_op.setdefault(c.op, []).append(c)
    for op, cases in sorted(by_op.items()):
        decided, explained = set(), set()
        for c in cases:
            proof = proof_of(c.name)
            for p in proof.parameters:
                if p.supports is not None:
                    decided.add((p.io, p.name))
            tags = schema_tags(op, proof.opset, c.domain)
            declared = list(c.unexercised) + [k for k, e in c.expect.items()
                                              if e.verdict == "inconclusive"] + [
                k for k, a in c.conventions.items() if a.rule.implies is None]   # sampling
            for key in declared:
                io, idx = key.split()
                f = tags.formal(io, int(idx))
                if f is not None:
                    explained.add((io, f.name))
        tags = schema_tags(op, proof_of(cases[0].name).opset, cases[0].domain)
        for f in tags.inputs + tags.outputs:
            if (f.io, f.name) not in decided | explained:
                gaps.append(f"{op} {f.io} {f.position} ({f.name})")
    assert not gaps, "parameters neither exercised nor explained:\n" + "\n".join(gaps)


def test_coverage_lists_every_op_with_a_reason():
    entries = coverage()
    s = summary(entries)
    assert s["ops"] == 203
    for e in entries:
        assert e["status"] == "covered" or e["reason"], e
    assert set(all_missing()).isdisjoint({c.op for c in CASES}), \
        "an op is both covered and listed as missing"
