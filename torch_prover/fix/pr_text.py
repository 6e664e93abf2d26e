"""What fix-tags says: the PR text beside the patch, and the summary on stdout (pure)."""
from __future__ import annotations

from collections import Counter

from ..vocab import Verdict
from .plan import Edit, Finding, Plan

REGENERATE = """\
After applying the patch, rebuild onnx (`pip install -e . -v`) and regenerate what ONNX
generates from these sources (the two steps of ONNX's tools/update_doc.sh):

```sh
python onnx/defs/gen_doc.py                   # docs/Operators.md, docs/Changelog.md
python onnx/backend/test/stat_coverage.py     # docs/TestCoverage.md
```
"""


def _evidence(f: Finding) -> list[str]:
    lines = []
    for c in f.cases:
        lines.append(f"  - case `{c.case}` ({c.verdict}, supports {c.supports}, "
                     f"rule: {c.rule or 'not given'}): "
                     f"autograd **{c.autograd[0]}** ({c.autograd[1]}); "
                     f"numeric **{c.numeric[0]}** ({c.numeric[1]})")
        lines.append(f"    reproduce: `torch-prover prove {f.op} --case {c.case}`")
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


def pr_markdown(plan: Plan, patch_name: str) -> str:
    out = ["# Differentiability tags from torch-prover's evidence", "",
           f"`{patch_name}` sets {len(plan.edits)} `.Input`/`.Output` tags in onnx/defs, each "
           "from a parameter whose cases all support the new tag. Each case names the rule "
           "that decided it: both witnesses (PyTorch autograd and the ONNX node's own finite "
           "differences), one witness where the other could not apply, or the schema's "
           "types alone (no gradient-carrying type allowed).", ""]
    for e in plan.edits:
        if not any(f.conventions for f in e.findings):
            out += _edit_section(e)
    by_convention = [e for e in plan.edits if any(f.conventions for f in e.findings)]
    if by_convention:
        out += ["## Decided by a convention, not the math", "",
                "Each of these follows a named convention (`torch-prover tags OP --explain` "
                "shows the math and the convention side by side); they are here because "
                "`--include-conventions` was given.", ""]
        for e in by_convention:
            names = sorted({c for f in e.findings for c in f.conventions})
            out += [f"Convention: **{', '.join(names)}**", ""] + _edit_section(e)
    if plan.unlocated or plan.withheld:
        out += ["## Left out", ""]
        out += [f"- {f.label}: not located ({why.value}): {detail}"
                for f, why, detail in plan.unlocated]
        out += [f"- {f.label}: withheld ({why.value}): {detail}"
                for f, why, detail in plan.withheld]
        out.append("")
    out += ["## Regenerate the docs", "", REGENERATE]
    return "\n".join(out)


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
