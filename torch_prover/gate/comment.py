"""The PR gate's comment: Markdown for the PR, and the same in text for a terminal or a log.

Both render the ``pr-gate`` document (``document.py``) and nothing else: what changed
(one row per changed parameter: base tag, PR tag, verdict), then each verdict with the
proofs behind it -- every proof's verdict, its reason and the command that reproduces it
-- refutations first, each verdict's deciding proof first and the not-exercised ones after
it (collapsed in Markdown), then what could not be proved and why (an op without a case:
how to add one; a version the installed onnx lacks: build the PR's onnx), failed proofs, disagreements on tags the PR does not change, the base's
versions the PR lacks, what an Operators.md base cannot see, and the exit code.
"""
from __future__ import annotations

from typing import Any

from ..output.markdown_limit import PR_BODY_LIMIT, Block, fit
from ..output.report import md_cell, md_row
from ..output.text_table import DEFAULT_WIDTH, table, wrap_line
from .judge import GateVerdict

ORDER = (GateVerdict.REFUTED, GateVerdict.INHERITED, GateVerdict.WAIVED,
         GateVerdict.NOT_PROVED, GateVerdict.NEEDS_BUILD, GateVerdict.PROPOSED,
         GateVerdict.CONFIRMED, GateVerdict.REMOVED)
"""The order of the details: what fails the gate first, what needs a reviewer next."""

HEADINGS = {
    GateVerdict.REFUTED: "Refuted: the evidence contradicts the PR's tag (the gate fails)",
    GateVerdict.INHERITED: ("Inherited: refuted, but copied unchanged from the version it "
                            "supersedes (a warning; the gate does not fail on it)"),
    GateVerdict.WAIVED: "Refuted but waived",
    GateVerdict.NOT_PROVED: "Not proved",
    GateVerdict.NEEDS_BUILD: ("Not proved: the installed onnx lacks the version (build the "
                              "PR's onnx)"),
    GateVerdict.PROPOSED: "Proposed: the PR leaves the tag unknown, the evidence decides it",
    GateVerdict.CONFIRMED: "Confirmed: the evidence supports the PR's tag",
    GateVerdict.REMOVED: "Removed by the PR: nothing to prove",
}

LATEST_ONLY = ("The base is an Operators.md: it documents each op's latest schema version "
               "only, so only those were compared and a change to an older version's tags "
               "is not seen. Give the base's Changelog.md to compare every version.")


def _rows(doc: dict[str, Any]):
    for c in doc["changes"]:
        for p in c["parameters"]:
            yield c, p


def _param_cell(p: dict[str, Any]) -> str:
    """``input 0 (X)``; a parameter the base calls otherwise with both names, the base's
    first (``input 0 (A -> X)``)."""
    names = f"{p['base_name']} -> {p['name']}" if p["base_name"] else p["name"]
    return f"{p['io']} {p['index']} ({names})"


def _change_cell(c: dict[str, Any], p: dict[str, Any]) -> str:
    """What changed for this parameter: a rename that keeps the tag is a rename, not a
    changed tag (``changes.param_changes`` counts a new name as a change)."""
    if p["base_name"] and p["base"] == p["pr"]:
        return "renamed parameter"
    return f"{c['kind']}, renamed" if p["base_name"] else c["kind"]


def _label(c: dict[str, Any], p: dict[str, Any]) -> str:
    return f"{c['op']}-{c['version']} {_param_cell(p)}"


def _verdict_cell(p: dict[str, Any]) -> str:
    if p["verdict"] == GateVerdict.INHERITED:
        return f"inherited from {p['inherited']}: supports {p['supports']}"
    if p["verdict"] in (GateVerdict.REFUTED, GateVerdict.WAIVED, GateVerdict.PROPOSED):
        return f"{p['verdict']}: supports {p['supports']}"
    return p["verdict"]


def _witness_line(w: dict[str, Any], code: str = "") -> str:
    """One proof's verdict: case (opset), verdict, the rule unless its reason starts with
    it, whether the case declares the disagreement, and the reason."""
    where = f" (opset {w['opset']})" if w["opset"] is not None else ""
    rule = "" if w["reason"].startswith(w["rule"]) else f", {w['rule']}"
    declared = ""
    if w["declared"] == w["verdict"] == "disagree":
        declared = (" (the case declares this disagreement for today's tags; this PR is "
                    "the one introducing the tag)")
    return f"{code}{w['case']}{code}{where}: {w['verdict']}{rule}{declared}: {w['reason']}"


def _upper(text: str) -> str:
    return text[:1].upper() + text[1:]


