#!/usr/bin/env python
"""Does verify-all decide the same cells, with the same answers, without TorchScript?

    python scripts/compare_exporters.py [--ops A,B] [--jobs 2]
    python scripts/compare_exporters.py --reports WITH.json WITHOUT.json

Runs ``verify-all --versions all`` twice, cold (no cache, no evidence written), with the
TorchScript exporter and with ``--no-torchscript``, times both, and prints the comparison
of their versions tables (``torch_prover/batch/exporter_compare.py``): cells each mode
decides, same and different answers, and why a cell is undecided without TorchScript.
``--reports`` compares two reports already made instead. Exit 0 when every cell the
default run decides is decided the same way without TorchScript, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from torch_prover.batch.exporter_compare import compare


def _run(flags: list[str], report: Path, ops: str | None, jobs: int) -> float:
    cmd = [sys.executable, "-m", "torch_prover", "verify-all", "--versions", "all", "--no-write",
           "--no-cache", "--jobs", str(jobs), "--format", "json", "--report", str(report),
           *flags, *(["--ops", ops] if ops else [])]
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", help="only these ops (comma-separated)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--reports", nargs=2, metavar=("WITH", "WITHOUT"),
                    help="compare two --versions JSON reports instead of running")
    args = ap.parse_args()
    if args.reports:
        with_ts, without = (json.loads(Path(p).read_text()) for p in args.reports)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            a, b = Path(tmp) / "with.json", Path(tmp) / "without.json"
            ta = _run([], a, args.ops, args.jobs)
            tb = _run(["--no-torchscript"], b, args.ops, args.jobs)
            print(f"cold wall time, all versions: {ta:.1f} s with TorchScript, {tb:.1f} s "
                  f"without")
            with_ts, without = json.loads(a.read_text()), json.loads(b.read_text())
    print(f"left out without TorchScript: "
          f"{', '.join(without['exporters']['left_out']) or 'none'}")
    result = compare(with_ts, without)
    print("\n".join(result.lines()))
    return 0 if not result.different and not result.undecided else 1


if __name__ == "__main__":
    sys.exit(main())
