"""``fix-tags --pr-dir DIR``: one pull request per op family, as ONNX's own tag PRs went
(#2893 pooling and conv, #2954 tensor/defs.cc, #3053 reductions), each reviewable by the
owners of one ``onnx/defs/<family>/`` directory.

A family's PR holds the edits whose call sites lie in its directory (its defs.cc and old.cc
together; a shared generator's edit goes with the family whose file declares the generator,
and the PR text names every op it touches), the withheld and not-located cells of its ops,
and the docs gen_doc would regenerate from its patched sources (``docs_edit``). Each PR is
``DIR/<family>/<family>.patch`` with its text ``<family>.md`` (and ``<family>-evidence.md``
past GitHub's body limit); each patch is checked alone on a fresh copy of the sources and
docs (``patch.check``), so each applies to the checkout by itself.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from .. import preflight
from ..output.markdown_limit import details_path
from ..output.ownership import Holds, written_by_us
from .docs_edit import edited_docs, line_diff, tag_changes
from .locate import DEFS, SourceTree
from .plan import Finding, Plan

UNPLACED = None
"""The family of a cell no schema block of the sources places (its op's files are absent)."""


@dataclass(frozen=True)
class Pr:
    """One family's pull request: its plan, and its three files."""
    family: str
    plan: Plan
    patch: Path
    text: Path
    evidence: Path


def family_of(path: str) -> str:
    """``onnx/defs/<family>/x.cc`` -> ``<family>``; a file directly in onnx/defs -> ``defs``."""
    parts = Path(path).parts
    return parts[len(DEFS.parts)] if len(parts) > len(DEFS.parts) + 1 else DEFS.name


def families_in(root: Path) -> list[str]:
    """Every family the sources could give a PR to: onnx/defs' directories (no symlink), and
    ``defs`` for files directly in it."""
    top = Path(root) / DEFS
    found = {e.name for e in os.scandir(top) if e.is_dir(follow_symlinks=False)}
    return sorted(found | {DEFS.name})


def files_of(pr_dir: Path, family: str) -> tuple[Path, Path, Path]:
    """(patch, PR text, evidence) of a family's PR."""
    patch = Path(pr_dir) / family / f"{family}.patch"
    return patch, patch.with_suffix(".md"), details_path(patch, "evidence")


def outputs(pr_dir: Path, root: Path) -> list[preflight.Output]:
    """Every file --pr-dir may write, for the output rule (checked before any work): the
    three files of each family the sources hold."""
    out = []
    for fam in families_in(root):
        patch, text, evidence = files_of(pr_dir, fam)
        out += [preflight.Output(f"--pr-dir ({fam}'s patch)", patch, Holds.PATCH),
                preflight.Output(f"--pr-dir ({fam}'s PR text)", text, Holds.PR_TEXT),
                preflight.Output(f"--pr-dir ({fam}'s evidence)", evidence, Holds.PR_EVIDENCE)]
    return out


def _placed(tree: SourceTree, f: Finding) -> str | None:
    """The family of a withheld or not-located cell: its schema block's, else its op's."""
    block = tree.block(f.op, f.domain, f.version) or next(
        (b for b in tree.blocks if (b.op, b.domain) == (f.op, f.domain)), None)
    return family_of(block.path) if block is not None else UNPLACED


def split(tree: SourceTree, plan: Plan, pr_dir: Path) -> tuple[list[Pr], list[Finding]]:
    """(one PR per family with an edit, the cells no family places). A family with only
    withheld or not-located cells gets no PR: its cells are listed by the summary."""
    fams = sorted({family_of(e.site.path) for e in plan.edits})
    prs = []
    for fam in fams:
        sub = replace(plan, edits=tuple(e for e in plan.edits if family_of(e.site.path) == fam),
                      unlocated=tuple(u for u in plan.unlocated if _placed(tree, u[0]) == fam),
                      withheld=tuple(w for w in plan.withheld if _placed(tree, w[0]) == fam),
                      acted=tuple(f for f in plan.acted if _placed(tree, f) == fam))
        prs.append(Pr(fam, sub, *files_of(pr_dir, fam)))
    unplaced = [f for f, *_ in plan.unlocated + plan.withheld if _placed(tree, f) is UNPLACED]
    return prs, unplaced


def docs_patch(tree: SourceTree, pr: Pr, docs: dict[str, str]) -> tuple[str, dict[str, str]]:
    """(the docs' part of the PR's diff, the docs as gen_doc writes them after it)."""
    new = edited_docs(docs, tag_changes(tree, pr.plan.edits))
    return "".join(line_diff(f"docs/{n}", docs[n], new[n]) for n in sorted(docs)), new


def stale(pr_dir: Path, root: Path, written: set[str]) -> list[Path]:
    """Files an earlier --pr-dir run wrote for a family this run gives no PR (or an evidence
    file this run's text no longer needs): removed with the new set, so no PR directory is
    left that the verdicts no longer back. Only files the manifest lists as ours."""
    out = []
    for fam in families_in(root):
        for path, holds in zip(files_of(pr_dir, fam), (Holds.PATCH, Holds.PR_TEXT,
                                                       Holds.PR_EVIDENCE)):
            if str(path) not in written and os.path.lexists(path) and written_by_us(path, holds):
                out.append(path)
    return out


def _lines(prs: list[Pr], unplaced: list[Finding]) -> list[str]:
    """The summary's lines about the PRs: one per family, then the cells no family places."""
    out = [f"  PRs: {len(prs)}, one per family"]
    for pr in prs:
        p = pr.plan
        out.append(f"    {pr.family}: {sum(len(e.findings) for e in p.edits)} edited at "
                   f"{len(p.edits)} call sites, {len(p.withheld)} withheld, "
                   f"{len(p.unlocated)} not located -> {pr.patch}")
    if unplaced:
        out.append(f"  in no PR ({len(unplaced)}: no block of their ops in these sources): "
                   + ", ".join(f.label for f in unplaced))
    return out


def write_prs(tree: SourceTree, plan: Plan, pr_dir: Path, docs_where: Path, args, rep) -> int:
    """Check every family's PR alone (``patch.check`` on a fresh copy, docs included), then
    write them, each family's files committed together (``output/commit.py``), and remove
    what an earlier run wrote that this one does not (``stale``). Nothing is written unless
    every PR passed its check."""
    import sys

    from ..errors import EXIT_OK
    from ..output.commit import Commit
    from .docs_edit import read_docs
    from .patch import check, edited_texts, unified_diff
    from .pr_text import counts, origin_lines, pr_texts, summary
    docs = read_docs(docs_where)
    prs, unplaced = split(tree, plan, pr_dir)
    origin = origin_lines(rep, args.report)
    staged = []
    for pr in prs:
        cpp = unified_diff(edited_texts(tree, pr.plan.edits))
        docs_diff, new_docs = docs_patch(tree, pr, docs)
        check(tree, pr.plan.edits, cpp + docs_diff, (docs, new_docs))   # CheckFailed: exit 1
        body, extra = pr_texts(pr.plan, pr.patch.name, pr.evidence.name, origin, pr.family)
        staged.append((pr, {pr.patch: cpp + docs_diff, pr.text: body}
                       | ({pr.evidence: extra} if extra is not None else {})))
    written = {str(p) for _, files in staged for p in files}
    gone = stale(pr_dir, tree.root, written)
    holds = (Holds.PATCH, Holds.PR_TEXT, Holds.PR_EVIDENCE)
    for directory in sorted({p.parent for _, files in staged for p in files}
                            | {p.parent for p in gone}):
        with Commit(directory) as c:   # a kill leaves this family's old files or its new ones
            for pr, files in staged:
                kinds = dict(zip(files_of(pr_dir, pr.family), holds))
                for path, text in files.items():
                    if path.parent == directory:
                        c.text(path, text, kinds[path])
            for path in gone:
                if path.parent == directory:
                    c.remove(path)
            c.commit()
    text = summary(plan) + "\n".join(_lines(prs, unplaced)) + "\n"
    if args.format == "json":
        from ..output.documents import fix_tags_doc
        from ..output.report import to_json
        sys.stdout.write(to_json(fix_tags_doc(
            EXIT_OK, f"{len(prs)} PRs written to {pr_dir}" if prs else "no hunk to write",
            counts(plan), None, None, text.splitlines())))
    else:
        sys.stdout.write(text)
    print(f"{len(prs)} PRs written to {pr_dir}, one directory per family" if prs
          else "no hunk to write", file=sys.stderr)
    return EXIT_OK