def _outcome(doc: dict[str, Any]) -> str:
    if doc["exit_code"]:
        return f"exit {doc['exit_code']}: the gate fails (a changed tag the evidence refutes)"
    return "exit 0: the gate passes (no changed tag refuted)"


def _sources(doc: dict[str, Any]) -> str:
    b = doc["base"]
    what = "each op's latest version" if b["latest_only"] else "every schema version"
    pr = doc["pr"]
    theirs = (f"{pr['path']} (its committed docs, proved in the installed onnx {pr['onnx']}: "
              "no build)" if pr.get("path") else f"the installed onnx {pr['onnx']}")
    return (f"base: {b['path']} ({b['kind']}, {what}); PR: {theirs}; "
            f"{doc['summary']['versions_compared']} schema versions compared")


def _also_lines(also: list[dict[str, Any]]) -> list[str]:
    """One line per parameter, its cases together."""
    by_param: dict[tuple, list[dict[str, Any]]] = {}
    for a in also:
        by_param.setdefault((a["op"], a["version"], a["io"], a["index"], a["name"]), []).append(a)
    out = []
    for (op, version, io, index, name), hits in by_param.items():
        cases = ", ".join(a["case"] + (" (declared)" if a["declared"] else "") for a in hits)
        out.append(f"{op}-{version} {io} {index} ({name}): tagged {hits[0]['tag']}, the "
                   f"evidence supports {hits[0]['supports']} in {cases}")
    return out


