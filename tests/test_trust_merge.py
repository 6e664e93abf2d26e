"""merge accepts only shards that are slices of one real run (issue 28, findings 1, 6, 7, 14).

The shards are real verify-all reports (conftest ``real_report``: Abs, Clip, Pad and Relu,
dealt round-robin in name order: shard 1 holds Abs and Pad, shard 2 Clip and Relu).
Every attack below is an edit a person or a script could make to such a report; each must
be refused in one line, exit 2, before any work, and the honest shards still merge.
Expectations come from the attack itself (what was changed), never from merge's output.
"""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_lines import one_line_exit_2

from torch_prover import cli

OPS = "Abs,Clip,Pad,Relu"


@pytest.fixture
def shards(real_report, tmp_path):
    """Copies of the two honest shards' JSON reports (tests edit them)."""
    paths = []
    for k in (1, 2):
        p = tmp_path / f"s{k}.json"
        p.write_bytes(real_report(OPS, "--shard", f"{k}/2").read_bytes())
        paths.append(p)
    return paths


def _edit(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _merge(*paths, extra=()):
    return cli.main(["merge", *map(str, paths), *extra])


def test_honest_shards_merge(shards, capsys):
    assert _merge(*shards, extra=("--format", "json")) in (0, 1)
    merged = json.loads(capsys.readouterr().out)
    assert sorted({r["op"] for r in merged["cases"]}) == OPS.split(",")


def test_shards_made_with_waivers_merge_to_the_one_run(real_report, tmp_path_factory, capsys):
    """The waivers travel in the provenance: merged, they are applied as the run did."""
    waivers = tmp_path_factory.mktemp("waivers") / "waivers.toml"
    waivers.write_text('[[waiver]]\nop = "Pad"\nparameter = "constant_value"\n'
                       'reason = "tracked"\n')
    whole = json.loads(real_report(OPS, "--waivers", str(waivers)).read_text())
    parts = [str(real_report(OPS, "--waivers", str(waivers), "--shard", f"{k}/2"))
             for k in (1, 2)]
    assert cli.main(["merge", *parts, "--format", "json"]) == whole["exit_code"]
    merged = json.loads(capsys.readouterr().out)
    for rep in (whole, merged):
        rep["summary"].pop("wall_time_s")
        rep["summary"].pop("cache_hits")
    assert merged == whole and merged["summary"]["waived"] and merged["onnx_points"]["cells"]


# ----------------------------------------------------------------------------- finding 1
def test_merge_report_naming_an_input_shard_is_refused(shards, capsys):
    """`merge s1 s2 --report s1` overwrote the shard (often a CI job's only copy)."""
    before = shards[0].read_bytes()
    code = _merge(*shards, extra=("--report", str(shards[0])))
    one_line_exit_2(capsys, code, "--report", "REPORT")
    assert shards[0].read_bytes() == before


# ----------------------------------------------------------------------------- finding 6
def _records(doc):
    return doc["cases"]


def _first_case_of(doc, op):
    return next(r for r in doc["cases"] if r["op"] == op)


def _disagreeing(doc):
    return next((r, p) for r in doc["cases"] for p in r["parameters"]
                if p["verdict"] == "disagree")


def _drop_first(doc):
    doc["cases"].pop(0)


def _duplicate_first(doc):
    doc["cases"].append(copy.deepcopy(doc["cases"][0]))


def _relabel_case(doc):
    """Relu's record relabelled as Abs's (another op's case, same shard position)."""
    rec = _first_case_of(doc, "Relu")
    rec["op"], rec["case"] = "Abs", "abs_basic"


def _relabel_to_foreign_case(doc):
    doc["cases"][0]["case"] = doc["cases"][0]["case"] + "_v2"


def _inject_waiver(doc):
    waiver = {"op": "Clip", "parameter": "min", "reason": "injected", "case": None}
    doc["provenance"]["waivers"].append(waiver)
    doc["shard"]["waivers"].append(waiver)


def _edited_to_agree(doc):
    """A disagreeing row edited to agree, its status to proved."""
    rec, p = _disagreeing(doc)
    p["verdict"], p["supports"] = "agree", p["tag"]
    p.pop("expected", None)
    rec["status"] = "proved"


def _contradicting_row(doc):
    """A row whose tag, support and verdict contradict each other."""
    rec, p = _disagreeing(doc)
    p["tag"], p["supports"], p["verdict"] = "differentiable", "non-differentiable", "agree"


def _numeric_claimed(doc):
    """A --no-numeric shard's provenance edited to say numeric checks ran."""
    doc["provenance"]["request"]["numeric"] = True


@pytest.mark.parametrize("shard, attack, words", [
    (1, _drop_first, ("case", "missing")),
    (1, _duplicate_first, ("twice",)),
    (2, _relabel_case, ("case",)),
    (1, _relabel_to_foreign_case, ("case",)),
    (2, _inject_waiver, ("provenance", "waivers")),
    (2, _edited_to_agree, ("clip_",)),
    (2, _contradicting_row, ("clip_",)),
])
def test_an_edited_shard_is_refused(shards, capsys, shard, attack, words):
    _edit(shards[shard - 1], attack)
    one_line_exit_2(capsys, _merge(*shards), "merge", *words)


def test_shards_of_different_ops_selections_are_refused(shards, real_report, tmp_path, capsys):
    """Clip's shard from `--ops Clip,Relu` beside shard 1 of `--ops Abs,Clip,Pad,Relu`: Clip
    would be counted twice, Pad and Abs would go missing."""
    other = tmp_path / "other.json"
    other.write_bytes(real_report("Clip,Relu", "--shard", "1/2").read_bytes())
    assert {r["op"] for r in json.loads(other.read_text())["cases"]} == {"Clip"}
    one_line_exit_2(capsys, _merge(shards[1], other), "provenance", "request.ops")


def test_a_no_numeric_shard_is_refused(shards, real_report, tmp_path, capsys):
    lazy = tmp_path / "lazy.json"
    lazy.write_bytes(real_report(OPS, "--shard", "2/2", "--no-numeric").read_bytes())
    one_line_exit_2(capsys, _merge(shards[0], lazy), "provenance", "numeric")
    _edit(lazy, _numeric_claimed)   # and one that says it ran them: its records say not
    one_line_exit_2(capsys, _merge(shards[0], lazy), "no numeric check")


# ----------------------------------------------------------------------------- finding 14
def _set_count(value):
    def change(doc):
        doc["shard"]["count"] = value
    return change


def _record_as_string(doc):
    doc["cases"][0] = "abs_basic"


def _record_without_case(doc):
    del doc["cases"][0]["case"]


def _opset_in_words(doc):
    doc["cases"][0]["opset"] = "eleven"


def _no_summary(doc):
    del doc["summary"]


def _verdict_maybe(doc):
    doc["cases"][0]["parameters"][0]["verdict"] = "maybe"


@pytest.mark.parametrize("attack, words", [
    (_set_count("3"), ("shard/count",)),
    (_set_count(2.0), ("not whole numbers",)),
    (_set_count(float("nan")), ("NaN",)),
    (_set_count(10 ** 11), ("shard/count",)),
    (_record_as_string, ("cases/0",)),
    (_record_without_case, ("cases/0",)),
    (_opset_in_words, ("cases/0",)),
    (_no_summary, ("summary",)),
    (_verdict_maybe, ("cases/0",)),
])
def test_a_malformed_shard_is_one_line_before_anything_is_read(shards, capsys, attack, words):
    _edit(shards[0], attack)
    one_line_exit_2(capsys, _merge(*shards), "merge", str(shards[0]), *words)


def test_a_forged_shard_count_allocates_nothing(shards, capsys):
    """3*10**7 shards: the check used to build the list 1..count (1.4 GB)."""
    import tracemalloc
    for p in shards:
        _edit(p, _set_count(3 * 10 ** 7))
    tracemalloc.start()
    try:
        code = _merge(*shards)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    one_line_exit_2(capsys, code, "shard/count")
    assert peak < 200 * 2 ** 20, peak


# ----------------------------------------------------------------------------- finding 7
def _verify(cwd: Path, cache: Path, *extra: str) -> int:
    cp = subprocess.run([sys.executable, "-m", "torch_prover", "verify-all", "--ops", "Abs,Relu",
                         "--no-write", "--cache-dir", str(cache), "--format", "json",
                         "--tags-from", "docs.md", *extra], cwd=cwd, capture_output=True,
                        text=True, timeout=900)
    assert cp.returncode in (0, 1), cp.stderr[-2000:]
    return cp.returncode


def test_merge_reads_no_file_but_the_reports(tmp_path, monkeypatch, capsys):
    """Shards made with `--tags-from docs.md` (a relative path): merged from another
    directory after docs.md changed, the result is still the one run's, exit code
    included: merge re-checks the records against the text the shards carry."""
    from fix_report import DOCS, docs_with_input_tag
    run_dir, cache = tmp_path / "ci", tmp_path / "cache"
    run_dir.mkdir()
    (run_dir / "docs.md").write_bytes(DOCS.read_bytes())
    whole_code = _verify(run_dir, cache, "--report", "whole.json")
    for k in (1, 2):
        _verify(run_dir, cache, "--shard", f"{k}/2", "--report", f"s{k}.json")
    docs_with_input_tag(run_dir / "docs.md", ("Relu", "Abs"), "non-differentiable")
    elsewhere = tmp_path / "merge-job"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code = _merge(run_dir / "s1.json", run_dir / "s2.json", extra=("--format", "json"))
    merged = json.loads(capsys.readouterr().out)
    whole = json.loads((run_dir / "whole.json").read_text())
    assert code == whole_code
    for rep in (whole, merged):
        rep["summary"].pop("wall_time_s")
        rep["summary"].pop("cache_hits")
    assert merged == whole


def test_a_shard_whose_tags_text_was_edited_is_refused(shards, capsys):
    def change(doc):
        doc["provenance"]["tags"]["text"] = "# Operator Schemas\n"
    for p in shards:
        _edit(p, change)
    one_line_exit_2(capsys, _merge(*shards), "merge", "tags")


def test_merge_of_a_whole_run_is_refused(real_report, tmp_path, capsys):
    whole = tmp_path / "whole.json"
    whole.write_bytes(real_report("Relu").read_bytes())
    one_line_exit_2(capsys, _merge(whole), "not a shard")


def test_a_report_of_another_torch_prover_is_refused(shards, capsys):
    for p in shards:
        _edit(p, lambda d: d["provenance"]["torch_prover"].update(source="0" * 64))
    one_line_exit_2(capsys, _merge(*shards), "another torch-prover")


# ----------------------------------------------------------------------------- docs/safety.md
def test_safety_examples(shards, tmp_path, monkeypatch, capsys):
    from docs_examples import assert_example
    monkeypatch.chdir(tmp_path)
    for k, p in enumerate(shards, 1):
        p.rename(tmp_path / f"shard-{k}.json")
    argv = ["merge", "shard-1.json", "shard-2.json", "--report", "shard-1.json"]
    assert cli.main(argv) == 2
    assert_example("safety-report-is-input", "$ torch-prover " + " ".join(argv) + "\n"
                   + capsys.readouterr().err)
    _edit(tmp_path / "shard-2.json", _edited_to_agree)
    argv = ["merge", "shard-1.json", "shard-2.json"]
    assert cli.main(argv) == 2
    assert_example("safety-merge-edited", "$ torch-prover " + " ".join(argv) + "\n"
                   + capsys.readouterr().err)
