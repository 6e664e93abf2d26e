#!/usr/bin/env python
"""Build each PR of ``fix-tags --pr-dir`` for real, in an onnx checkout (not in CI: slow).

    python scripts/build_prs.py ONNX_CHECKOUT PR_DIR --python BUILD_VENV/bin/python [--only F,G]

For the checkout as it is (the baseline) and then for each family's PR alone: apply its
patch to the index (``git apply --index``), rebuild onnx incrementally (``pip install
--no-build-isolation -e .`` keeps scikit-build-core's build directory, so only the family's
defs.cc/old.cc recompile), run ONNX's ``onnx/defs/gen_doc.py`` and ``git diff --exit-code
docs/`` (the docs the patch carries against gen_doc's of the rebuilt schemas), check every
tag the PR's Changelog.md lines write against the rebuilt ``onnx.defs.get_schema`` (tags as
intended N/N), run ONNX's own schema tests (``tests/python/schema_test.py``), then revert
(``git reset --hard``: the checkout must be this script's, clean at start). One JSON line per
PR on stdout; a table at the end.

``--python``: the interpreter of a venv that builds onnx (scikit-build-core, nanobind, cmake,
ninja, protobuf, numpy, pytest installed; Debian's protobuf-compiler and libprotobuf-dev,
so ``CMAKE_ARGS=-DONNX_USE_PROTOBUF_SHARED_LIBS=ON``). The build needs no network.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

TAG_WORDS = ("differentiable", "non-differentiable")
CHECK = r'''
import json, sys
from onnx import defs
cat = defs.OpSchema.DifferentiationCategory
word = {cat.Differentiable: "differentiable", cat.NonDifferentiable: "non-differentiable"}
bad = []
for op, domain, version, io, index, name, want in json.load(sys.stdin):
    s = defs.get_schema(op, version, domain)
    p = (s.inputs if io == "input" else s.outputs)[index]
    got = word.get(p.differentiation_category)
    if s.since_version != version or p.name != name or got != want:
        bad.append(f"{op}-{version} {io} {index} ({name}): {got}")
print(json.dumps(bad))
'''


def run(cmd: list[str], cwd: Path, env: dict | None = None, log: Path | None = None
        ) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                         env={**os.environ, **(env or {})})
    if log is not None:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"$ {' '.join(cmd)}\n{out.stdout}\n{out.stderr}\nrc={out.returncode}\n")
    return out


def intended(changelog: str, patch: str) -> list[list]:
    """(op, domain, version, io, index, name, tag) of every line the patch's Changelog.md
    part retags, read back from the patched file: the section above it, and its position
    among the section's Inputs or Outputs."""
    part = patch.split("diff --git a/docs/Changelog.md b/docs/Changelog.md\n", 1)
    if len(part) < 2:
        return []
    body = part[1].split("\ndiff --git ", 1)[0]
    lines = changelog.split("\n")
    out = []
    new_no = 0
    for line in body.split("\n"):
        m = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@", line)
        if m:
            new_no = int(m[1]) - 1
            continue
        if line.startswith((" ", "+")):
            if line.startswith("+") and not line.startswith("+++"):
                out.append(_param_at(lines, new_no))
            new_no += 1
    return out


def _param_at(lines: list[str], at: int) -> list:
    head = next(i for i in range(at, -1, -1) if lines[i].startswith("### <a name="))
    anchor = re.match(r'### <a name="([^"]+)-(\d+)"', lines[head])
    full, version = anchor[1], int(anchor[2])
    domain, _, op = full.rpartition(".")
    title = next(i for i in range(at, head, -1) if lines[i].startswith("#### "))
    io = "input" if lines[title].startswith("#### Inputs") else "output"
    index = sum(lines[i].startswith("<dt><tt>") for i in range(title, at))
    m = re.match(r"<dt><tt>([^<]*)</tt> \(([^)]*)\)", lines[at])
    tag = next(w for w in m[2].split(", ")[::-1] if w in TAG_WORDS)
    return [op, domain, version, io, index, m[1], tag]


