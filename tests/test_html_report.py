"""html_report.render_html is pure and self-contained: checked without a browser.

(scripts/check_html_report.py is the browser check; CI has no Chromium.)
"""
from __future__ import annotations

import copy
import re
from html.parser import HTMLParser

import pytest

from torch_prover.output import batch_report as report_mod, html_report
from torch_prover.output.html_report import diagram_svg, render_html

EVIL = "<script>alert('x')</script>"


@pytest.fixture(scope="module")
def report(proof_of):
    topk = proof_of("topk_values_indices").record()
    reshape = proof_of("reshape_basic").record()
    bad = copy.deepcopy(topk)
    bad["case"] = "topk_handmade"
    bad["status"] = "disagree"
    out1 = next(p for p in bad["parameters"] if p["io"] == "output" and p["index"] == 1)
    out1.update(tag="differentiable", verdict="disagree", reason=f"int64 output {EVIL} & more")
    invalid = copy.deepcopy(reshape)
    invalid.update(case="reshape_ambiguous", status="invalid",
                   invalid="Reshape/reshape_ambiguous: x feeds input 0 and input 1")
    failed = {"format": 1, "op": "Einsum", "case": "einsum_broken", "status": "error",
              "error": f"export failed {EVIL}", "parameters": []}
    cases = [reshape, topk, bad, invalid, failed]
    ops = [{"op": "Reshape", "status": "invalid", "reason": "one case is invalid"},
           {"op": "TopK", "status": "disagrees", "reason": f"output 1 disagrees {EVIL}"},
           {"op": "Einsum", "status": "error", "reason": "its only case failed"},
           {"op": "StringConcat", "status": "missing", "reason": "string op: no tensor gradient"},
           {"op": "<img src=x onerror=alert(1)>", "status": "missing", "reason": "hostile name"},
           {"op": "Abs", "status": "not run", "reason": "not selected in this run"},
           {"op": "Mod", "status": "no tags", "reason": "not in Operators.md"}]
    return {"format": 1, "summary": {
        "ops_total": 5, "ops_covered": 3, "cases": 5,
        "parameters": {"agree": 10, "disagree": 1, "proposed": 0, "inconclusive": 0},
        "invalid_cases": 1, "failed_cases": 1, "wall_time_s": 12.3},
        "cases": cases, "ops": ops}


@pytest.fixture(scope="module")
def page(report):
    return render_html(report)


