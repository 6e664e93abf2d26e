#!/usr/bin/env python
"""How good are ONNX's node tests alone? Every op with ONNX node tests decided twice.

    python scripts/compare_case_free.py [--table FILE] [--catalogue REPORT] [--case-free REPORT]

1. the catalogue: ``verify-all --versions all --no-write --format json`` (its per-version
   cells; ``--catalogue`` reads a saved report instead);
2. case-free: ``verify-all --case-free --versions all --format json`` (ONNX's node tests and
   function bodies only, batch/case_free.py; ``--case-free`` reads a saved report).

Per (op, schema version, parameter) of the case-free run -- the versions ONNX's tests exercise
-- both verdicts side by side: ``same`` (both decided, the same tag supported), ``different``,
``only catalogue`` / ``only case-free`` (the other left it undecided: a node test that never
exercises a parameter is this, not a difference), ``neither``. Prints the counts, the share of
the catalogue's decided cells case-free also decides, the cells a convention decides (in
the catalogue: the convention's tag, set beside the math on purpose; in case-free: a graph
op's ``body-dependent``) counted and listed apart, and every difference with why
(:func:`why`); ``--table`` writes the whole agreement table as Markdown.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

BIN = Path(sys.executable).parent / "torch-prover"
KINDS = ("same", "different", "only catalogue", "only case-free", "neither", "convention")


def _report(args: list[str], saved: str | None) -> dict:
    if saved:
        return json.loads(Path(saved).read_text())
    with tempfile.TemporaryDirectory(prefix="tp-compare-") as d:
        out = Path(d) / "report.json"
        subprocess.run([str(BIN), "verify-all", "--versions", "all", "--format", "json",
                        "--no-write", "--report", str(out), *args],
                       stdout=subprocess.DEVNULL, check=False)
        return json.loads(out.read_text())


def catalogue_cells(rep: dict) -> dict[tuple, dict]:
    return {(o["op"], v["version"], c["io"], c["name"]): c
            for o in rep["versions"]["ops"] for v in o["versions"] for c in v["cells"]}


def case_free_cells(rep: dict) -> dict[tuple, dict]:
    return {(o["op"], v["version"], c["io"], c["name"]): c
            for o in rep["case_free"]["ops"] for v in o["versions"] for c in v["cells"]}


def decided(c: dict | None) -> str | None:
    return c["supports"] if c and c.get("verdict") != "inconclusive" and c.get("supports") in (
        "differentiable", "non-differentiable") else None


def by_convention(c: dict | None) -> str | None:
    """The convention a cell's verdict rests on (catalogue: its label when the convention
    decided, rule ``convention``; case-free: body-dependent), else None. A label under rule
    ``convention without precedent`` is the math's verdict: compared like any other."""
    if not c:
        return None
    if c.get("rule") == "case-free: body-dependent":
        return "body-dependent"
    if c.get("convention") and set(str(c.get("rule", "")).split("; ")) == {"convention"}:
        return str(c["convention"])
    return None


def why(c: dict, f: dict) -> str:
    """Why the two verdicts of one cell differ, and which side the math takes, from what each
    side measured: the catalogue's deciding cases and rule, case-free's tests, rule and (for a
    parameter flat at a test's points) the precisions that computed its numbers."""
    rule = f.get("rule", "")
    cases = ", ".join(c.get("cases") or []) or c.get("basis") or "its cases"
    tests = ", ".join(f.get("tests") or []) or "no test"
    measured = f" ({f['precision']})" if f.get("precision") else ""
    if c.get("supports") == "differentiable" and "points" in rule:
        return (f"the catalogue's {cases} show a derivative ({c.get('rule')}); ONNX's {tests} "
                f"are flat{measured}, and stay flat at re-drawn values of their inputs, which "
                "keep each test's attributes: a flat branch an attribute selects (a mode) is "
                "where the tests sit, not the op's math. A derivative measured at a point is "
                "one the op has: the math sides with the catalogue")
    if c.get("supports") == "non-differentiable" and "points" in rule:
        return (f"ONNX's {tests} show a derivative ({rule}) the catalogue's {cases} do not "
                f"({c.get('rule')}): a derivative measured at a point is one the op has, so "
                "the math sides with case-free unless the catalogue's record explains it")
    return f"catalogue rule {c.get('rule')!r} ({cases}), case-free rule {rule!r} ({tests})"


def kind(a: str | None, b: str | None) -> str:
    if a and b:
        return "same" if a == b else "different"
    return "only catalogue" if a else "only case-free" if b else "neither"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", help="write the agreement table (Markdown) here")
    ap.add_argument("--catalogue", help="a saved verify-all --versions all JSON report")
    ap.add_argument("--case-free", dest="case_free", help="a saved verify-all --case-free "
                                                          "--versions all JSON report")
    args = ap.parse_args()
    cat = catalogue_cells(_report([], args.catalogue))
    free = case_free_cells(_report(["--case-free"], args.case_free))
    rows, counts, conventions = [], Counter(), []
    for key in sorted(free):
        named = by_convention(cat.get(key)) or by_convention(free[key])
        if named:
            conventions.append((key, named))
            k = "convention"
            counts[k] += 1
            rows.append((key, cat.get(key), free[key], k))
            continue
        a, b = decided(cat.get(key)), decided(free[key])
        k = kind(a, b)
        counts[k] += 1
        rows.append((key, cat.get(key), free[key], k))
    both, cat_decided = counts["same"] + counts["different"], counts["same"] + counts["different"] + counts["only catalogue"]
    print(f"{len(free)} cells (op, schema version, parameter) of {len({k[:2] for k in free})} "
          f"schema versions with ONNX node tests: " + ", ".join(f"{counts[k]} {k}" for k in KINDS))
    if cat_decided:
        print(f"case-free decides {both} of the {cat_decided} cells the catalogue decides "
              f"({100 * both / cat_decided:.1f}%)")
    print(f"{counts['convention']} cells a convention decides, not compared as the math "
          "(catalogue: its tag by declaration; case-free: a graph op's body-dependent):")
    for key, named in conventions:
        c, f = cat.get(key) or {}, free[key]
        print(f"  convention {named}: {key[0]}-{key[1]} {key[2]} {key[3]}: catalogue "
              f"{c.get('verdict', '-')} {c.get('supports') or ''}, case-free {f['verdict']} "
              f"{f['supports'] or ''} ({f['rule']})")
    for key, c, f, k in rows:
        if k == "different":
            print(f"different: {key[0]}-{key[1]} {key[2]} {key[3]}: catalogue {c['supports']} "
                  f"({c['rule']}), case-free {f['supports']} ({f['rule']}): {why(c, f)}")
    if args.table:
        lines = ["| op-version | parameter | tag | catalogue | case-free | tests | |",
                 "|---|---|---|---|---|---|---|"]
        for (op, v, io, name), c, f, k in rows:
            lines.append(f"| {op}-{v} | {io} {name} | {f['tag']} | "
                         f"{(c or {}).get('verdict', '-')} {decided(c) or ''} | "
                         f"{f['verdict']} {decided(f) or ''} ({f['rule']}) | "
                         f"{', '.join(f['tests'])} | {k} |")
        Path(args.table).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
