"""Reliability round 5 (issue 35), part A: a saved report's fields that `report` and
`merge` show are re-derived or refused (docs/safety.md), and a bad field is named as
itself.

The reports are real (``real_report``: this torch-prover's verify-all); each test edits one
field of one record as a forger would and expects `report` to refuse it, exit 2, naming the
case -- the expectation is the edit itself, not the output under test.
"""
from __future__ import annotations

import json

import pytest

from torch_prover import cli


def _edited(real_report, tmp_path, change):
    doc = json.loads(real_report("Relu").read_text())
    change(doc)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    return path


def _report(capsys, path) -> tuple[int, str]:
    code = cli.main(["report", str(path)])
    return code, capsys.readouterr().err


def _first_param(doc):
    return doc["cases"][0]["parameters"][0]


EDITS = {
    "reason": lambda d: _first_param(d).update(reason="forged: the op is smooth everywhere"),
    "witness detail": lambda d: _first_param(d)["witnesses"]["numeric"].update(
        detail="smooth at 1000 points"),
    "parameter name": lambda d: _first_param(d).update(name="Forged"),
}


def test_the_unedited_report_renders(real_report, capsys):
    code, err = _report(capsys, real_report("Relu"))
    assert code == 0, err


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_problem_05_fields_no_recheck_covered_are_refused(real_report, tmp_path, capsys,
                                                          edit):
    code, err = _report(capsys, _edited(real_report, tmp_path, EDITS[edit]))
    assert code == 2
    (line,) = err.splitlines()
    case = json.loads(real_report("Relu").read_text())["cases"][0]["case"]
    assert f"case {case}: input 0:" in line, line


def test_problem_21_a_bad_field_is_named_as_itself(real_report, tmp_path, capsys):
    """A proof row given a field no proof has: named as that field of the row, not as the
    failed-case branch's 'format: 1 was expected'."""
    path = _edited(real_report, tmp_path, lambda d: d["cases"][0].update(cached="yes"))
    code, err = _report(capsys, path)
    assert code == 2
    (line,) = err.splitlines()
    assert "cases/0: Additional properties are not allowed ('cached' was unexpected)" in line
    assert "was expected" not in line.replace("was unexpected", "")


FORGED_RUN = {"wall_time_s": 86399.25, "cache_hits": 1}
"""A run's statements about itself that no record holds, forged (a day; one proof from the
cache): schema-valid, so only the rule "what no re-check covers is not shown" stops them."""


def _printed(capsys, argv) -> str:
    capsys.readouterr()
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return out


@pytest.mark.parametrize("fmt", ["text", "markdown", "html", "json"])
def test_problem_05_what_no_record_holds_is_not_shown(real_report, tmp_path, capsys, fmt):
    """``summary.wall_time_s`` and ``summary.cache_hits`` come from no record, so no re-check
    covers them: a forged value must not reach what `report` prints -- the forged report
    prints exactly what the real one does, and neither shows the forged numbers."""
    real = real_report("Relu")
    forged = _edited(real_report, tmp_path, lambda d: d["summary"].update(FORGED_RUN))
    shown = [_printed(capsys, ["report", str(p), "--format", fmt]) for p in (real, forged)]
    assert shown[0] == shown[1]
    assert "86399" not in shown[1] and "1 from the cache" not in shown[1]
    if fmt == "json":
        summary = json.loads(shown[1])["summary"]
        assert (summary["wall_time_s"], summary["cache_hits"]) == (None, None)


def test_problem_05_merge_shows_no_run_statement_of_its_shards(real_report, tmp_path, capsys):
    """merge: the shards' forged wall times and cache counts reach neither the merged JSON
    report nor its --junit (no ``time``: junit-10.xsd's attribute is optional)."""
    shards = []
    for k in (1, 2):
        doc = json.loads(real_report("Abs,Relu", "--shard", f"{k}/2").read_text())
        doc["summary"].update(FORGED_RUN)
        shards.append(tmp_path / f"s{k}.json")
        shards[-1].write_text(json.dumps(doc))
    junit = tmp_path / "junit.xml"
    merged = json.loads(_printed(capsys, ["merge", *map(str, shards), "--format", "json",
                                          "--junit", str(junit), "--no-github"]))
    assert (merged["summary"]["wall_time_s"], merged["summary"]["cache_hits"]) == (None, None)
    assert "86399" not in junit.read_text()
    assert ' time="' not in junit.read_text()
