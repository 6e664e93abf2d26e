#!/usr/bin/env python
"""Write the shipped differentiability table, torch_prover/data/table.json, from the
committed evidence under models/ (versions.json, index.json, the deciding cases' proof.json).

    python scripts/table_data.py            # regenerate it (after verify-all --versions all)
    python scripts/table_data.py --check    # exit 1 when it has drifted from models/

The date in its provenance is the evidence's: the committer date (UTC) of the last commit
that changed models/versions.json or an other-domain case's directory, so a rebuild of the same checkout gives the same bytes
(``SOURCE_DATE_EPOCH`` stands in where there is no git history). tests/test_table.py fails
when the shipped file and models/ disagree (docs/table.md).
"""
from __future__ import annotations

import datetime
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
TARGET = ROOT.joinpath("torch_prover", "data", "table.json")


def evidence_date(models: Path = MODELS) -> str:
    """The day the evidence the table reads (models/versions.json, the other domains' case
    directories) was last committed (UTC), or SOURCE_DATE_EPOCH's."""
    from torch_prover.cases.other_domains import DOMAIN_CASES
    paths = ["versions.json"] + sorted({f"{c.op}/{c.name}" for c in DOMAIN_CASES})
    try:
        out = subprocess.run(
            ["git", "log", "-1", "--format=%cd", "--date=format-local:%Y-%m-%d", "--",
             *paths], cwd=models, capture_output=True, text=True, check=True,
            env={**os.environ, "TZ": "UTC"}).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        out = ""
    if out:
        return out
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch is None:
        sys.exit("table_data.py: no git history of models/versions.json and no "
                 "SOURCE_DATE_EPOCH: the table's date must be the evidence's")
    return datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).strftime("%Y-%m-%d")


def generate(models: Path = MODELS) -> str:
    """The table's text: models/' evidence, and the other domains by the installed onnx's
    schemas -- which must be the evidence's onnx (index.json), or they would mix."""
    import json

    import onnx
    from torch_prover.batch.cache import engine_digest
    from torch_prover.batch.domain_versions import domain_ops, other_domains
    from torch_prover.output import table
    from torch_prover.version import __version__
    made_with = json.loads((models / "index.json").read_text(encoding="utf-8"))["versions"]["onnx"]
    if made_with != onnx.__version__:
        sys.exit(f"table_data.py: the evidence was made with onnx {made_with}, this is onnx "
                 f"{onnx.__version__}: run it where the evidence was made (constraints.txt)")
    from torch_prover.cases.other_domains import DOMAIN_CASES
    records = [json.loads((models / c.op / c.name / "proof.json").read_text(encoding="utf-8"))
               for c in DOMAIN_CASES if (models / c.op / c.name / "proof.json").is_file()]
    # Gradient-1: no runtime runs the node, so its records are measured here, at ONNX's
    # model tests of it (batch/gradient_witness.py), not read from a case's proof.json
    from torch_prover.batch.gradient_witness import records as gradient_records
    derived = gradient_records()
    ops = [op for domain in other_domains() for op in domain_ops(domain, records + derived)]
    return table.dumps(table.build(models, evidence_date(models),
                                   {"version": __version__, "source": engine_digest()}, ops,
                                   derived))


def main(argv: list[str]) -> int:
    text = generate()
    if argv[1:] == ["--check"]:
        from torch_prover.output.table import drift
        found = drift(TARGET.read_text(encoding="utf-8"), text)
        for line in found:
            print(f"{TARGET.relative_to(ROOT)}: {line}", file=sys.stderr)
        return 1 if found else 0
    if argv[1:]:
        sys.exit(__doc__)
    TARGET.parent.mkdir(exist_ok=True)
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET.relative_to(ROOT)} ({len(text.encode()):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
