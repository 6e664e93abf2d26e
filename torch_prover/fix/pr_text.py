"""What fix-tags says: the PR text beside the patch, and the summary on stdout (pure)."""
from __future__ import annotations

from collections import Counter
from typing import Any

from ..output.batch_report import prove_command
from ..output.markdown_limit import PR_BODY_LIMIT, Block, fit, limit_words
from ..output.ownership import PR_EVIDENCE_HEAD, PR_TEXT_HEAD
from ..vocab import Verdict
from .plan import Edit, Finding, Plan

__all__ = ["PR_BODY_LIMIT", "counts", "pr_texts", "reproduce", "summary"]

REGENERATE = """\
After applying the patch, rebuild onnx (`pip install -e . -v`) and regenerate what ONNX
generates from these sources (the two steps of ONNX's tools/update_doc.sh):

```sh
python onnx/defs/gen_doc.py                   # docs/Operators.md, docs/Changelog.md
python onnx/backend/test/stat_coverage.py     # docs/TestCoverage.md
```
"""

DOCS_INCLUDED = """\
The patch also carries `docs/Changelog.md` and `docs/Operators.md` as ONNX's
`onnx/defs/gen_doc.py` regenerates them from the patched sources: the tag word on the line
of each edited parameter, in every schema version's section the edit reaches (Operators.md:
where that version is the op's latest), and nothing else. To confirm with a build:

```sh
pip install -e . -v && python onnx/defs/gen_doc.py && git diff --exit-code docs/
```
"""


def family_lines(plan: Plan, family: str) -> list[str]:
    """What a family's PR covers: its directory, and every schema its edits change (a shared
    generator's users named, with the generator)."""
    ops = sorted({(op, v) for e in plan.edits for op, v, _, _ in e.users})
    shared = [e for e in plan.edits if e.shared]
    out = [f"This PR covers `onnx/defs/{family}/` only (its defs.cc and old.cc together); "
           "the other families' tags are in PRs of their own, each applying by itself.", "",
           f"Schemas whose tags it changes ({len(ops)}): "
           + ", ".join(f"{op}-{v}" for op, v in ops) + "."]
    for e in shared:
        users = ", ".join(sorted({f"{op}-{v}" for op, v, _, _ in e.users}))
        out.append(f"- shared generator `{e.generator}` (`{e.site.path}:{e.site.line}`) "
                   f"declares this parameter for {users}")
    return out + [""]


def reproduce(op: str, case: str, tags_path: str | None = None) -> str | None:
    """The command that reproduces a case's verdict (``batch_report.prove_command``: a
    variant ``<case>@<opset>`` is its case at that opset, ``tags_path`` the tag source); a
    verdict decided by equivalence (no case) has none."""
    return None if " " in case else prove_command(op, case, tags_path)


def _evidence(f: Finding) -> list[str]:
    lines = []
    for c in f.cases:
        if c.autograd[0] or c.numeric[0]:
            lines.append(f"  - case `{c.case}` ({c.verdict}, supports {c.supports}, "
                         f"rule: {c.rule or 'not given'}): "
                         f"autograd **{c.autograd[0]}** ({c.autograd[1]}); "
                         f"numeric **{c.numeric[0]}** ({c.numeric[1]})")
        else:
            lines.append(f"  - {c.case} ({c.verdict}, supports {c.supports}, rule: {c.rule})")
        command = reproduce(f.op, c.case)
        if command:
            lines.append(f"    reproduce: `{command}`")
    return lines


def _edit_section(e: Edit) -> list[str]:
    head = e.findings[0]
    out = [f"### `{e.site.path}:{e.site.line}`: {head.op}-{head.version} {head.io} "
           f"{head.index} `{head.name}` -> `{e.tag}`", ""]
    if e.shared:
        users = ", ".join(f"{op}-{v} {io} {i}" for op, v, io, i in e.users)
        out += [f"**Shared generator** (`{e.generator}`): this one call declares {users}; "
                "each has a decided verdict supporting the same tag.", ""]
    for f in e.findings:
        was = "unknown" if f.verdict is Verdict.PROPOSED else str(f.tag)
        out.append(f"- {f.label}: {was} -> {e.tag} ({f.verdict})")
        out += _evidence(f)
    return out + [""]


