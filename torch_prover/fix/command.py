"""fix-tags: verdicts -> a checked patch against ONNX's C++ sources, and its PR text.

Every argument is checked before any work (exit 2, one line); the patch is applied to a
copy of the sources and re-read before anything is written (``patch.CheckFailed``: exit 1
through ``cli.main``, with nothing written).
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from .. import preflight
from ..batch.domains import DEFAULT, checked
from ..errors import EXIT_OK, UsageError
from ..output.markdown_limit import details_path
from ..output.ownership import Holds
from ..vocab import Verdict
from . import patch as patch_mod
from .locate import read_tree
from .plan import findings, plan, reached_versions, report_records
from .points_guard import guarded
from .settled import domain_report
from .pr_text import counts, origin_lines, pr_texts, shard_ops, summary


def _report(args: argparse.Namespace, cache_dir: Path) -> dict:
    """The verify-all report the patch is made from: ``--report``'s, rebuilt from its
    re-checked records (``batch/report_io.load_report``: one edited or forged row is exit
    2, naming it, before any planning), or a run made now."""
    domain = _domain(args)
    if args.report is not None:   # --report '' is refused as an empty path, not "no report"
        from ..batch.report_io import load_report
        rep = load_report(args.report, what="--report")
    else:
        from ..batch import verify
        outcome = verify.verify_all(verify.Request(jobs=args.jobs, out=None,
                                                   cache_dir=str(cache_dir),
                                                   versions=args.versions, domain=domain))
        for warning in outcome.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        rep = outcome.report
    return rep if domain == DEFAULT else domain_report(rep, domain)


def _domain(args: argparse.Namespace) -> str:
    """``--domain``: ai.onnx (the default) or a domain with reference cases."""
    return checked(getattr(args, "domain", None) or DEFAULT)


def cmd_fix_tags(args: argparse.Namespace, cache_dir: Path) -> int:
    root = preflight.onnx_source(args.onnx_src)
    if shutil.which("git") is None:   # patch.check applies the patch with it
        raise UsageError("fix-tags checks its patch with `git apply` on a copy of the sources: "
                         "git is not on PATH")
    ops = set(preflight.op_names(args.ops, "--ops")) if args.ops is not None else None
    preflight.positive_int(args.jobs, "--jobs")
    pr_dir = getattr(args, "pr_dir", None)
    if pr_dir is not None and _domain(args) != DEFAULT:
        raise UsageError(f"--pr-dir regenerates ai.onnx's docs/Changelog.md and Operators.md; "
                         f"with --domain {_domain(args)} give -o (one patch)")
    if pr_dir is not None:
        if args.output is not None:
            raise UsageError("-o and --pr-dir: give one (a single patch, or one PR per family)")
        if not str(pr_dir).strip():
            raise UsageError("--pr-dir: empty path")
        from . import pr_dir as prs
        from .docs_edit import FILES, docs_dir
        docs = docs_dir(args.docs, root)
        preflight.outputs_checked(prs.outputs(Path(pr_dir), root),
                                  [("--report", args.report)]
                                  + [("--docs", docs / n) for n in FILES],
                                  [("--onnx-src", root), ("the cache", cache_dir)])
    else:
        if args.docs is not None:
            raise UsageError("--docs: only with --pr-dir (the single patch carries no docs)")
        out = Path(args.output if args.output is not None else "fix.patch")
        if not str(out).strip():
            raise UsageError("-o: empty path")
        md = out.with_suffix(".md")
        evidence = details_path(out, "evidence")
        if md == out or evidence == out:
            raise UsageError(f"-o {out}: the PR text goes beside it as .md; give another name")
        preflight.outputs_checked(
            [preflight.Output("-o", out, Holds.PATCH),
             preflight.Output("-o (its PR text)", md, Holds.PR_TEXT),
             preflight.Output("-o (its evidence)", evidence, Holds.PR_EVIDENCE)],
            [("--report", args.report)],
            [("--onnx-src", root), ("the cache", cache_dir)])   # ONNX's tests are kept there
    rep = _report(args, cache_dir)
    records = report_records(rep)
    if "shard" in rep:
        print(f"warning: --report {args.report} is shard {rep['shard']['index']} of "
              f"{rep['shard']['count']} (ops {', '.join(shard_ops(rep))}): the patch and its "
              "PR text cover those ops only; `torch-prover merge` the shards for the whole "
              "catalogue", file=sys.stderr)
    reached = reached_versions(records)
    absent = sorted(op for op in ops or () if op not in reached)
    if absent:
        raise UsageError(f"--ops: {', '.join(absent)} not in the report; rerun verify-all "
                         f"with {'it' if len(absent) == 1 else 'them'} in --ops")
    tree = read_tree(root)
    for error in tree.errors:
        print(f"warning: cannot read {error}; its schemas count as not located", file=sys.stderr)
    only = Verdict(args.only) if args.only else None
    the_plan = plan(tree, findings(records), ops, only, reached,
                    include_conventions=getattr(args, "include_conventions", False))
    the_plan, notes = guarded(the_plan, cache_dir)   # no edit ONNX's node tests contradict
    for note in notes:
        print(f"warning: {note}", file=sys.stderr)
    if pr_dir is not None:
        from .pr_dir import write_prs
        return write_prs(tree, the_plan, Path(pr_dir), docs, args, rep)
    diff = patch_mod.unified_diff(patch_mod.edited_texts(tree, the_plan.edits))
    patch_mod.check(tree, the_plan.edits, diff)   # CheckFailed: exit 1, nothing written
    text = summary(the_plan)
    extra = None
    if the_plan.edits:
        from ..output.commit import write_texts
        body, extra = pr_texts(the_plan, out.name, evidence.name,
                               origin_lines(rep, args.report))
        # one commit: a kill leaves the previous patch and PR text, or these (docs/safety.md)
        write_texts({out: diff, md: body, **({evidence: extra} if extra is not None else {})},
                    {out: Holds.PATCH, md: Holds.PR_TEXT, evidence: Holds.PR_EVIDENCE})
    if args.format == "json":
        from ..output.documents import fix_tags_doc
        from ..output.report import to_json
        wrote = bool(the_plan.edits)
        sys.stdout.write(to_json(fix_tags_doc(
            EXIT_OK, text.splitlines()[0] if wrote else "no hunk to write", counts(the_plan),
            str(out) if wrote else None, str(md) if wrote else None, text.splitlines())))
    else:
        sys.stdout.write(text)
    if not the_plan.edits:
        print("no hunk to write", file=sys.stderr)
        return EXIT_OK
    print(f"patch written to {out}, PR text to {md}"
          + (f" (its evidence, past GitHub's body limit, to {evidence})" if extra else ""),
          file=sys.stderr)
    return EXIT_OK
