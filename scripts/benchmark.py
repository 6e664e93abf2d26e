#!/usr/bin/env python
"""Benchmark torch_prover's speed: the figures issue 5 asks for, printed, not asserted.

    python scripts/benchmark.py [--naive-sample 6] [--jobs 2]

1. cold `verify-all` over the full catalogue with numeric checks (empty cache, evidence
   to a temporary directory), in-process like the CLI: wall time, per-case median, peak
   RSS per worker;
2. warm rerun of the same command as a fresh `torch-prover verify-all` process;
3. `torch-prover prove Reshape` end to end as a fresh process;
4. the naive way -- one fresh Python process per case, as a hand-written proof script
   runs -- on a sample of cases, extrapolated to the catalogue, with the ratio.
5. `verify-all --versions all` (every ai.onnx schema version, issue 19): cold and warm,
   fresh processes, with the peak RSS of its workers, and cold with `--no-torchscript`;
   `--skip-versions` leaves it out.
Targets on a 2-core machine: cold <= 45 s, warm <= 5 s, prove Reshape <= 6 s, <= 600 MiB
per worker; all versions cold <= 3 min, warm <= 10 s.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def _timed(cmd: list[str], **kw) -> tuple[float, int]:
    t0 = time.perf_counter()
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw).returncode
    return time.perf_counter() - t0, rc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--naive-sample", type=int, default=6)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--skip-versions", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tp-bench-"))
    cache, out = work / "cache", work / "models"

    # 1. cold, in a fresh process so imports count as they do for a user
    cold, rc = _timed([str(BIN / "torch-prover"), "verify-all", "--jobs", str(args.jobs),
                       "--out", str(out), "--cache-dir", str(cache), "--format", "json",
                       "--report", str(work / "report.json")])
    import json
    rep = json.loads((work / "report.json").read_text())
    n_cases = rep["summary"]["cases"]
    # per-case figures: rerun the batch in-process without cache to read worker timings
    from torch_prover.batch.pool import BatchOptions, run_batch
    from torch_prover.cases import all_cases
    t0 = time.perf_counter()
    res = run_batch(list(all_cases()), BatchOptions(jobs=args.jobs, out=work / "m2"))
    inproc = time.perf_counter() - t0
    med = statistics.median(res.seconds.values())
    rss = max(res.peak_rss_mib.values())

    # 2. warm rerun, fresh process, same cache and evidence
    warm, _ = _timed([str(BIN / "torch-prover"), "verify-all", "--jobs", str(args.jobs),
                      "--out", str(out), "--cache-dir", str(cache)])
    # 3. prove Reshape end to end
    prove, _ = _timed([str(BIN / "torch-prover"), "prove", "Reshape", "--out", str(work / "p")])

    # 4. naive: one fresh interpreter per case (imports + stock exporter every time)
    cases = list(all_cases())
    step = max(1, len(cases) // args.naive_sample)
    sample = cases[::step][: args.naive_sample]
    naive = []
    for c in sample:
        code = ("from torch_prover.cases import find_case; from torch_prover.engine.prove import prove_case;"
                f"prove_case(find_case({c.op!r}, {c.name!r}))")
        naive.append(_timed([sys.executable, "-c", code])[0])
    naive_total = statistics.mean(naive) * n_cases

    print(f"catalogue: {n_cases} cases, {rep['summary']['ops_covered']} ops covered "
          f"(exit code {rc}; {rep['summary']['failed_cases']} failed cases)")
    print(f"cold verify-all (fresh process, {args.jobs} jobs, numeric on): {cold:6.1f} s   target <= 45 s")
    print(f"  same batch in-process (imports already paid):               {inproc:6.1f} s")
    print(f"  per-case median in a worker:                                 {med:6.2f} s")
    print(f"  peak RSS per worker (incl. pages shared with the parent):   {rss:6.0f} MiB target <= 600 MiB")
    print(f"warm rerun (fresh process, all cached):                        {warm:6.1f} s   target <= 5 s")
    print(f"torch-prover prove Reshape (fresh process):                    {prove:6.1f} s   target <= 6 s")
    print(f"naive, one process per case: {statistics.mean(naive):.2f} s/case on {len(sample)} cases "
          f"-> {naive_total:.0f} s for {n_cases} cases; ratio naive/cold = {naive_total / cold:.1f}x")
    print(f"(fast_export: {res.fast_export})")
    if not args.skip_versions:
        _all_versions(work, args.jobs)
    return 0


def _all_versions(work: Path, jobs: int) -> None:
    """verify-all --versions all, cold then warm, each in a fresh process; the workers' peak
    RSS from an in-process batch of the variants (a report carries no RSS)."""
    import json
    cache, out = work / "vcache", work / "vmodels"
    cmd = [str(BIN / "torch-prover"), "verify-all", "--versions", "all", "--jobs", str(jobs),
           "--out", str(out), "--cache-dir", str(cache), "--format", "json",
           "--report", str(work / "versions.json")]
    cold, rc = _timed(cmd)
    warm, _ = _timed(cmd)
    rep = json.loads((work / "versions.json").read_text())
    bands = rep["versions"]["summary"]["by_band"]
    from torch_prover.batch.pool import BatchOptions, run_batch
    from torch_prover.batch.versions import Selection, plan
    from torch_prover.cases import all_cases
    variants = [p.case for p in plan(list(all_cases()), Selection("all")) if p.case]
    res = run_batch(variants, BatchOptions(jobs=jobs))
    versions = sum(b["versions"] for b in bands.values())
    print(f"all versions: {versions} schema versions, {len(variants)} variants beside the "
          f"{rep['summary']['cases']} cases (exit code {rc})")
    print(f"cold verify-all --versions all (fresh process):               {cold:6.1f} s   target <= 180 s")
    print(f"warm rerun (fresh process, all cached):                        {warm:6.1f} s   target <= 10 s")
    print(f"  peak RSS per worker (variants, in-process):                 "
          f"{max(res.peak_rss_mib.values()):6.0f} MiB target <= 600 MiB")
    for band, b in bands.items():
        print(f"  {band}: {b['versions']} versions ({b['proved']} proved, {b['equivalence']} "
              f"equivalence, {b['by type']} by type, {b['explained']} explained); parameters "
              + ", ".join(f"{n} {v}" for v, n in b["parameters"].items()))
    no_ts, rc = _timed([str(BIN / "torch-prover"), "verify-all", "--versions", "all",
                        "--no-torchscript", "--jobs", str(jobs), "--out",
                        str(work / "vmodels-no-ts"), "--cache-dir", str(work / "vcache-no-ts")])
    print(f"cold verify-all --versions all --no-torchscript (fresh process): {no_ts:6.1f} s "
          f"(exit code {rc}; scripts/compare_exporters.py compares the two)")


if __name__ == "__main__":
    sys.exit(main())