class _Checker(HTMLParser):
    """Tracks tag balance (void elements aside) and collects tags/attributes."""
    VOID = {"meta", "input", "br", "img", "hr", "link", "path", "line", "circle", "rect"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.tags = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def test_is_balanced_html(page):
    assert page.startswith("<!DOCTYPE html>")
    c = _Checker()
    c.feed(page)
    assert c.errors == [] and c.stack == []
    assert sum(t == "script" for t, _ in c.tags) == 1  # only ours
    assert not any(t == "img" for t, _ in c.tags)


def test_every_op_is_a_row(page, report):
    """Every op the batch ran or found is a row; the ops it did not select are one line
    (issue 42: a 3-op report listed 200 "not selected" rows)."""
    ran = [o for o in report["ops"] if o["status"] != "not run"]
    skipped = [o["op"] for o in report["ops"] if o["status"] == "not run"]
    assert skipped
    for o in ran:
        assert re.search(r'<tbody class="op" id="op-[^"]*" data-status="%s"' % o["status"], page)
    assert page.count('<tbody class="op"') == len(ran)
    assert f'{len(skipped)} op{"s" if len(skipped) > 1 else ""} not run in this batch (not ' \
           f'selected): {", ".join(skipped)}</p>' in page
    for name in ("Reshape", "TopK", "Einsum", "StringConcat"):
        assert f'id="op-{name}"' in page


def test_data_is_escaped(page):
    assert EVIL not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_no_network_assets(page):
    assert "http://" not in page and "https://" not in page
    assert not re.search(r'\b(src|href)\s*=\s*"(?!#)', page)  # only in-page links
    assert "url(" not in page and "@import" not in page


def test_svg_per_covered_op(page, report):
    rows = re.findall(r'<tbody class="op".*?</tbody>', page, flags=re.S)
    by_op = {re.search(r'id="op-([^"]*)"', r).group(1): r for r in rows}
    for op in ("Reshape", "TopK"):
        assert '<svg class="flow"' in by_op[op]
    for op in ("Einsum", "StringConcat"):  # no evidence, no diagram
        assert "<svg" not in by_op[op]


def test_disagreements_come_first(page):
    dis = page.index("<h2>Disagreements")
    assert dis < page.index("<h2>Failed and invalid cases") < page.index("<h2>Operators")
    section = page[dis:page.index("<h2>Failed")]
    assert "topk_handmade" in section and "not declared: needs a decision" in section
    assert "evidence" in section and "int64 output" in section
    rows = re.findall(r'data-status="([^"]+)"', page)
    assert rows[0] == "disagrees" and rows[-1] == "missing"


def test_failed_and_invalid_listed(page):
    broken = page[page.index("<h2>Failed"):page.index("<h2>Operators")]
    assert "einsum_broken" in broken and "reshape_ambiguous" in broken
    assert "x feeds input 0 and input 1" in broken


def test_summary_and_filters(page):
    assert 'id="q"' in page and 'id="st"' in page
    assert '<option value="disagrees">disagrees (1)</option>' in page
    assert "12<small> s</small>" in page and "3<small>/5</small>" in page


def test_diagram_arrow_styles():
    params = [
        {"io": "input", "index": 0, "name": "data", "source": "x", "evidence": "grad",
         "tag": "differentiable", "verdict": "agree", "reason": "r"},
        {"io": "input", "index": 1, "name": "shape", "source": "constant int64",
         "evidence": "constant", "tag": "non-differentiable", "verdict": "agree", "reason": "r"},
        {"io": "output", "index": 0, "name": "out", "source": "output 0", "evidence": "integer",
         "tag": "differentiable", "verdict": "disagree", "reason": "r"}]
    svg = diagram_svg("Reshape", params)
    assert svg.count('class="arrow ') == 3
    assert 'class="arrow ev-grad"' in svg and 'stroke="#2563eb"' in svg
    assert 'class="arrow ev-constant"' in svg and "stroke-dasharray" in svg
    assert "vdot v-disagree" in svg and ">Reshape</text>" in svg
    assert "_label" not in params[0]  # inputs are not mutated


def test_variadic_labels_and_tolerance():
    params = [{"io": "input", "index": i, "name": "inputs", "source": s, "evidence": "grad",
               "tag": "differentiable", "verdict": "agree", "reason": ""}
              for i, s in enumerate("abc")]
    assert ">inputs[2]</text>" in diagram_svg("Concat", params)
    # a minimal report (missing optional keys) still renders
    page = render_html({"format": 1, "cases": [], "ops": [{"op": "Abs", "status": "missing"}]})
    assert 'id="op-Abs"' in page and "No parameter disagrees" in page
    for anchor in ("disagreements", "broken", "operators"):  # the header's links resolve
        assert f'<section id="{anchor}">' in page


CSS_IDENT = re.compile(r"-?[_a-zA-Z][_a-zA-Z0-9-]*")


def test_every_class_is_a_valid_css_identifier(page):
    c = _Checker()
    c.feed(page)
    classes = [a["class"] for _, a in c.tags if "class" in a]
    assert len(classes) > 50
    for value in classes:
        assert value == value.strip() and "  " not in value, value
        for name in value.split():
            assert CSS_IDENT.fullmatch(name), f"class {name!r} in class={value!r}"
    assert 'class="badge s-not-run"' in page and 'class="badge s-no-tags"' in page
    assert "s-not run" not in page and "s-no tags" not in page


def test_legend_lists_every_status_from_the_one_list(page):
    assert html_report.OP_STATUSES is report_mod.OP_STATUSES  # one list, not two
    legend = re.search(r'<div class="legend">(.*?)</div></div></header>', page, flags=re.S).group(1)
    shown = re.findall(r'<span class="badge s-([a-z-]+)">([^<]+)</span>', legend)
    assert [text for _, text in shown] == list(report_mod.OP_STATUSES)
    assert ("not-run", "not run") in shown and ("no-tags", "no tags") in shown
    for _, text in shown:  # every status can also be filtered on
        assert f'data-filter="{text}"' in legend
    # the ops not selected are one line under the table, not rows: the filter offers them not
    assert '<option value="not run">' not in page and 'id="not-run"' in page
    # a status outside the list (a newer report) still gets a legend entry and a valid class
    odd = render_html({"format": 1, "cases": [], "ops": [{"op": "X", "status": "on hold!"}]})
    assert 'class="badge s-on-hold">on hold!</span>' in odd
