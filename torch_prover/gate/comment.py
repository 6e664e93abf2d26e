"""The PR gate's comment: Markdown for the PR, and the same in text for a terminal or a log.

Both render the ``pr-gate`` document (``document.py``) and nothing else: what changed
(one row per changed parameter: base tag, PR tag, verdict), then each verdict with the
proofs behind it -- every proof's verdict, its reason and the command that reproduces it
-- refutations first, each verdict's deciding proof first and the not-exercised ones after
it (collapsed in Markdown), then what could not be proved and why (an op without a case:
how to add one; a version the installed onnx lacks: build the PR's onnx), failed proofs, disagreements on tags the PR does not change, the base's
versions the PR lacks, what an Operators.md base cannot see, and the exit code.

Every name the PR chose (an op, a parameter, a node test's directory, a path) and every
line of prose that may carry one (a reason, a waiver's) goes through the one escaping
(``output.inert``): in Markdown a name is a code span and prose inert (no mention, link,
image or HTML renders), in text every control character is shown as its escape.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..output.inert import md_code, md_text, one_line
from ..output.markdown_limit import COMMENT_LIMIT, PR_BODY_LIMIT, Block, fit
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


@dataclass(frozen=True)
class Style:
    """How a rendering writes a name (``code``) and prose that may carry one (``prose``)."""

    code: Callable[[Any], str]
    prose: Callable[[Any], str]


MD = Style(md_code, md_text)
TEXT = Style(one_line, one_line)


def _rows(doc: dict[str, Any]):
    for c in doc["changes"]:
        for p in c["parameters"]:
            yield c, p


def _param_cell(p: dict[str, Any], s: Style = TEXT) -> str:
    """``input 0 (X)``; a parameter the base calls otherwise with both names, the base's
    first (``input 0 (A -> X)``)."""
    names = (f"{s.code(p['base_name'])} -> {s.code(p['name'])}" if p["base_name"]
             else s.code(p["name"]))
    return f"{p['io']} {p['index']} ({names})"


def _change_cell(c: dict[str, Any], p: dict[str, Any]) -> str:
    """What changed for this parameter: a rename that keeps the tag is a rename, not a
    changed tag (``changes.param_changes`` counts a new name as a change)."""
    if p["base_name"] and p["base"] == p["pr"]:
        return "renamed parameter"
    return f"{c['kind']}, renamed" if p["base_name"] else c["kind"]


def _label(c: dict[str, Any], p: dict[str, Any], s: Style = TEXT) -> str:
    return f"{s.code(_version(c))} {_param_cell(p, s)}"


def _version(c: dict[str, Any]) -> str:
    """``Relu-14``; an op of another domain as ONNX's docs anchor it: ``ai.onnx.ml.Scaler-1``."""
    where = f"{c['domain']}." if c.get("domain") else ""
    return f"{where}{c['op']}-{c['version']}"


def _base_cell(p: dict[str, Any], s: Style, none: str) -> str:
    """The base's tag; a new version's parameter copied from the version it supersedes
    shows that version's tag (the same as the PR's: that is what copied means)."""
    if p["base"]:
        return p["base"]
    return f"{p['pr']} (in {s.code(p['inherited'])})" if p.get("inherited") else none


def _verdict_cell(p: dict[str, Any], s: Style = TEXT) -> str:
    if p["verdict"] == GateVerdict.INHERITED:
        return f"inherited from {s.code(p['inherited'])}: supports {p['supports']}"
    if p["verdict"] in (GateVerdict.REFUTED, GateVerdict.WAIVED, GateVerdict.PROPOSED):
        return f"{p['verdict']}: supports {p['supports']}"
    return p["verdict"]


def _witness_line(w: dict[str, Any], s: Style = TEXT) -> str:
    """One proof's verdict: case (opset), verdict, the rule unless its reason starts with
    it, whether the case declares the disagreement, and the reason."""
    where = f" (opset {w['opset']})" if w["opset"] is not None else ""
    rule = "" if w["reason"].startswith(w["rule"]) else f", {s.prose(w['rule'])}"
    declared = ""
    if w["declared"] == w["verdict"] == "disagree":
        declared = (" (the case declares this disagreement for today's tags; this PR is "
                    "the one introducing the tag)")
    return (f"{s.code(w['case'])}{where}: {w['verdict']}{rule}{declared}: "
            f"{s.prose(w['reason'])}")


def _upper(text: str) -> str:
    return text[:1].upper() + text[1:]


def _outcome(doc: dict[str, Any]) -> str:
    if doc["exit_code"]:
        return f"exit {doc['exit_code']}: the gate fails (a changed tag the evidence refutes)"
    return "exit 0: the gate passes (no changed tag refuted)"


def _sources(doc: dict[str, Any], s: Style = TEXT) -> str:
    """Where the base's and the PR's tags came from; for a merged report (``combine.py``)
    each domain's, with its own verdict."""
    if doc.get("parts"):
        return "; ".join(f"the {s.prose(p['domain'])} tags (exit {p['exit_code']}): "
                         + _one_source(p, p["versions_compared"], s) for p in doc["parts"])
    return _one_source(doc, doc["summary"]["versions_compared"], s)


