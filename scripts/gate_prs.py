#!/usr/bin/env python
"""Replay each PR of ``fix-tags --pr-dir`` through the PR gate, from its own docs (no build).

    python scripts/gate_prs.py PR_DIR DOCS_DIR [--only F,G] [--cache-dir DIR]

For each family's patch: its docs part applied to a copy of ``DOCS_DIR``'s Changelog.md and
Operators.md (``git apply --include 'docs/*'``), then ``torch-prover verify-all
--changed-from DOCS_DIR/Changelog.md --tags-from COPY/Changelog.md`` (docs/pr-gate.md): the
gate must confirm every tag the PR writes -- 0 refuted, 0 not proved, exit 0, and as many
confirmed as the Changelog.md lines the patch retags. One JSON line per PR, a table at the end.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def retagged_lines(patch: str) -> int:
    """The Changelog.md parameter lines the patch retags (each ``+<dt>`` line of its part)."""
    part = patch.split("diff --git a/docs/Changelog.md b/docs/Changelog.md\n", 1)
    body = part[1].split("\ndiff --git ", 1)[0] if len(part) == 2 else ""
    return sum(line.startswith("+<dt><tt>") for line in body.split("\n"))


def replay(patch: Path, docs: Path, work: Path, cache_dir: Path | None = None) -> dict:
    """The gate's verdicts on one PR's docs: {"pr", "exit", "retagged", "confirmed", ...}."""
    repo = work / "repo"
    (repo / "docs").mkdir(parents=True)
    for name in ("Changelog.md", "Operators.md"):
        shutil.copyfile(docs / name, repo / "docs" / name)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "apply", "--include", "docs/*", str(patch.resolve())], cwd=repo,
                   check=True)
    report = work / "gate.json"
    cmd = [sys.executable, "-m", "torch_prover", "verify-all", "--changed-from",
           str(docs / "Changelog.md"), "--tags-from", str(repo / "docs" / "Changelog.md"),
           "--format", "json", "--report", str(report), "--no-write"]
    if cache_dir is not None:
        cmd += ["--cache-dir", str(cache_dir)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=work)
    out = {"pr": patch.stem, "exit": done.returncode,
           "retagged": retagged_lines(patch.read_text(encoding="utf-8"))}
    if report.is_file():
        summary = json.loads(report.read_text(encoding="utf-8"))["summary"]
        out.update({k: summary["verdicts"][k] for k in ("confirmed", "refuted", "not proved",
                                                         "inherited", "proposed")},
                   changed_parameters=summary["changed_parameters"])
    else:
        out["error"] = done.stderr.strip().splitlines()[-1:]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pr_dir", type=Path)
    ap.add_argument("docs", type=Path)
    ap.add_argument("--only", help="these families only (comma-separated)")
    ap.add_argument("--cache-dir", type=Path)
    args = ap.parse_args()
    families = sorted(p.name for p in args.pr_dir.iterdir() if (p / f"{p.name}.patch").is_file())
    if args.only:
        families = [f for f in families if f in args.only.split(",")]
    rows = []
    for fam in families:
        with tempfile.TemporaryDirectory() as tmp:
            rows.append(replay(args.pr_dir / fam / f"{fam}.patch", args.docs.resolve(),
                               Path(tmp), args.cache_dir))
        print(json.dumps(rows[-1]), flush=True)
    print("\n| PR | exit | retagged lines | confirmed | refuted | not proved |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['pr']} | {r['exit']} | {r['retagged']} | {r.get('confirmed')} | "
              f"{r.get('refuted')} | {r.get('not proved')} |")
    good = all(r["exit"] == 0 and r.get("refuted") == 0 and r.get("not proved") == 0
               and r.get("confirmed") == r["retagged"] for r in rows)
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
