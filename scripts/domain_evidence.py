#!/usr/bin/env python
"""Prove the other domains' reference cases (``torch_prover/cases/other_domains.py``:
ai.onnx.ml, ai.onnx.preview.training, ai.onnx.preview) and write their evidence under
models/<Op>/<case>/, as verify-all writes the catalogue's (through ``output.evidence``, the
only writer; a rewrite that changes nothing keeps the files).

    python scripts/domain_evidence.py      # then: python scripts/table_data.py

verify-all's plan and index are ai.onnx's, so it does not prove these cases; it keeps
their directories (batch/verify.py). tests/test_domain_cases.py re-proves each one and
compares it with the committed files.
"""
from __future__ import annotations

import sys
from pathlib import Path

MODELS = Path(__file__).resolve().parent.parent / "models"


def main() -> int:
    from torch_prover.cases.other_domains import DOMAIN_CASES
    from torch_prover.engine.prove import prove_case
    from torch_prover.output import evidence
    failed = 0
    for case in DOMAIN_CASES:
        proof = prove_case(case)
        status = proof.record()["status"]
        print(f"{case.op}/{case.name}: {status}")
        failed += status != "proved"
        evidence.write_proof(MODELS, proof)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
