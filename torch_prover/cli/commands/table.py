"""``torch-prover table``: the differentiability table shipped with this torch-prover
(docs/table.md), one row per (domain, op, version, io, index, name), as JSON Lines, CSV or
JSON; ``--op``, ``--domain``, ``--version`` select. It reads the shipped file and proves
nothing (no torch imported)."""
from __future__ import annotations

import argparse
import sys

from ...errors import EXIT_OK, UsageError

NAME = "table"


def _names(values: list[str] | None) -> list[str]:
    return [n.strip() for v in values or () for n in v.split(",") if n.strip()]


def add_parser(sub) -> None:
    t = sub.add_parser("table", help="print the differentiability table shipped with "
                                     "torch-prover: one row per parameter of every schema "
                                     "version (docs/table.md)")
    t.add_argument("--format", choices=("jsonl", "csv", "json"), default="jsonl",
                   help="jsonl: one JSON row a line (default); csv: a header and a line a "
                        "row; json: one document, its licence, provenance and rows")
    t.add_argument("--op", action="append", metavar="OP",
                   help="only this op's rows (repeat it, or comma-separate several)")
    t.add_argument("--domain", action="append", metavar="DOMAIN",
                   help="only this domain's rows (ai.onnx, ai.onnx.ml, ...; repeatable)")
    t.add_argument("--version", action="append", metavar="N",
                   help="only rows of schema version N (repeatable)")


def handle(args: argparse.Namespace) -> int:
    from ...output import table
    doc = table.load()
    rows = doc["rows"]
    ops = {r["op"].lower(): r["op"] for r in rows}
    wanted_ops = []
    for name in _names(args.op):
        if name.lower() not in ops:
            raise UsageError(f"--op {name}: the table has no such op ({len(ops)} ops; "
                             "`torch-prover table --format csv` lists them)")
        wanted_ops.append(ops[name.lower()])
    domains = sorted({r["domain"] for r in rows})
    wanted_domains = _names(args.domain)
    for name in wanted_domains:
        if name not in domains:
            raise UsageError(f"--domain {name}: the table's domains are {', '.join(domains)}")
    wanted_versions = []
    for name in _names(args.version):
        if not name.isdigit():
            raise UsageError(f"--version {name}: a schema version is a whole number (e.g. 13)")
        wanted_versions.append(int(name))
    chosen = table.select(rows, wanted_ops, wanted_domains, wanted_versions)
    if not chosen:
        asked = [f"--op {o}" for o in wanted_ops] + [f"--domain {d}" for d in wanted_domains]
        raise UsageError(f"no row matches {' '.join(asked + [f'--version {v}' for v in wanted_versions])}: "
                         "`torch-prover table --op OP --format csv` lists an op's versions")
    sys.stdout.write(table.render(doc, chosen, args.format))
    return EXIT_OK