def _ordered(plan: Plan) -> tuple[list[Edit], list[Edit]]:
    """(corrections, proposals): an edit correcting a tag (some finding disagrees) comes
    first; each group by op, then schema version."""
    def key(e: Edit) -> tuple:
        f = e.findings[0]
        return f.op, f.version, f.io, f.index
    math = [e for e in plan.edits if not any(f.conventions for f in e.findings)]
    corrections = [e for e in math if any(f.verdict is Verdict.DISAGREE for f in e.findings)]
    proposals = [e for e in math if e not in corrections]
    return sorted(corrections, key=key), sorted(proposals, key=key)


def _by_convention(plan: Plan) -> list[str]:
    """Edits a named convention decides (only with ``--include-conventions``), labelled."""
    edits = [e for e in plan.edits if any(f.conventions for f in e.findings)]
    if not edits:
        return []
    out = ["## Decided by a convention, not the math", "",
           "Each of these follows a named convention (`torch-prover tags OP --explain` "
           "shows the math and the convention side by side); they are here because "
           "`--include-conventions` was given.", ""]
    for e in edits:
        names = sorted({c for f in e.findings for c in f.conventions})
        unfounded = any(c.rule == "convention without precedent" for f in e.findings
                        for c in f.cases)
        label = ("Convention without precedent outside the op (the math decides, under its "
                 "label)" if unfounded else "Convention")
        out += [f"{label}: **{', '.join(names)}**", ""] + _edit_section(e)
    return out


def shard_ops(rep: dict[str, Any]) -> list[str]:
    """The ops a shard's report holds (its cases' and its by-type rows')."""
    return sorted({r["op"] for r in rep["cases"]}
                  | {c["op"] for c in rep.get("shard", {}).get("case_less", [])})


def origin_lines(rep: dict[str, Any], report_path: str | None) -> list[str]:
    """Where the verdicts come from, for a reviewer: the report (or a run made now), the
    torch-prover, packages and tag source of its provenance, what it was asked -- and, for
    one shard's report, that it holds only that shard's ops."""
    prov = rep["provenance"]
    req, tags, tool = prov["request"], prov["tags"], prov["torch_prover"]
    packages = ", ".join(f"{k} {v}" for k, v in sorted(prov["versions"].items()))
    ops = ", ".join(req["ops"]) if req["ops"] is not None else "every op"
    out = ["## Where the verdicts come from", "",
           f"- report: {f'`{report_path}`' if report_path else 'a verify-all run made by fix-tags'}"
           f", re-checked record by record before this patch was planned",
           f"- torch-prover {tool['version']} (source sha256 {tool['source'][:12]}); {packages}",
           f"- tags: {tags['source']} (sha256 {tags['sha256'][:12]})",
           f"- asked: `--versions {req['versions']}`, ops: {ops}, numeric checks "
           f"{'on' if req['numeric'] else 'off (--no-numeric)'}"]
    shard = rep.get("shard")
    if shard is not None:
        out.append(f"- **one shard only: {shard['index']} of {shard['count']}** (`--shard "
                   f"{shard['index']}/{shard['count']}`): it holds the ops "
                   f"{', '.join(shard_ops(rep))}; the other shards' ops were not run, so this "
                   "is not the whole catalogue's PR (`torch-prover merge` joins the shards)")
    return out + [""]


def _intro(plan: Plan, patch_name: str) -> list[str]:
    return [PR_TEXT_HEAD, "",
            f"`{patch_name}` sets {len(plan.edits)} `.Input`/`.Output` tags in onnx/defs, each "
            "from a parameter whose cases all support the new tag. Each case names the rule "
            "that decided it: both witnesses (PyTorch autograd and the ONNX node's own finite "
            "differences), one witness where the other could not apply, the schema's "
            "types alone (no gradient-carrying type allowed), or, for a schema version in "
            "force only below opset 7 (no runtime runs it), equivalence with the version in "
            "force at opset 7.", ""]


def _sections(plan: Plan) -> list[str]:
    corrections, proposals = _ordered(plan)
    out: list[str] = []
    for title, edits in (("Corrections (a tag the evidence contradicts)", corrections),
                         ("Proposals (a tag left unknown)", proposals)):
        if not edits:
            continue
        out += [f"## {title}: {len(edits)} call sites", ""]
        for e in edits:
            out += _edit_section(e)
    out += _by_convention(plan)
    if plan.unlocated or plan.withheld:
        out += ["## Left out", ""]
        out += [f"- {f.label}: not located ({why.value}): {detail}"
                for f, why, detail in plan.unlocated]
        out += [f"- {f.label}: withheld ({why.value}): {detail}"
                for f, why, detail in plan.withheld]
        out.append("")
    return out


