"""`torch-prover report`, GitHub's Markdown limit, the text report's closing line, and the
HTML page's versions table.

Expectations come from outside the renderers: what verify-all itself printed for the same
run (``report`` must reproduce it, but for the two numbers no record holds, which it must
not show: docs/reports.md), the report's own summary (every
count of the closing line and the page's header), its records (every disagreeing
parameter has a row in a split Markdown body), GitHub's 65,536-character limit, and the
shipped JSON schema (a saved report that breaks it is refused).
"""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from docs_examples import assert_example
from torch_prover.output.markdown_limit import PR_BODY_LIMIT, Block, details_path, fit

OPS = "GridSample,Abs"     # a declared disagreement in 3 versions; Abs: proposals, equivalence
WALL = re.compile(r"wall time \d+\.\d s")                       # text
CACHED = re.compile(r" \(\d+ from the cache\)")                  # text, the ops line
HTML_WALL = re.compile(r'(<div class="label">wall time</div><div class="big">)\d+<small> s'
                       r'</small></div>(<div class="muted small cache">)[^<]*')
NOT_SHOWN = ("wall time and cache use not shown (a report rebuilt from saved records cannot "
             "re-derive them)")
"""What docs/reports.md says `report` prints in place of the run's wall time and cache use."""


def _tp(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "torch_prover", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=1800)


def _main(capsys, *args: str | Path) -> tuple[int, str, str]:
    """The command in this process (a refusal needs no subprocess): exit code, stdout, stderr."""
    from torch_prover.cli import main
    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """One small --versions all run, printed by verify-all in every format: a warm-up run
    fills the cache, so the four runs compared are all served by it (same cache hits)."""
    root = tmp_path_factory.mktemp("report")
    common = ["verify-all", "--ops", OPS, "--versions", "all", "--no-write",
              "--cache-dir", root / "cache"]
    warm = _tp(*common, "--format", "json")
    # exit 0, or 1 when a variant fails (the report's own code: it is rendered again below)
    assert warm.returncode == json.loads(warm.stdout)["exit_code"] in (0, 1), \
        warm.stderr[-2000:]
    runs = {"json": _tp(*common, "--format", "json", "--report", root / "run.json"),
            "html": _tp(*common, "--format", "html", "--report", root / "run.html"),
            "markdown": _tp(*common, "--format", "markdown", "--report", root / "run.md")}
    for r in runs.values():
        assert r.returncode == warm.returncode, r.stderr[-2000:]
    printed = {"json": runs["json"].stdout, "text": runs["html"].stdout,
               "html": (root / "run.html").read_text(), "markdown": (root / "run.md").read_text()}
    return {"root": root, "printed": printed, "report": json.loads(runs["json"].stdout)}


def _as_report_shows(printed: str, fmt: str) -> str:
    """What verify-all printed, with its wall time and cache use as `report` must show them
    (not at all: NOT_SHOWN); the text compared with its wrapping undone (the words in
    their place wrap differently)."""
    if fmt == "html":
        return HTML_WALL.sub(r"\1–</div>\2" + html.escape(NOT_SHOWN, quote=True), printed)
    return WALL.sub(NOT_SHOWN, CACHED.sub("", _unwrapped(printed)))


