"""The catalogue's checks on any list of cases (tests/test_catalogue.py runs them on the
whole catalogue; a completed ``new-case`` scaffold must pass the same ones)."""
from __future__ import annotations

from typing import Callable, Sequence

from torch_prover.batch.versions import schema_versions
from torch_prover.case import Case
from torch_prover.engine.prove import Proof, expected_verdict
from torch_prover.tags.schema import schema_tags


def _describe(case, p):
    return (f"{p.io} {p.index} ({p.name}): got {p.verdict}, expected "
            f"{expected_verdict(case, p)} [evidence {p.evidence}, tag {p.tag}, autograd "
            f"{p.autograd.outcome}, numeric {p.numeric.outcome}] - {p.reason}")


def verdict_problems(case: Case, proof: Proof) -> list[str]:
    """Why the case's proof is not what the case declares ([] when it is): invalid, a
    verdict other than declared (agree / proposed by default), an ``expect`` key naming no
    parameter of the node."""
    if proof.invalid is not None:
        return [f"invalid: {proof.invalid}"]
    found = [_describe(case, p) for p in proof.unexpected]
    declared = {f"{p.io} {p.index}" for p in proof.parameters}
    # or of an older version its variants prove (BatchNormalization-9's saved_mean)
    first, last = case.opsets or (7, proof.opset)
    for s in schema_versions(case.op) if case.domain == "" else ():
        if s.last >= first and s.first <= last:
            older = schema_tags(case.op, s.first, case.domain)
            declared |= {f"{f.io} {f.position}" for f in older.inputs + older.outputs}
    stray = set(case.expect) - declared
    if stray:
        found.append(f"expect keys {stray} name no parameter of the node")
    return found


def unexplained_parameters(cases: Sequence[Case], proof_of: Callable[[str], Proof]
                           ) -> list[str]:
    """Formal parameters of the cases' ops that no case decides and none explains: across
    an op's cases each needs deciding evidence, or a case saying why none can exercise it."""
    gaps = []
    by_op: dict[str, list[Case]] = {}
    for c in cases:
        by_op.setdefault(c.op, []).append(c)
    for op, mine in sorted(by_op.items()):
        decided, explained = set(), set()
        for c in mine:
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
        tags = schema_tags(op, proof_of(mine[0].name).opset, mine[0].domain)
        for f in tags.inputs + tags.outputs:
            if (f.io, f.name) not in decided | explained:
                gaps.append(f"{op} {f.io} {f.position} ({f.name})")
    return gaps
