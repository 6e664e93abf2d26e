"""Sweep: every catalogue case -> ``torch-prover script`` -> ``torch-prover run`` -> same verdicts?

Why: the promise of ``torch-prover script`` is that the standalone script it writes, run
through ``torch-prover run``, reproduces ``torch-prover prove``'s verdicts. The test suite
checks a sample (tests/test_script_gen.py); this checks all of it. Per case it renders the
script, runs it in its own directory (so each writes its own model.onnx), proves the case
the usual way, and compares op, opset, exporter, status and every parameter's name,
evidence, tag and verdict. The scripts name their op (``# torch-prover: op=...``); the
sweep also reports where the graph alone would not have given it.

    python scripts/sweep_scripts.py [--cases REGEX] [--jobs N] [--keep DIR] [--json FILE]
                                    [--fast-export]

Exit 0 when every case reproduces, 1 otherwise; a case no standalone script can reproduce
(the raised route of ops newer than the exporter: ``torch-prover script`` refuses it) is
listed as ``no-script`` with its reason and does not fail the sweep. About 2-4 s per case
per job.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing
import os
import re
import sys
import tempfile
import time
from pathlib import Path


def sweep_one(name: str, workdir: str) -> dict:
    """Render, run and compare one case; never raises."""
    from torch_prover.cases import all_cases
    from torch_prover.engine.prove import prove_case
    from torch_prover.pr.gen import compare_records, render_case
    from torch_prover.pr.source import ScriptGenError
    from torch_prover.pr.runner import prove_script

    row = {"case": name, "op": "?", "status": "", "detail": "", "inferred": True}
    try:
        case = next(c for c in all_cases() if c.name == name)
    except Exception as exc:
        row.update(status="catalogue-error", detail=f"{type(exc).__name__}: {exc}")
        return row
    row["op"] = case.op
    t0 = time.time()
    where = Path(workdir) / name
    where.mkdir(parents=True, exist_ok=True)
    script = where / f"{name}.py"
    try:
        script.write_text(render_case(case), encoding="utf-8")
    except ScriptGenError as exc:
        # a case no standalone script can reproduce (the raised route): listed with its reason
        row.update(status="no-script", detail=str(exc))
        return row
    except Exception as exc:
        row.update(status="render-error", detail=f"{type(exc).__name__}: {exc}")
        return row
    try:
        proved = prove_case(case).record()
    except Exception as exc:
        row.update(status="prove-error", detail=f"{type(exc).__name__}: {exc}")
        return row
    here = os.getcwd()
    os.chdir(where)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            ran = prove_script(script, echo=None).record
        row["inferred"] = ran["script"]["op_inferred"] == case.op
    except Exception as exc:
        row.update(status="run-error", detail=f"{type(exc).__name__}: {exc}")
        return row
    finally:
        os.chdir(here)
    diffs = compare_records(proved, ran)
    row.update(status="same" if not diffs else "differs", detail="; ".join(diffs),
               seconds=round(time.time() - t0, 1),
               same_model=proved["model"]["sha256"] == ran["model"]["sha256"])
    return row


def _worker(names: list[str], workdir: str, queue, fast: bool) -> None:
    import warnings
    warnings.simplefilter("ignore")
    if fast:
        from torch_prover.engine import fast_export
        fast_export.enable()
    for name in names:
        queue.put(sweep_one(name, workdir))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", help="regex on case names (default: all)")
    parser.add_argument("--jobs", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    parser.add_argument("--keep", help="write the generated scripts and models here")
    parser.add_argument("--json", help="write the rows as JSON here")
    parser.add_argument("--fast-export", action="store_true",
                        help="reuse the exporter's tables (torch_prover.engine.fast_export): about twice "
                             "as fast; on torch 2.13 it breaks the export of "
                             "quantizelinear_decomposed and dequantizelinear_decomposed")
    args = parser.parse_args(argv)
    from torch_prover.cases import all_cases
    names = [c.name for c in all_cases() if not args.cases or re.search(args.cases, c.name)]
    workdir = str(Path(args.keep or tempfile.mkdtemp(prefix="sweep-scripts-")).resolve())
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    chunks = [names[k::args.jobs] for k in range(args.jobs)]
    procs = [ctx.Process(target=_worker, args=(c, workdir, queue, args.fast_export))
             for c in chunks if c]
    for p in procs:
        p.start()
    rows, t0, last = [], time.time(), time.time()
    while len(rows) < len(names):
        try:
            row = queue.get(timeout=5)
        except Exception:   # queue.Empty: are the workers still there?
            if not any(p.is_alive() for p in procs) or time.time() - last > 600:
                print("the workers stopped before every case was done", file=sys.stderr)
                break
            continue
        last = time.time()
        rows.append(row)
        mark = {"same": "ok ", "no-script": "-- "}.get(row["status"], "!! ")
        extra = "" if row["inferred"] else " (the graph alone does not give the op)"
        print(f"{mark}{len(rows):4}/{len(names)} {row['op']:<24} {row['case']:<36} "
              f"{row['status']}{extra} {row['detail'][:300]}", flush=True)
    for p in procs:
        p.join(timeout=5)
    bad = [r for r in rows if r["status"] not in ("same", "no-script")]
    no_script = [r for r in rows if r["status"] == "no-script"]
    not_inferred = [r["case"] for r in rows if not r["inferred"]]
    print(f"\n{len(rows) - len(bad) - len(no_script)}/{len(names)} cases reproduce prove's "
          f"verdicts, {len(no_script)} have no standalone script (reasons below) "
          f"({time.time() - t0:.0f} s, {args.jobs} jobs); cases whose op the graph alone does "
          "not give (the script's `# torch-prover: op=` line does): "
          f"{len(not_inferred)} ({', '.join(not_inferred[:20])})")
    for r in no_script + bad:
        print(f"  {r['case']}: {r['status']}: {r['detail']}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0 if not bad and len(rows) == len(names) else 1


if __name__ == "__main__":
    sys.exit(main())