def _unwrapped(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("fmt", ["text", "markdown", "html", "json"])
def test_report_prints_what_verify_all_printed(small, fmt):
    root = small["root"]
    r = _tp("report", root / "run.json", "--format", fmt)
    code = small["report"]["exit_code"]
    assert r.returncode == code and r.stderr == "", r.stderr
    printed = small["printed"][fmt]
    if fmt == "json":
        want = json.loads(printed)
        want["summary"].update(wall_time_s=None, cache_hits=None)
        assert json.loads(r.stdout) == want
    elif fmt == "html":
        assert r.stdout == _as_report_shows(printed, fmt)
    else:
        assert _unwrapped(r.stdout) == _as_report_shows(printed, fmt)
    if fmt in ("markdown", "html"):   # --report writes the same document
        out = root / f"again.{fmt}"
        again = _tp("report", root / "run.json", "--format", fmt, "--report", out)
        assert again.returncode == code and out.read_text() == r.stdout
        assert again.stderr == f"report written to {out}\n"


def _closing(rep: dict) -> str:
    """The closing line, written from the report's summary (the format rule of docs/reports.md)."""
    s, c = rep["summary"], rep["summary"]["parameters"]
    declared = f" ({s['declared_disagreements']} declared)" if s["declared_disagreements"] else ""
    line = (f"{s['cases']} cases: {c['agree']} agree, {c['disagree']} disagree{declared}, "
            f"{c['proposed']} proposed, {c['inconclusive']} inconclusive")
    if rep.get("versions"):
        bands = list(rep["versions"]["summary"]["by_band"].values())
        cells = {v: sum(b["parameters"][v] for b in bands)
                 for v in ("agree", "disagree", "proposed", "inconclusive")}
        line += (f"; {sum(b['versions'] for b in bands)} schema versions, parameters: "
                 + ", ".join(f"{n} {v}" for v, n in cells.items()))
    return line


def test_the_text_report_ends_with_its_summary_line(small):
    rep = small["report"]
    last = small["printed"]["text"].rstrip("\n").split("\n")[-1]
    assert last == _closing(rep) + "; 0 failing — exit 0"


def test_a_failing_report_says_so_last_and_exits_1(small, tmp_path):
    """A real failing run (Softmax-13's input tagged non-differentiable in the tag source:
    softmax is smooth, so an undeclared disagreement; test_ci_outputs.flipped_changelog):
    ``report`` of its JSON exits 1, and the closing line counts the failure. (An edited
    record is refused, not rendered: test_a_forged_report_is_refused...)"""
    from test_ci_outputs import flipped_changelog
    tags = flipped_changelog(tmp_path)
    made = _tp("verify-all", "--ops", "Softmax", "--tags-from", tags, "--no-write",
               "--cache-dir", small["root"] / "cache", "--format", "json", "--report",
               tmp_path / "r.json")
    assert made.returncode == 1, made.stderr[-2000:]
    rep = json.loads((tmp_path / "r.json").read_text())
    s = rep["summary"]
    assert s["unwaived_disagreements"] >= 1
    r = _tp("report", tmp_path / "r.json")
    assert r.returncode == 1, r.stderr
    new = s["unwaived_disagreements"]
    head = _closing(rep)
    if s["declared_disagreements"]:
        head = head.replace(f"({s['declared_disagreements']} declared)",
                            f"({s['declared_disagreements']} declared, {new} new)")
    else:
        head = head.replace(f"{s['parameters']['disagree']} disagree,",
                            f"{s['parameters']['disagree']} disagree ({new} new),")
    assert r.stdout.rstrip("\n").split("\n")[-1] == (
        head + f"; {new} failing ({new} unwaived disagreements) — exit 1")


# ----------------------------------------------------------------------------- untrusted input
def _forged(rep: dict, change) -> dict:
    doc = json.loads(json.dumps(rep))
    change(doc)
    return doc


FORGERIES = {
    "a wall time that is not a number": (
        lambda d: d["summary"].update(wall_time_s="fast"), "summary/wall_time_s"),
    "a verdict no record can hold": (
        lambda d: d["cases"][0]["parameters"][0].update(verdict="maybe"), "cases/0"),
    "a version cell with a tag that is no tag": (
        lambda d: d["versions"]["ops"][0]["versions"][0]["cells"][0].update(tag={}),
        "versions/ops/0/versions/0/cells/0/tag"),
    "a band count that is a string": (
        lambda d: next(iter(d["versions"]["summary"]["by_band"].values())).update(versions="1"),
        "versions/summary/by_band"),
    "an exit code its summary contradicts": (
        lambda d: d["summary"].update(unwaived_disagreements=1),
        "its records give"),
    "a count its records contradict": (
        lambda d: d["summary"]["parameters"].update(agree=d["summary"]["parameters"]["agree"] + 1),
        "summary/parameters says"),
    "a proof record where a report should be": (
        lambda d: d.update(kind="proof"), "not a batch-report document (kind 'proof')"),
}


@pytest.mark.parametrize("name", list(FORGERIES))
def test_a_forged_report_is_refused_in_one_line_before_anything_is_written(small, tmp_path, name,
                                                                           capsys):
    change, needle = FORGERIES[name]
    saved = tmp_path / "forged.json"
    saved.write_text(json.dumps(_forged(small["report"], change)))
    out = tmp_path / "page.html"
    code, stdout, err = _main(capsys, "report", saved, "--format", "html", "--report", out)
    assert code == 2 and stdout == ""
    assert err.startswith(f"torch-prover report: REPORT.json {saved}: ") and needle in err
    assert err.count("\n") == 1 and not out.exists()


@pytest.mark.parametrize("content, needle", [
    (b"{", "not JSON"), (b"\xff\xfe\x00", "not UTF-8"),
    (b"[" * 100000, "nested too deeply"), (b"[]", "not a batch-report document (kind None)")])
def test_a_broken_file_is_refused_in_one_line(tmp_path, content, needle, capsys):
    saved = tmp_path / "r.json"
    saved.write_bytes(content)
    code, out, err = _main(capsys, "report", saved, "--format", "markdown")
    assert (code, out) == (2, "") and needle in err and err.count("\n") == 1


def test_a_missing_file_or_a_directory_is_named(tmp_path, capsys):
    assert "no such file" in _main(capsys, "report", tmp_path / "none.json")[2]
    assert "is a directory, not a regular file" in _main(capsys, "report", tmp_path)[2]


def test_the_output_is_checked_before_the_input_is_read(small, tmp_path, capsys):
    """Never the input file, nor a Markdown report's details file on it; an output error
    comes first even when the input is broken too."""
    saved = tmp_path / "run.json"
    shutil.copy(small["root"] / "run.json", saved)
    before = saved.read_bytes()
    code, _, err = _main(capsys, "report", saved, "--format", "text", "--report", saved)
    assert code == 2 and "is the REPORT.json file this run reads" in err
    assert saved.read_bytes() == before
    details = tmp_path / "pr-details.md"
    details.symlink_to(saved)
    code, _, err = _main(capsys, "report", saved, "--format", "markdown", "--report",
                         tmp_path / "pr.md")
    assert code == 2 and "--report (its details file)" in err
    assert "is a symlink" in err and not (tmp_path / "pr.md").exists()
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    code, _, err = _main(capsys, "report", broken, "--report", tmp_path)
    assert code == 2 and "is a directory; give a file name" in err


def test_verify_all_and_merge_check_the_details_file_before_any_work(small, tmp_path, no_work,
                                                                     capsys):
    (tmp_path / "pr-details.md").mkdir()
    for command in (["verify-all", "--ops", "Abs", "--no-write", "--no-cache"],
                    ["merge", small["root"] / "run.json"]):
        code, _, err = _main(capsys, *command, "--format", "markdown", "--report",
                             tmp_path / "pr.md")
        assert code == 2 and "--report (its details file)" in err and "is a directory" in err


# ----------------------------------------------------------------------------- the limit
def test_fit_keeps_the_whole_when_it_fits_and_the_rows_in_order_when_not():
    whole = "x" * 100
    assert fit(whole, [], "d", "d.md", limit=100).body == whole
    blocks = [Block(("# title", "pointer")), Block(("| a |",), tuple(f"| row {i} |" for i in
                                                                     range(40)), after=("",))]
    split = fit("y" * 500, blocks, "all of it", "d.md", limit=200)
    lines = split.body.split("\n")
    assert len(split.body) <= 200 and split.details == "all of it" and split.full_length == 500
    rows = [x for x in lines if x.startswith("| row")]
    assert rows == [f"| row {i} |" for i in range(len(rows))] and 0 < len(rows) < 40
    assert f"... and {40 - len(rows)} more rows in `d.md`." in lines
    with pytest.raises(ValueError):
        fit("z" * 500, [Block(("w" * 300,))], "", "d.md", limit=200)
    assert details_path(Path("out/pr.md")) == Path("out/pr-details.md")


def _disagreeing(rep: dict) -> set[str]:
    """``Op-version io index`` of every disagreeing parameter the report's records hold."""
    return {f"`{r['op']}`-{r.get('schema_version')} {p['io']} {p['index']} `{p['name']}`"
            for r in rep["cases"] for p in r["parameters"] if p["verdict"] == "disagree"}


def _check_split(body: str, details: Path, rep: dict) -> None:
    assert len(body) <= PR_BODY_LIMIT
    whole = details.read_text()
    assert len(whole) > PR_BODY_LIMIT and whole.startswith(body.split("\n", 1)[0])
    assert f"`{details.name}`" in body and f"The whole report is {len(whole):,} characters" in body
    for row in _disagreeing(rep):   # every disagreement keeps its row in the body
        assert row in body and row in whole


def test_every_markdown_report_of_a_full_run_fits_or_is_split(full_run, tmp_path):
    """verify-all (stdout and --report), merge of its shards, and report: GitHub's limit;
    the evidence's README.md (the index a full run writes) within it whole."""
    assert len((full_run["out"] / "README.md").read_text()) <= PR_BODY_LIMIT
    rep, cache = full_run["report"], full_run["root"] / "cache"
    common = ["verify-all", "--no-write", "--cache-dir", cache]
    printed = _tp(*common, "--format", "markdown")
    assert printed.returncode == 0 and len(printed.stdout) <= PR_BODY_LIMIT
    written = _tp(*common, "--format", "markdown", "--report", tmp_path / "pr.md")
    body = (tmp_path / "pr.md").read_text()
    if (tmp_path / "pr-details.md").exists():
        _check_split(body, tmp_path / "pr-details.md", rep)
        assert printed.stdout == body.replace("`pr-details.md` (beside this file)",
                                              "the details file (`--report FILE` writes it "
                                              "beside FILE)")
        assert "stdout has its summary" in printed.stderr and "over GitHub's" in written.stderr
    else:
        assert printed.stdout == body and printed.stderr == ""
    for k in (1, 2):
        assert _tp(*common, "--shard", f"{k}/2", "--format", "json", "--report",
                   tmp_path / f"s{k}.json").returncode == 0
    merged = _tp("merge", tmp_path / "s1.json", tmp_path / "s2.json", "--format", "markdown",
                 "--report", tmp_path / "merged.md")
    assert merged.returncode == 0 and (tmp_path / "merged.md").read_text() == body.replace(
        "pr-details.md", "merged-details.md")


def test_an_all_versions_markdown_report_is_split(versions_run, tmp_path):
    saved = tmp_path / "all.json"
    saved.write_text(json.dumps(versions_run["report"]))
    r = _tp("report", saved, "--format", "markdown", "--report", tmp_path / "pr.md")
    assert r.returncode == versions_run["exit"], r.stderr
    _check_split((tmp_path / "pr.md").read_text(), tmp_path / "pr-details.md",
                 versions_run["report"])
    assert "## Schema versions (all)" in (tmp_path / "pr.md").read_text()


def test_proofs_past_the_limit_print_one_line_each(full_run):
    """prove --all and run --format markdown: whole within the limit, else a line per proof."""
    from torch_prover.output.markdown_summary import proofs_on_stdout
    from torch_prover.output.report import proof_markdown
    recs = [r for r in full_run["report"]["cases"] if r["status"] not in ("error", "no-tags")]
    few = [(r, proof_markdown(r)) for r in recs[:2]]
    assert proofs_on_stdout(few, "hint") == ("".join(t for _, t in few), [])
    text, notes = proofs_on_stdout([(r, proof_markdown(r)) for r in recs], "hint")
    assert len(text) <= PR_BODY_LIMIT and len(notes) == 1 and "hint" in notes[0]
    for r in recs[:50]:
        assert f"- `{r['op']}` / `{r['case']}`: {r['status']}" in text


def test_prove_markdown_within_the_limit_is_unchanged(tmp_path):
    r = _tp("prove", "Reshape", "--format", "markdown", "--no-write", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("### Differentiability proof: `Reshape`")
    assert "markdown:" not in r.stderr and len(r.stdout) <= PR_BODY_LIMIT


# ----------------------------------------------------------------------------- HTML
def test_the_versions_table_is_part_of_the_page(small):
    from torch_prover.output.html_versions import CODES
    page, rep = small["printed"]["html"], small["report"]
    main = page[page.index("<main>"):page.index("</main>")]
    assert page.count("<main>") == page.count("</main>") == 1
    assert '<section id="versions">' in main and page.count('id="versions"') == 1
    nav = re.search(r'<nav aria-label="report sections">(.*?)</nav>', page).group(1)
    assert '<a href="#versions">schema versions</a>' in nav
    legend = re.search(r'<div class="vlegend">(.*?)</div>', main).group(1)
    shown = re.findall(r'<span class="vc [^"]+">([^<]+)</span>', legend)
    assert [html.unescape(x) for x in shown] == [code for code, _, _ in CODES]
    # each cell's colour is its verdict in the report (GridSample-16's grid: disagree)
    for o in rep["versions"]["ops"]:
        for e in o["versions"]:
            for c in e["cells"]:
                label = f"{o['op']}-{e['version']} {'in' if c['io'] == 'input' else 'out'} {c['name']}"
                cell = re.search(r'<td class="vc vc-([a-z]+)[^"]*" title="' + re.escape(label)
                                 + r': tag', main)
                assert cell and cell.group(1) == c["verdict"], label


def test_the_header_counts_the_variants(small, versions_run):
    """The cache card counts cases and version variants: N of M proofs, never negative."""
    from torch_prover.output.html_report import render_html
    for rep in (small["report"], versions_run["report"]):
        s, variants = rep["summary"], len(rep["versions"]["cases"])
        total = s["cases"] + variants
        want = (f"{s['cache_hits']} of {total} proofs from the cache ({s['cases']} cases and "
                f"{variants} version variants), {total - s['cache_hits']} proved in this run")
        assert want in render_html(rep)
    assert "#versions" not in render_html({**small["report"], "versions": None})


def test_the_browser_check_finds_what_it_checks(small):
    """scripts/check_html_report.py's versions check, on what its probe reports (CI has no
    browser: the probe's readings are given here)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    try:
        import check_html_report as check
    finally:
        sys.path.pop(0)
    from torch_prover.output.html_versions import CODES
    from torch_prover.output.versions_report import notable
    rep = small["report"]
    tables = sum(bool(notable(o)) for o in rep["versions"]["ops"])
    cell = {"bg": "rgb(220, 252, 231)", "w": 30, "h": 20}
    good = {"section": True, "visible": True, "inMain": True, "navLink": True,
            "afterClickTop": 0.3, "hash": "#versions", "tables": tables,
            "legend": [c for c, _, _ in CODES],
            "cells": {"vc-agree": cell, "vc-disagree": {**cell, "bg": "rgb(254, 202, 202)"},
                      "vc-proposed": {**cell, "bg": "rgb(237, 233, 254)"}}}
    assert check.check_versions(good, rep) == []
    for change, needle in ((dict(navLink=False), "no link to #versions"),
                           (dict(afterClickTop=900.0), "lands 900.0 px"),
                           (dict(visible=False), "not visible"),
                           (dict(legend=["D"]), "the legend lacks"),
                           (dict(cells={**good["cells"], "vc-disagree": cell}), "same colour"),
                           (dict(cells={"vc-agree": cell}), "no disagree cell")):
        found = check.check_versions({**good, **change}, rep)
        assert any(needle in p for p in found), (change, found)
    page = check.probe_copy(small["printed"]["html"])
    assert page.count("<script>") == 2 and page.endswith("</body></html>\n")
    assert check.probe_result(page) is None


# ----------------------------------------------------------------------------- docs
def test_docs_example_report_text(small, tmp_path):
    """The docs do not change with the machine that made them: `report` shows no wall time."""
    (tmp_path / "report.json").write_text(json.dumps(small["report"]))
    r = _tp("report", "report.json", cwd=tmp_path)
    assert_example("report-text", "$ torch-prover report report.json\n" + r.stdout)


def test_docs_examples(small, versions_run, tmp_path):
    (tmp_path / "all.json").write_text(json.dumps(versions_run["report"]))
    r = _tp("report", "all.json", "--format", "markdown", "--report", "pr.md", cwd=tmp_path)
    assert_example("report-markdown-split", "$ torch-prover report all.json --format markdown "
                   "--report pr.md > /dev/null\n" + r.stderr)
    body = (tmp_path / "pr.md").read_text().split("\n")
    assert_example("report-markdown-body", "$ head -n 12 pr.md\n" + "\n".join(body[:12]))
    r = _tp("report", "all.json", cwd=tmp_path)
    assert_example("report-closing-line", "$ torch-prover report all.json | tail -n 1\n"
                   + r.stdout.rstrip("\n").split("\n")[-1])
    forged = _forged(small["report"], lambda d: d["summary"].update(unwaived_disagreements=1))
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    r = _tp("report", "forged.json", "--format", "html", "--report", "page.html", cwd=tmp_path)
    assert_example("report-refused", "$ torch-prover report forged.json --format html --report "
                   f"page.html; echo \"exit $?\"\n{r.stderr}exit {r.returncode}")