def _summary_rows(plan: Plan) -> list[str]:
    """One row per edited parameter, corrections first."""
    corrections, proposals = _ordered(plan)
    conventional = [e for e in plan.edits if any(f.conventions for f in e.findings)]
    rows = []
    for kind, edits in (("correction", corrections), ("proposal", proposals),
                        ("convention", conventional)):
        for e in edits:
            for f in e.findings:
                was = "unknown" if f.verdict is Verdict.PROPOSED else str(f.tag)
                rows.append(f"| {kind} | {f.label} | {was} -> {e.tag} | "
                            f"`{e.site.path}:{e.site.line}` |")
    return rows


def pr_texts(plan: Plan, patch_name: str, evidence_name: str,
             origin: list[str] = (), family: str | None = None) -> tuple[str, str | None]:
    """(PR body, evidence file or None). Within GitHub's limit (``PR_BODY_LIMIT``) the body
    holds everything; past it, the body holds a summary table and says that the evidence
    is in ``evidence_name`` beside it, which then holds the full sections
    (``output/markdown_limit.fit``, the split every Markdown document shares). ``origin``:
    where the verdicts come from (``origin_lines``), right after the introduction.
    ``family``: one family's PR (``pr_dir``), whose patch carries the regenerated docs."""
    tail = ["## Regenerate the docs", "", REGENERATE] if family is None else \
        ["## The docs", "", DOCS_INCLUDED]
    intro = _intro(plan, patch_name) + (family_lines(plan, family) if family else []) \
        + list(origin)
    sections = _sections(plan)
    full = "\n".join(intro + sections + tail)
    head = intro + [
        f"The evidence for every edit (each case's witnesses and the command that "
        f"reproduces it) is in `{evidence_name}`, beside this text: all of it would exceed "
        f"{limit_words()}.", ""]
    summary = [Block(tuple(head) + ("| | parameter | tag | call site |", "|---|---|---|---|"),
                     tuple(_summary_rows(plan)),
                     more="\n... and {n} more rows in the evidence file.", after=("",)),
               Block(tuple(tail))]
    evidence = "\n".join([PR_EVIDENCE_HEAD, ""] + sections)
    split = fit(full, summary, evidence, evidence_name)
    return split.body, split.details


def counts(plan: Plan) -> dict[str, int]:
    """The summary's figures, for ``fix-tags --format json``."""
    acted = Counter(f.verdict for f in plan.acted)
    return {"considered": len(plan.acted), "disagreements": acted[Verdict.DISAGREE],
            "proposals": acted[Verdict.PROPOSED],
            "edited": sum(len(e.findings) for e in plan.edits), "withheld": len(plan.withheld),
            "not_located": len(plan.unlocated), "hunks": len(plan.edits),
            "shared_hunks": sum(e.shared for e in plan.edits)}


def summary(plan: Plan) -> str:
    acted = Counter(f.verdict for f in plan.acted)
    edited = Counter(f.verdict for e in plan.edits for f in e.findings)
    conv = sum(bool(f.conventions) for f in plan.acted)
    lines = [f"fix-tags: {len(plan.acted)} parameters considered "
             f"({acted[Verdict.DISAGREE]} disagree, {acted[Verdict.PROPOSED]} proposed; "
             f"{conv} of them decided by a convention): "
             f"{sum(len(e.findings) for e in plan.edits)} edited, {len(plan.withheld)} "
             f"withheld, {len(plan.unlocated)} not located",
             f"  hunks: {len(plan.edits)} call sites edited "
             f"({sum(e.shared for e in plan.edits)} in shared generators), from "
             f"{edited[Verdict.DISAGREE]} disagreeing and {edited[Verdict.PROPOSED]} proposed "
             f"parameters"]
    for title, items in (("not located", plan.unlocated), ("withheld", plan.withheld)):
        counts = Counter(why.value for _, why, _ in items)
        shown = "; ".join(f"{why}: {n}" for why, n in sorted(counts.items()))
        lines.append(f"  {title}: {len(items)}" + (f" ({shown})" if items else ""))
        lines += [f"    {f.label}: {detail}" for f, _, detail in items]
    return "\n".join(lines) + "\n"
