"""What a Markdown document keeps when the whole would not fit a PR comment: a batch
report's summary body, and a proof's (pure; ``markdown_limit.fit`` decides when, and keeps
it within the limit).

The body keeps what a reviewer acts on, most urgent first, one row per item: every
disagreement (the parameter, its tag, what the evidence says, whether its case declares
it, the command that reproduces it), failed and invalid cases, the proposed tags, the ops
whose status is not plainly proved, and with ``--versions`` the counts by band and the ops
whose versions hold something to look at. Everything else -- each disagreement's
evidence and reason, the whole per-op table, the per-version tables -- is in the details
file beside it, which holds the whole report.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from . import versions_report
from .markdown_limit import Block, fit, limit_words
from .batch_report import (BY_TYPE, DECLARED, MISSING, NOT_RUN, OP_STATUSES, by_type_command,
                           by_type_mark, by_type_rows, convention_label, disagreement_tally,
                           expected_of, param_key, proposals, reproduce, tally_words)
from .report import md_row
from .units import count

# statuses the body counts without a row: plain, or (declared) whose rows are the disagreements'
_PLAIN = ("proved", DECLARED, BY_TYPE, NOT_RUN, MISSING)
_LOOK = ("disagree", "undecided", "inconclusive", "proposed")   # version cells, most urgent first


def summary_blocks(rep: dict[str, Any], full: str, details: str) -> list[Block]:
    """The body's blocks: the report's own opening (title, counts, units), where the rest
    is, then one table per kind of finding. ``details`` names the details file."""
    head = full.split("\n## ", 1)[0].rstrip("\n").split("\n")
    pointer = (f"**This is the report's summary.** The whole report is {len(full):,} "
               f"characters, over {limit_words()}: {details} holds all of it (each "
               f"disagreement's evidence, every proposed tag, the per-op table"
               + (", the per-version tables" if rep.get("versions") else "") + ").")
    more = "\n... and {n} more rows in {details}."
    blocks = [Block(tuple(head) + ("", pointer, ""))]
    blocks += _disagreements(rep, more)
    bad = [r for r in rep["cases"] if r["status"] in ("error", "invalid")]
    if bad:
        blocks.append(Block((f"## Failed or invalid cases ({len(bad)})", ""),
                            tuple(f"- `{r['op']}/{r['case']}`: {r.get('error') or r.get('invalid')}"
                                  for r in bad), "... and {n} more in {details}.", ("",)))
    props = proposals(rep)
    blocks.append(Block(
        (f"## Proposed tags for unknown parameters ({count(len(props), 'parameter')})", "",
         "| op | version | parameter | proposed tag |", "|---|---|---|---|"),
        tuple(md_row(f"`{q['op']}`", q["version"], f"{q['io']} {q['index']} `{q['name']}`",
                     f"`{q['cpp']}`") for q in props), more, ("",)))
    blocks.append(_op_statuses(rep, more))
    if rep.get("versions"):
        blocks.append(_versions(rep["versions"], more))
    return blocks


def _disagreements(rep: dict[str, Any], more: str) -> list[Block]:
    """One row per disagreeing parameter: the math's, then by type, then by a convention."""
    waived = {(w["case"], w["parameter"]) for w in rep["summary"]["waived"]}
    tally = disagreement_tally(rep["cases"])
    header = ("| parameter | tag | evidence | status | reproduce |", "|---|---|---|---|---|")
    out = []
    for convention in (False, True):
        groups: dict[tuple, list] = {}
        for r in rep["cases"]:
            for p in r["parameters"]:
                if p["verdict"] == "disagree" and bool(p.get("convention")) is convention:
                    groups.setdefault(param_key(r, p), []).append((r, p))
        rows = []
        for (op, version, io, index), hits in groups.items():
            r, p = hits[0]
            status = ("waived" if (r["case"], f"{io} {index}") in waived else
                      "declared by the case" if expected_of(p) == "disagree" else "**NEW**")
            if convention:
                status += f"; {convention_label(p)}"
            also = f" (+{count(len(hits) - 1, 'case')})" if len(hits) > 1 else ""
            rows.append(md_row(f"`{op}`-{version} {io} {index} `{p['name']}`", p["tag"],
                               f"{p['evidence']} (`{r['case']}`{also})", status,
                               f"`{reproduce(rep, r)}`"))
        if not convention:
            rows += [md_row(f"`{o['op']}`-{o.get('schema_version')} {p['io']} {p['index']} "
                            f"`{p['name']}`", p["tag"], "by type (no case)",
                            "**NEW**" if by_type_mark(rep, o, p) is None else "waived",
                            f"`{by_type_command(rep, o['op'])}`")
                     for o, p in by_type_rows(rep) if p["verdict"] == "disagree"]
        title = ("## Disagreements decided by a convention" if convention
                 else "## Disagreements") + f" ({tally_words(tally['convention' if convention else 'math'])})"
        if convention and not rows:
            continue
        if not rows:
            out.append(Block((title, "", "None: every exercised tag agrees with the evidence.",
                              "")))
            continue
        out.append(Block((title, "", *header), tuple(rows), more, ("",)))
    return out