def _one_source(doc: dict[str, Any], compared: int, s: Style) -> str:
    b = doc["base"]
    what = "each op's latest version" if b["latest_only"] else "every schema version"
    pr = doc["pr"]
    theirs = (f"{s.code(pr['path'])} (its committed docs, proved in the installed onnx "
              f"{pr['onnx']}: no build)" if pr.get("path") else
              f"the installed onnx {pr['onnx']}")
    named = (f"the merge base {s.code(b['commit'])}" if b.get("commit")
             else s.code(b["path"]))
    return (f"base: {named} ({b['kind']}, {what}); PR: {theirs}; "
            f"{compared} schema versions compared")


def _also_lines(also: list[dict[str, Any]], s: Style) -> list[str]:
    """One line per parameter, its cases together."""
    by_param: dict[tuple, list[dict[str, Any]]] = {}
    for a in also:
        by_param.setdefault((a["op"], a["version"], a["io"], a["index"], a["name"]), []).append(a)
    out = []
    for (op, version, io, index, name), hits in by_param.items():
        cases = ", ".join(s.code(a["case"]) + (" (declared)" if a["declared"] else "")
                          for a in hits)
        out.append(f"{s.code(f'{op}-{version}')} {io} {index} ({s.code(name)}): tagged "
                   f"{hits[0]['tag']}, the evidence supports {hits[0]['supports']} in {cases}")
    return out


def _notes(doc: dict[str, Any], s: Style = TEXT) -> list[tuple[str, list[str]]]:
    """(heading, lines) of what follows the verdicts."""
    out = []
    if doc["failed"]:
        out.append(("Proofs that failed", [f"{s.code(f['case'])} ({s.code(f['op'])}): "
                                           f"{s.prose(f['error'])}" for f in doc["failed"]]))
    unbuilt = [s.code(_version(c)) for c in doc["changes"] if c.get("unbuilt")]
    if unbuilt:
        out.append(("Not in the installed onnx: build the PR's onnx to prove them",
                    [", ".join(unbuilt)]))
    new_cases = [c for c in doc["changes"] if c["no_case"]]
    if new_cases:
        out.append(("Ops without a case", [
            f"{s.code(_version(c))}: {s.code(c['op'])} has no case in the catalogue. "
            f"{s.code(c['new_case'])} writes a case scaffold from the schema (inputs typed "
            "from its type constraints, attributes at their defaults); write its module, "
            f"then {s.code('pytest -k ' + c['op'].lower())} and "
            f"{s.code('torch-prover prove ' + c['op'])}"
            for c in new_cases]))
    gaps = [f"{s.code(_version(c))}: {s.code(g['case'])}: {s.prose(g['why'])}"
            for c in doc["changes"] for g in c["gaps"]]
    if gaps:
        out.append(("Cases that reach no changed version (so they prove nothing here)", gaps))
    if doc["also"]:
        out.append(("Tags this PR does not change (found in the same proofs; not failing)",
                    _also_lines(doc["also"], s)))
    if doc["removed"]:
        out.append(("In the base, not in the PR (nothing to prove)",
                    [", ".join(s.code(r) for r in doc["removed"])]))
    if doc.get("points"):
        pts = doc["points"]
        out.append(("ONNX's node tests behind the case-free verdicts",
                    [f"{s.prose(pts['origin'])}: {s.code(pts['source'])}"]
                    + [f"not made: {s.code(p)}" for p in pts["problems"]]))
    if doc.get("absent"):
        out.append(("In the base, not in the installed onnx (only a change to one needs the "
                    "PR's build)", [f"{s.prose(why)}: " + ", ".join(
                        s.code(a["version"]) for a in doc["absent"] if a["why"] == why)
                                    for why in dict.fromkeys(a["why"] for a in doc["absent"])]))
    return out


# ----------------------------------------------------------------------------- Markdown
OVER_LIMIT = ("The proofs behind each verdict are left out: with them this comment would pass "
              "GitHub's {limit:,}-character limit. `--format text` and `--format json` give "
              "them, each with the command that reproduces it.")


def markdown(doc: dict[str, Any]) -> str:
    """The PR comment; past GitHub's limit (less the marker's line the comment workflow
    prepends), without the proofs' details, then with as many of the table's rows and the
    notes' lines as fit (``markdown_limit.fit``, the one splitter; every format but this
    one keeps everything)."""
    full = _markdown(doc)
    if len(full) <= COMMENT_LIMIT:
        return full
    blocks = _short(doc)
    short = "\n".join(x for b in blocks for x in (*b.lines, *b.rows, *b.after))
    # the trailing newline counts too: the body may take one character less
    return fit(short, blocks, "", "", COMMENT_LIMIT - 1).body + "\n"


