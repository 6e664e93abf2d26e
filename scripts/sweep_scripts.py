"""Sweep: every catalogue case -> ``torch-prover script`` -> ``torch-prover run`` -> same verdicts?

Why: the promise of ``torch-prover script`` is that the standalone script it writes, run
through ``torch-prover run``, reproduces ``torch-prover prove``'s verdicts. The test suite
checks a sample (tests/test_script_gen.py); this checks all of it. Per case it renders the
script, runs it in its own directory (so each writes its own model.onnx), proves the case
the usual way, and compares op, opset, exporter, status and every parameter's name,
evidence, tag and verdict. The scripts name their op (``# torch-prover: op=...``); the
sweep also reports where the graph alone would not have given it.

``--corpus`` adds the contributor scripts of tests/data/scripts (run as they are: no
``prove`` to compare with, their run's verdicts are recorded). ``--no-torchscript`` runs
everything with ``torch.onnx.export(dynamo=False)``, ``torch.jit.script`` and
``torch.jit.trace`` made to raise (tests/data/no_torchscript, as tests/test_no_torchscript.py
does; ``prove`` is then not run); ``--against FILE`` compares each script's run (op, status,
every parameter's verdict and supported tag) with a ``--json`` file of an earlier sweep --
issue 41's measure: the same verdicts with TorchScript gone as with it.

    python scripts/sweep_scripts.py [--cases REGEX] [--jobs N] [--keep DIR] [--json FILE]
                                    [--fast-export] [--corpus] [--no-torchscript]
                                    [--against FILE]

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

TESTS_DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
CORPUS = TESTS_DATA / "scripts"
HARNESS = TESTS_DATA / "no_torchscript"       # its sitecustomize makes TorchScript raise


def summary(ran: dict) -> dict:
    """What a run decided: op, opset, exporter, status, and per parameter (io index) its
    name, verdict and supported tag."""
    def text(v):
        return None if v is None else str(v)
    return {"op": ran["op"], "opset": ran["opset"], "exporter": text(ran["exporter"]),
            "status": text(ran["status"]),
            "verdicts": {f"{p['io']} {p['index']}": [p["name"], text(p["verdict"]),
                                                    text(p.get("supports"))]
                         for p in ran["parameters"]}}


def differences(before: dict | None, after: dict | None) -> list[str]:
    """Where two runs' summaries part: op, opset, status, a parameter's verdict or
    supported tag (names and the exporter may change with the exporter)."""
    if before is None or after is None:
        return [] if before == after else [f"run: {before and before.get('status')!r} -> "
                                           f"{after and after.get('status')!r}"]
    out = [f"{k}: {before.get(k)!r} -> {after.get(k)!r}" for k in ("op", "opset", "status")
           if before.get(k) != after.get(k)]
    a, b = before["verdicts"], after["verdicts"]
    for k in sorted(set(a) | set(b)):
        if (a.get(k) or [None])[1:] != (b.get(k) or [None])[1:]:
            out.append(f"{k}: {(a.get(k) or [None])[1:]} -> {(b.get(k) or [None])[1:]}")
    return out


def run_error(exc: Exception) -> dict:
    """A run that raised (a UsageError is exit 2), as a summary."""
    return {"op": None, "opset": None, "exporter": None,
            "status": f"error: {type(exc).__name__}", "verdicts": {},
            "reason": str(exc).splitlines()[0][:300] if str(exc) else ""}


def sweep_script(name: str, workdir: str) -> dict:
    """Run one corpus script, copied into its own directory; never raises."""
    import shutil
    from torch_prover.pr.runner import prove_script
    row = {"case": f"corpus/{name}", "op": "?", "status": "ran", "detail": "",
           "inferred": True}
    where = Path(workdir) / "corpus" / Path(name).stem
    where.mkdir(parents=True, exist_ok=True)
    shutil.copy(CORPUS / name, where / name)
    here, t0 = os.getcwd(), time.time()
    os.chdir(where)
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            row["run"] = summary(prove_script(where / name, echo=None).record)
        row["op"] = row["run"]["op"]
    except Exception as exc:
        row["run"] = run_error(exc)
        row["detail"] = row["run"]["reason"]
    finally:
        os.chdir(here)
    row["seconds"] = round(time.time() - t0, 1)
    return row


def sweep_one(name: str, workdir: str, prove: bool = True) -> dict:
    """Render, run and compare one case (``prove``: with ``prove``'s record); never raises."""
    from torch_prover.cases import all_cases
    from torch_prover.engine.prove import prove_case
    from torch_prover.pr.gen import compare_records, render_case
    from torch_prover.pr.source import ScriptGenError
    from torch_prover.pr.runner import prove_script

    if name.startswith("corpus/"):
        return sweep_script(name.removeprefix("corpus/"), workdir)
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
        proved = prove_case(case).record() if prove else None
    except Exception as exc:
        row.update(status="prove-error", detail=f"{type(exc).__name__}: {exc}")
        return row
    here = os.getcwd()
    os.chdir(where)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            ran = prove_script(script, echo=None).record
        row["inferred"] = ran["script"]["op_inferred"] == case.op
        row["run"] = summary(ran)
    except Exception as exc:
        row.update(status="run-error", detail=f"{type(exc).__name__}: {exc}", run=run_error(exc))
        return row
    finally:
        os.chdir(here)
    if proved is None:
        row.update(status="ran", seconds=round(time.time() - t0, 1))
        return row
    diffs = compare_records(proved, ran)
    row.update(status="same" if not diffs else "differs", detail="; ".join(diffs),
               seconds=round(time.time() - t0, 1),
               same_model=proved["model"]["sha256"] == ran["model"]["sha256"])
    return row


def _worker(names: list[str], workdir: str, queue, fast: bool, no_ts: bool) -> None:
    import warnings
    warnings.simplefilter("ignore")
    if fast:
        from torch_prover.engine import fast_export
        fast_export.enable()
    from torch_prover.engine.exporters import torchscript_available
    if torchscript_available() == no_ts:
        raise SystemExit(f"TorchScript is {'still there' if no_ts else 'gone'} in the worker")
    for name in names:
        queue.put(sweep_one(name, workdir, prove=not no_ts))


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
    parser.add_argument("--corpus", action="store_true",
                        help="also run the contributor scripts of tests/data/scripts")
    parser.add_argument("--no-torchscript", action="store_true",
                        help="with torch.onnx.export(dynamo=False), torch.jit.script and "
                             "torch.jit.trace made to raise (tests/data/no_torchscript); "
                             "prove is not run")
    parser.add_argument("--against", help="compare each run with this earlier --json file")
    args = parser.parse_args(argv)
    from torch_prover.cases import all_cases
    names = [c.name for c in all_cases() if not args.cases or re.search(args.cases, c.name)]
    if args.corpus:
        names += [f"corpus/{p.name}" for p in sorted(CORPUS.glob("*.py"))
                  if not args.cases or re.search(args.cases, p.name)]
    if args.no_torchscript:     # every Python started from here on (workers, fork servers)
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [str(HARNESS)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    before = ({r["case"]: r for r in json.loads(Path(args.against).read_text("utf-8"))}
              if args.against else None)
    workdir = str(Path(args.keep or tempfile.mkdtemp(prefix="sweep-scripts-")).resolve())
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    chunks = [names[k::args.jobs] for k in range(args.jobs)]
    procs = [ctx.Process(target=_worker,
                         args=(c, workdir, queue, args.fast_export, args.no_torchscript))
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
        if before is not None and row["status"] != "no-script":
            diffs = differences(before.get(row["case"], {}).get("run"), row.get("run"))
            if "run" not in row:        # rendering or proving failed before any run
                diffs = [f"{row['status']}: {row['detail'][:200]}"]
            row.update(versus="same" if not diffs else "differs", versus_detail="; ".join(diffs))
            row.update(status=row["versus"], detail=row["versus_detail"] or row["detail"])
        mark = {"same": "ok ", "no-script": "-- ", "ran": "   "}.get(row["status"], "!! ")
        extra = "" if row["inferred"] else " (the graph alone does not give the op)"
        print(f"{mark}{len(rows):4}/{len(names)} {row['op']:<24} {row['case']:<36} "
              f"{row['status']}{extra} {row['detail'][:300]}", flush=True)
    for p in procs:
        p.join(timeout=5)
    bad = [r for r in rows if r["status"] not in ("same", "no-script", "ran")]
    no_script = [r for r in rows if r["status"] == "no-script"]
    not_inferred = [r["case"] for r in rows if not r["inferred"]]
    against = (f"the same run (op, status, every verdict and supported tag) as in "
               f"{args.against}" if before is not None else "prove's verdicts")
    print(f"\n{len(rows) - len(bad) - len(no_script)}/{len(names)} scripts give {against}"
          f"{' (TorchScript made to raise)' if args.no_torchscript else ''}, "
          f"{len(no_script)} have no standalone script (reasons below) "
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