def build(root: Path, python: str, log: Path) -> tuple[bool, float]:
    """Rebuild onnx. The first time ``pip install -e .`` (configure, build, install); after
    that, when its build directory and installed extension are there, only ninja in the
    build directory (recompiling what changed) and a copy of the extension over the
    installed one: a pip run reconfigures and may rebuild everything."""
    start = time.monotonic()
    env = {"CMAKE_ARGS": "-DONNX_USE_PROTOBUF_SHARED_LIBS=ON", "CMAKE_BUILD_PARALLEL_LEVEL": "2",
           "PATH": f"{Path(python).parent}:{os.environ['PATH']}"}
    tree = root / ".setuptools-cmake-build"
    built = sorted(tree.glob("onnx_cpp2py_export*.so"))
    installed = run([python, "-c", "import onnx.onnx_cpp2py_export as m; print(m.__file__)"],
                    Path("/"), env)
    if built and installed.returncode == 0:
        done = run(["cmake", "--build", str(tree)], root, env, log)
        if done.returncode == 0:
            shutil.copyfile(built[0], installed.stdout.strip())
        return done.returncode == 0, time.monotonic() - start
    done = run([python, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "-e", "."],
               root, env, log)
    return done.returncode == 0, time.monotonic() - start


def one(root: Path, python: str, name: str, patch: Path | None, log: Path) -> dict:
    """Build, gen_doc, docs diff, tags, schema tests for the checkout with ``patch`` applied."""
    res: dict = {"pr": name}
    want = []
    if patch is not None:
        applied = run(["git", "apply", "--index", str(patch)], root, log=log)
        res["applies"] = applied.returncode == 0
        if not res["applies"]:
            return res
        want = intended((root / "docs" / "Changelog.md").read_text(encoding="utf-8"),
                        patch.read_text(encoding="utf-8"))
    ok, took = build(root, python, log)
    res.update(builds=ok, build_s=round(took))
    if not ok:
        return res
    gen = run([python, "onnx/defs/gen_doc.py"], root, log=log)
    diff = run(["git", "diff", "--stat", "--exit-code", "docs/"], root, log=log)
    res["docs_identical"] = gen.returncode == 0 and diff.returncode == 0
    res["docs_diff"] = diff.stdout.strip().splitlines()[-1:] if diff.returncode else []
    if patch is not None:
        chk = subprocess.run([python, "-c", CHECK], input=json.dumps(want), cwd="/",
                             capture_output=True, text=True)
        bad = json.loads(chk.stdout) if chk.returncode == 0 else ["check failed: " +
                                                                  chk.stderr[-300:]]
        res["tags"] = f"{len(want) - len(bad)}/{len(want)}"
        res["tags_wrong"] = bad[:10]
    tests = run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--color=no",
                 "tests/python/schema_test.py"], root, log=log)
    res["schema_tests"] = (tests.stdout.strip().splitlines() or ["no output"])[-1]
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkout", type=Path)
    ap.add_argument("pr_dir", type=Path)
    ap.add_argument("--python", required=True, help="the build venv's python")
    ap.add_argument("--only", help="these families only (comma-separated)")
    ap.add_argument("--log", type=Path, default=Path("build_prs.log"))
    ap.add_argument("--skip-baseline", action="store_true",
                    help="the checkout as it is was built and checked already")
    args = ap.parse_args()
    root = args.checkout.resolve()
    if run(["git", "status", "--porcelain", "--untracked-files=no"], root).stdout.strip():
        sys.exit(f"{root}: has changes; give a clean checkout this script may reset")
    families = sorted(p.name for p in args.pr_dir.iterdir() if (p / f"{p.name}.patch").is_file())
    if args.only:
        families = [f for f in families if f in args.only.split(",")]
    results = [] if args.skip_baseline else [one(root, args.python, "baseline", None, args.log)]
    if results:
        print(json.dumps(results[-1]), flush=True)
    for fam in families:
        try:
            results.append(one(root, args.python, fam,
                               (args.pr_dir / fam / f"{fam}.patch").resolve(), args.log))
        finally:
            run(["git", "reset", "-q", "--hard", "HEAD"], root, log=args.log)
        print(json.dumps(results[-1]), flush=True)
    print("\n| PR | applies | builds | docs identical | tags as intended | schema tests |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['pr']} | {r.get('applies', '-')} | {r.get('builds')} | "
              f"{r.get('docs_identical')} | {r.get('tags', '-')} | {r.get('schema_tests')} |")
    return 0 if all(r.get("builds") and r.get("docs_identical") and r.get("applies", True)
                    and not r.get("tags_wrong") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
