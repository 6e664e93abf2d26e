"""fix-tags: verdicts -> a checked patch against ONNX's C++ sources, and its PR text.

Every argument is checked before any work (exit 2, one line); the patch is applied to a
copy of the sources and re-read before anything is written (exit 1 when that check fails,
with nothing written).
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from .. import preflight
from ..errors import EXIT_FINDING, EXIT_OK, UsageError
from ..vocab import Verdict
from . import patch as patch_mod
from .locate import DEFS, read_tree
from .plan import findings, load_report, plan, reached_versions
from .pr_text import pr_markdown, summary


def _records(args: argparse.Namespace, cache_dir: Path):
    if args.report:
        return load_report(preflight.readable_file(args.report, "--report"))
    from ..batch import verify
    outcome = verify.verify_all(verify.Request(jobs=args.jobs, out=None,
                                               cache_dir=str(cache_dir)))
    for warning in outcome.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return outcome.report["cases"]


def cmd_fix_tags(args: argparse.Namespace, cache_dir: Path) -> int:
    root = preflight.onnx_source(args.onnx_src)
    if shutil.which("git") is None:   # patch.check applies the patch with it
        raise UsageError("fix-tags checks its patch with `git apply` on a copy of the sources: "
                         "git is not on PATH")
    ops = set(preflight.op_names(args.ops, "--ops")) if args.ops is not None else None
    preflight.positive_int(args.jobs, "--jobs")
    out = preflight.writable_file(args.output, "-o")
    md = out.with_suffix(".md")
    if md == out:
        raise UsageError(f"-o {out}: the PR text goes beside it as .md; give another name")
    preflight.writable_file(md, "-o (its PR text)")
    preflight.outputs_apart(
        [("-o", out), ("-o (its PR text)", md)], [("--report", args.report)],
        [("--onnx-src's onnx/defs", root / DEFS),
         ("the cache", None if args.report else cache_dir)])
    records = _records(args, cache_dir)
    reached = reached_versions(records)
    absent = sorted(op for op in ops or () if op not in reached)
    if absent:
        raise UsageError(f"--ops: {', '.join(absent)} not in the report; rerun verify-all "
                         f"with {'it' if len(absent) == 1 else 'them'} in --ops")
    tree = read_tree(root)
    for error in tree.errors:
        print(f"warning: cannot read {error}; its schemas count as not located", file=sys.stderr)
    only = Verdict(args.only) if args.only else None
    the_plan = plan(tree, findings(records), ops, only, reached)
    diff = patch_mod.unified_diff(patch_mod.edited_texts(tree, the_plan.edits))
    try:
        patch_mod.check(tree, the_plan.edits, diff)
    except patch_mod.CheckFailed as exc:
        print(f"torch-prover fix-tags: the patch failed its check, nothing written: {exc}",
              file=sys.stderr)
        return EXIT_FINDING
    sys.stdout.write(summary(the_plan))
    if not the_plan.edits:
        print("no hunk to write", file=sys.stderr)
        return EXIT_OK
    from ..output.evidence import write_text
    write_text(out, diff)
    write_text(md, pr_markdown(the_plan, out.name))
    print(f"patch written to {out}, PR text to {md}", file=sys.stderr)
    return EXIT_OK
