"""The HTML report in a real browser (issue 42): axe-core finds no critical, serious or
moderate violation -- on a 3-op report and on the all-versions report -- and a
disagreement card's op link opens that op's evidence when clicked.

How: axe-core (the engine browsers' devtools use) in Debian's Chromium, driven by
Playwright with ``executable_path`` (tests/axe_page.py says where each piece comes from;
``.ci/run`` installs them where the machine allows). Where one is missing, each test is
skipped with a reason naming what is missing and how to get it -- pytest's ``-ra`` (the
project's addopts) prints it in the summary of every run: never a silent skip.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

import axe_page
from torch_prover.output.html_report import render_html

BLOCKING = ("critical", "serious", "moderate")
THREE_OPS = "Mod,Bernoulli,Relu"
"""A declared disagreement (Mod), an inconclusive op (Bernoulli: its chip is the one whose
contrast failed) and a proved one (Relu)."""


@pytest.fixture(scope="module")
def browser():
    lacking = axe_page.missing()
    if lacking:
        pytest.skip("NOT RUN: the HTML report's accessibility test needs "
                    + "; ".join(lacking) + " (.ci/run provides them where it can)")
    with axe_page.Page() as page:
        yield page


def _report_html(tmp_path, report_json) -> object:
    """The page ``torch-prover report --format html`` writes for a saved report."""
    out = tmp_path / "report.html"
    cp = subprocess.run([sys.executable, "-m", "torch_prover", "report", str(report_json),
                         "--format", "html", "--report", str(out)], capture_output=True,
                        text=True, timeout=600)
    assert cp.returncode in (0, 1), cp.stderr[-2000:]
    return out


def _blocking(violations: list[dict]) -> list[dict]:
    return [v for v in violations if v["impact"] in BLOCKING]


def test_a_three_op_report_has_no_blocking_axe_violation(browser, real_report, tmp_path):
    page = _report_html(tmp_path, real_report(THREE_OPS))
    browser.open(page)
    found = browser.axe()
    assert _blocking(found) == [], axe_page.by_impact(found)


@pytest.mark.shared_run("versions_run")   # made on the worker of the other versions_run tests
def test_the_all_versions_report_has_no_blocking_axe_violation(browser, request, tmp_path):
    report = request.getfixturevalue("versions_run")["report"]   # only when a browser runs
    page = tmp_path / "versions.html"
    page.write_text(render_html(report), encoding="utf-8")
    browser.open(page)
    found = browser.axe()
    assert _blocking(found) == [], axe_page.by_impact(found)


def test_a_cards_op_link_opens_its_evidence_on_click(browser, real_report, tmp_path):
    """Clicking the op of a disagreement card (no deep link at load) opens that op's
    evidence, even when the filters hid it."""
    browser.open(_report_html(tmp_path, real_report(THREE_OPS)))
    p = browser.page
    details = p.locator("#op-Mod details")
    assert details.evaluate("d => d.open") is False
    p.select_option("#st", "proved")          # Mod is hidden by the status filter
    assert p.locator("#op-Mod").is_hidden()
    p.click("article.dis a.opname-link")
    p.wait_for_function("document.querySelector('#op-Mod details').open")
    assert p.locator("#op-Mod").is_visible()
    p.locator("#op-Mod details").evaluate("d => { d.open = false; }")
    p.click("article.dis a.opname-link")      # the same hash again: no hashchange event
    p.wait_for_function("document.querySelector('#op-Mod details').open")