def _notes(doc: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(heading, lines) of what follows the verdicts."""
    out = []
    if doc["failed"]:
        out.append(("Proofs that failed", [f"{f['case']} ({f['op']}): {f['error']}"
                                           for f in doc["failed"]]))
    unbuilt = [f"{c['op']}-{c['version']}" for c in doc["changes"] if c.get("unbuilt")]
    if unbuilt:
        out.append(("Not in the installed onnx: build the PR's onnx to prove them",
                    [", ".join(unbuilt)]))
    new_cases = [c for c in doc["changes"] if c["no_case"]]
    if new_cases:
        out.append(("Ops without a case", [
            f"{c['op']}-{c['version']}: {c['op']} has no case in the catalogue. "
            f"`{c['new_case']}` writes a case scaffold from the schema (inputs typed from "
            "its type constraints, attributes at their defaults); write its module, then "
            f"`pytest -k {c['op'].lower()}` and `torch-prover prove {c['op']}`"
            for c in new_cases]))
    gaps = [f"{c['op']}-{c['version']}: {g['case']}: {g['why']}"
            for c in doc["changes"] for g in c["gaps"]]
    if gaps:
        out.append(("Cases that reach no changed version (so they prove nothing here)", gaps))
    if doc["also"]:
        out.append(("Tags this PR does not change (found in the same proofs; not failing)",
                    _also_lines(doc["also"])))
    if doc["removed"]:
        out.append(("In the base, not in the PR (nothing to prove)",
                    [", ".join(doc["removed"])]))
    if doc.get("points"):
        pts = doc["points"]
        out.append(("ONNX's node tests behind the case-free verdicts",
                    [f"{pts['origin']}: `{pts['source']}`"]
                    + [f"not made: `{p}`" for p in pts["problems"]]))
    if doc.get("absent"):
        out.append(("In the base, not in the installed onnx (only a change to one needs the "
                    "PR's build)", [f"{why}: " + ", ".join(a["version"] for a in doc["absent"]
                                                            if a["why"] == why)
                                    for why in dict.fromkeys(a["why"] for a in doc["absent"])]))
    return out


# ----------------------------------------------------------------------------- Markdown
OVER_LIMIT = ("The proofs behind each verdict are left out: with them this comment would pass "
              "GitHub's {limit:,}-character limit. `--format text` and `--format json` give "
              "them, each with the command that reproduces it.")


def markdown(doc: dict[str, Any]) -> str:
    """The PR comment; past GitHub's limit, without the proofs' details, then with as many
    of the table's rows and the notes' lines as fit (``markdown_limit.fit``, the one
    splitter; every format but this one keeps everything)."""
    full = _markdown(doc)
    if len(full) <= PR_BODY_LIMIT:
        return full
    blocks = _short(doc)
    short = "\n".join(x for b in blocks for x in (*b.lines, *b.rows, *b.after))
    # the trailing newline counts too: the body may take one character less
    return fit(short, blocks, "", "", PR_BODY_LIMIT - 1).body + "\n"


def _head(doc: dict[str, Any]) -> list[str]:
    """The comment's headline: the outcome, the reason and the tag sources."""
    out = ["## torch-prover: the differentiability tags this PR changes", "",
           f"**{_upper(_outcome(doc))}.** {_upper(doc['reason'])}.", "",
           _upper(_sources(doc)) + ".", ""]
    return out + ([f"> {LATEST_ONLY}", ""] if doc["base"]["latest_only"] else [])


def _table(doc: dict[str, Any]) -> list[str]:
    """One row per changed parameter, under its two header lines."""
    out = [md_row("schema version", "change", "parameter", "base tag", "PR tag", "verdict"),
           md_row(*["---"] * 6)]
    for c, p in _rows(doc):
        verdict = _verdict_cell(p)
        if p["verdict"] == GateVerdict.REFUTED:
            verdict = f"**{verdict}**"
        out.append(md_row(f"{c['op']}-{c['version']}", _change_cell(c, p), _param_cell(p),
                          p["base"] or "—", p["pr"] or "—", verdict))
    return out


def _short(doc: dict[str, Any]) -> list[Block]:
    """The comment without the proofs' details, as ``markdown_limit.Block``s: the headline
    and the table's head always, then its rows and each note's lines while they fit."""
    table_ = _table(doc)
    blocks = [Block(tuple(_head(doc) + table_[:2]), tuple(table_[2:]),
                    "... and {n} more changed parameters: `--format json` has every row",
                    ("", OVER_LIMIT.format(limit=PR_BODY_LIMIT)))]
    return blocks + [Block(("", f"### {heading}", ""), tuple(f"- {line}" for line in lines),
                           "- ... and {n} more: `--format json` has every one")
                     for heading, lines in _notes(doc)]


def _markdown(doc: dict[str, Any]) -> str:
    """The whole comment: headline, table, each verdict with its proofs, the notes."""
    out = _head(doc)
    if not doc["changes"]:
        return "\n".join(out)
    out += _table(doc)
    for verdict in ORDER:
        hits = [(c, p) for c, p in _rows(doc) if p["verdict"] == verdict]
        if not hits:
            continue
        out += ["", f"### {HEADINGS[verdict]}"]
        for c, p in hits:
            out += ["", f"**{_label(c, p)}**: {md_cell(p['why'])}"]
            decided = [w for w in p["witnesses"] if w["verdict"] != "inconclusive"]
            unexercised = [w for w in p["witnesses"] if w["verdict"] == "inconclusive"]
            out += _md_witnesses(decided)
            if unexercised:
                out += ["", f"<details><summary>{len(unexercised)} proof"
                            f"{'s' if len(unexercised) > 1 else ''} that did not decide it"
                            "</summary>", ""] + _md_witnesses(unexercised) + ["", "</details>"]
    for heading, lines in _notes(doc):
        out += ["", f"### {heading}", ""] + [f"- {line}" for line in lines]
    return "\n".join(out) + "\n"


def _md_witnesses(witnesses: list[dict[str, Any]]) -> list[str]:
    out = []
    for w in witnesses:
        out.append(f"- {md_cell(_witness_line(w, '`'))}")
        if w["command"]:
            out.append(f"  `{w['command']}`")
    return out


# ----------------------------------------------------------------------------- text
def text(doc: dict[str, Any], width: int | None = DEFAULT_WIDTH) -> str:
    out = wrap_line(f"PR gate: {doc['reason']}", width)
    out += wrap_line(_sources(doc), width)
    if doc["base"]["latest_only"]:
        out += wrap_line("note: " + LATEST_ONLY, width)
    if doc["changes"]:
        rows = [[f"{c['op']}-{c['version']}", _change_cell(c, p), _param_cell(p),
                 p["base"] or "-", p["pr"] or "-", _verdict_cell(p)] for c, p in _rows(doc)]
        out += [""] + table(rows, ["version", "change", "parameter", "base", "PR", "verdict"],
                            width, flex=5)
    for verdict in ORDER:
        for c, p in _rows(doc):
            if p["verdict"] != verdict:
                continue
            out += [""] + wrap_line(f"{verdict}: {_label(c, p)}: {p['why']}", width)
            for w in p["witnesses"]:
                out += wrap_line("  " + _witness_line(w), width, "    ")
                if w["command"]:
                    out.append(f"    {w['command']}")
    for heading, lines in _notes(doc):
        out += ["", heading + ":"]
        for line in lines:
            out += wrap_line("  " + line, width, "    ")
    out += ["", _outcome(doc)]
    return "\n".join(out) + "\n"