def _op_statuses(rep: dict[str, Any], more: str) -> Block:
    """The count of every status, then one row per op whose status asks for a look (a
    declared op's disagreements have their rows above)."""
    by = Counter(o["status"] for o in rep["ops"])
    counts = ", ".join(f"{by[s]} {s}" for s in OP_STATUSES if by[s])
    listed = [o for o in rep["ops"] if o["status"] not in _PLAIN]
    return Block(("## Per-op status", "", f"{count(len(rep['ops']), 'op')}: {counts}.", "",
                  "| op | status | detail |", "|---|---|---|"),
                 tuple(md_row(f"`{o['op']}`", o["status"], o["reason"]) for o in listed),
                 more, ("",))


def _versions(section: dict[str, Any], more: str) -> Block:
    """The counts by band, then one row per op whose versions hold a disagreement, a
    proposal or an undecided parameter: its cells counted by verdict."""
    rows = []
    for o in section["ops"]:
        if not versions_report.notable(o):
            continue
        cells = Counter(c["verdict"] for e in o["versions"] for c in e["cells"])
        cells["undecided"] = sum(len(e.get("undecided") or ()) for e in o["versions"])
        what = ", ".join(f"{cells[v]} {v}" for v in _LOOK if cells[v])
        rows.append((tuple(-cells[v] for v in _LOOK), md_row(
            f"`{o['op']}`", ", ".join(str(e["version"]) for e in o["versions"]),
            what or "explained")))
    rows.sort(key=lambda r: r[0][:3])   # disagreements first, then undecided, inconclusive
    return Block((f"## Schema versions ({section['selection']})", "",
                  *[f"- {line}" for line in versions_report.summary_lines(section)], "",
                  "| op | versions | parameters (cells) to look at |", "|---|---|---|"),
                 tuple(row for _, row in rows), more, ("",))


def proofs_on_stdout(parts: list[tuple[dict[str, Any] | None, str]], hint: str
                     ) -> tuple[str, list[str]]:
    """``prove`` and ``run`` with ``--format markdown``: each proof's Markdown (``parts``:
    the record, or None for a section that is not a proof, and its text), printed whole
    when it fits; past the limit, one line per proof on stdout and a stderr line saying
    how to get each whole (``hint``). Returns (stdout, stderr lines)."""
    full = "".join(text for _, text in parts)
    rows = []
    for rec, _ in parts:
        if rec is None:
            continue
        verdicts = Counter(p["verdict"] for p in rec.get("parameters") or ())
        rows.append(f"- `{rec['op']}` / `{rec['case']}`: {rec.get('status')}; " + ", ".join(
            f"{verdicts[v]} {v}" for v in ("disagree", "inconclusive", "proposed", "agree")
            if verdicts[v]))
    title = f"### Differentiability proofs: {count(len(rows), 'case')}"
    split = fit(full, [Block((title, "", f"The proofs are {len(full):,} characters, over "
                                         f"{limit_words()}: one line each here; {hint}.", ""),
                             tuple(rows), "... and {n} more.", ("",))], full, hint)
    if not split.is_split:
        return full, []
    return split.body + "\n", [f"markdown: the proofs are {len(full):,} characters, over "
                                f"{limit_words()}: stdout has one line per proof; {hint}"]