def _head(doc: dict[str, Any]) -> list[str]:
    """The comment's headline: the outcome, the reason and the tag sources."""
    out = ["## torch-prover: the differentiability tags this PR changes", "",
           f"**{_upper(_outcome(doc))}.** {_upper(md_text(doc['reason']))}.", "",
           _upper(_sources(doc, MD)) + ".", ""]
    return out + ([f"> {LATEST_ONLY}", ""] if doc["base"]["latest_only"] else [])


def _table(doc: dict[str, Any]) -> list[str]:
    """One row per changed parameter, under its two header lines."""
    out = [md_row("schema version", "change", "parameter", "base tag", "PR tag", "verdict"),
           md_row(*["---"] * 6)]
    for c, p in _rows(doc):
        verdict = _verdict_cell(p, MD)
        if p["verdict"] == GateVerdict.REFUTED:
            verdict = f"**{verdict}**"
        out.append(md_row(md_code(_version(c)), _change_cell(c, p), _param_cell(p, MD),
                          _base_cell(p, MD, "—"), p["pr"] or "—", verdict))
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
                     for heading, lines in _notes(doc, MD)]


def _copied(p: dict[str, Any]) -> bool:
    """A confirmation of a tag the PR copied from the version it supersedes."""
    return p["verdict"] == GateVerdict.CONFIRMED and bool(p.get("inherited"))


def _markdown(doc: dict[str, Any]) -> str:
    """The whole comment: headline, table, each verdict with its proofs (the confirmations
    of copied tags in one collapsed block), the notes."""
    out = _head(doc)
    if not doc["changes"]:
        return "\n".join(out)
    out += _table(doc)
    for verdict in ORDER:
        hits = [(c, p) for c, p in _rows(doc) if p["verdict"] == verdict]
        if not hits:
            continue
        own = [(c, p) for c, p in hits if not _copied(p)]
        copied = [(c, p) for c, p in hits if _copied(p)]
        out += ["", f"### {HEADINGS[verdict]}"]
        for c, p in own:
            out += _md_verdict(c, p)
        if copied:
            out += ["", f"<details><summary>{len(copied)} confirmed tag"
                        f"{'s' if len(copied) > 1 else ''} copied unchanged from the version "
                        "each supersedes</summary>"]
            for c, p in copied:
                out += _md_verdict(c, p)
            out += ["", "</details>"]
    for heading, lines in _notes(doc, MD):
        out += ["", f"### {heading}", ""] + [f"- {line}" for line in lines]
    return "\n".join(out) + "\n"


def _md_verdict(c: dict[str, Any], p: dict[str, Any]) -> list[str]:
    """One parameter's verdict and its proofs, the ones that did not decide collapsed."""
    out = ["", f"**{_label(c, p, MD)}**: {md_cell(md_text(p['why']))}"]
    decided = [w for w in p["witnesses"] if w["verdict"] != "inconclusive"]
    unexercised = [w for w in p["witnesses"] if w["verdict"] == "inconclusive"]
    out += _md_witnesses(decided)
    if unexercised:
        out += ["", f"<details><summary>{len(unexercised)} proof"
                    f"{'s' if len(unexercised) > 1 else ''} that did not decide it"
                    "</summary>", ""] + _md_witnesses(unexercised) + ["", "</details>"]
    return out


def _md_witnesses(witnesses: list[dict[str, Any]]) -> list[str]:
    out = []
    for w in witnesses:
        out.append(f"- {md_cell(_witness_line(w, MD))}")
        if w["command"]:
            out.append(f"  {md_code(w['command'])}")
    return out


# ----------------------------------------------------------------------------- text
def text(doc: dict[str, Any], width: int | None = DEFAULT_WIDTH) -> str:
    """The comment as text: every name and reason on one line (``TEXT``: a control
    character a PR put in a name is shown as its escape, never written to the terminal)."""
    out = wrap_line(f"PR gate: {one_line(doc['reason'])}", width)
    out += wrap_line(_sources(doc), width)
    if doc["base"]["latest_only"]:
        out += wrap_line("note: " + LATEST_ONLY, width)
    if doc["changes"]:
        rows = [[one_line(_version(c)), _change_cell(c, p), _param_cell(p),
                 _base_cell(p, TEXT, "-"), p["pr"] or "-", _verdict_cell(p)]
                for c, p in _rows(doc)]
        out += [""] + table(rows, ["version", "change", "parameter", "base", "PR", "verdict"],
                            width, flex=5)
    for verdict in ORDER:
        for c, p in _rows(doc):
            if p["verdict"] != verdict:
                continue
            out += [""] + wrap_line(f"{verdict}: {_label(c, p)}: {one_line(p['why'])}", width)
            for w in p["witnesses"]:
                out += wrap_line("  " + _witness_line(w), width, "    ")
                if w["command"]:
                    out.append(f"    {one_line(w['command'])}")
    for heading, lines in _notes(doc):
        out += ["", heading + ":"]
        for line in lines:
            out += wrap_line("  " + line, width, "    ")
    out += ["", _outcome(doc)]
    return "\n".join(out) + "\n"
