"""Text and Markdown renderings (report.py), from hand-written records: widths, verdict
words, Markdown escaping, ops not run collapsed to one line."""
from __future__ import annotations

import re

import pytest

from torch_prover.batch import summary
from torch_prover.output import batch_report, report
from torch_prover.engine.rules.verdict import VERDICTS

PIPE_REASON = ("x received a nonzero gradient (max |grad| 2.01); finite differences agree in "
               "onnxruntime (rel err 8e-11), checked on seeds 0 and 1 with a 1e-6 step")


def _param(io, index, name, source, evidence, tag, verdict, reason):
    return {"io": io, "index": index, "name": name, "source": source, "evidence": evidence,
            "tag": tag, "verdict": verdict, "reason": reason,
            "rule": "not exercised" if verdict == "inconclusive" else "both witnesses"}


def record(op="Reshape", case="reshape_basic", verdicts=("agree", "agree", "agree")):
    return {"kind": "proof", "format": 3, "op": op, "case": case, "case_kind": "natural", "exporter": "dynamo",
            "opset": 25, "schema_version": 25, "latest_schema_version": 25, "status": "proved",
            "numeric": None, "model": {"sha256": "ab" * 32},
            "versions": {"torch": "2.13.0+cpu", "onnx": "1.23.2"},
            "parameters": [
                _param("input", 0, "data", "x", "grad", "differentiable", verdicts[0], PIPE_REASON),
                _param("input", 1, "shape", "constant int64", "constant", "non-differentiable",
                       verdicts[1], "a constant of type int64 folded into the graph: cannot "
                                    "carry a gradient"),
                _param("output", 0, "reshaped", "output 0", "grad", "differentiable", verdicts[2],
                       "output 0: its dy reaches an input as a nonzero gradient")]}


def two_op_batch():
    """Reshape and Floor run; three more ops have cases but were not selected; one has none."""
    coverage = [{"op": op, "status": "covered", "cases": []}
                for op in ("Abs", "Add", "Floor", "Reshape", "Tanh")]
    coverage.append({"op": "StringConcat", "status": "missing", "reason_category": "string op",
                     "reason": "PyTorch has no string tensors | none at all"})
    recs = [record(), record("Floor", "floor_basic", ("agree", "inconclusive", "agree"))]
    return summary.batch_report(recs, coverage, 1.5)


@pytest.mark.parametrize("width", [80, 120])
def test_text_table_fits_the_width_and_says_the_verdict(width):
    text = report.proof_text(record(verdicts=("agree", "inconclusive", "proposed")), width)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width, text
    rows = [line for line in lines if line.startswith(("input ", "output "))]
    for row, verdict in zip(rows, ("agree", "inconclusive", "proposed")):
        assert verdict in row.split() and "ok" not in row.split()
    # the reason is wrapped, never cut or rewritten: its words come back in order
    assert PIPE_REASON in " ".join(text.split())


def test_text_reason_wraps_under_itself_when_wide_enough():
    lines = report.proof_text(record(), 120).splitlines()
    header = next(line for line in lines if line.startswith("param"))
    col = header.index("reason")
    first = next(i for i, line in enumerate(lines) if line.startswith("input 0"))
    assert lines[first][col:].startswith("x received")
    assert lines[first + 1][:col].strip() == "" and lines[first + 1][col:].strip()


def test_every_verdict_word_is_rendered_as_is():
    for v in VERDICTS:
        rows = [line for line in report.proof_text(record(verdicts=(v, v, v)), 80).splitlines()
                if line.startswith(("input ", "output "))]  # 80: the reason is on its own lines
        assert len(rows) == 3 and all(row.split()[-1] == v for row in rows)


def test_batch_text_fits_and_collapses_ops_not_run():
    rep = two_op_batch()
    for width in (80, 120):
        text = batch_report.batch_text(rep, width)
        assert max(len(line) for line in text.splitlines()) <= width
        rows = {line.split()[0] for line in text.splitlines() if line[:1].isalpha()}
        assert {"Floor", "Reshape"} <= rows and not {"Abs", "Add", "Tanh"} & rows
        assert "3 ops not run in this batch: Abs, Add, Tanh" in text
        assert text.count("not run") == 1
        assert "1 op without a case: StringConcat" in text


def test_markdown_escapes_pipes_and_keeps_the_cell_count():
    md = report.proof_markdown(record())
    row = next(line for line in md.splitlines() if line.startswith("| input 0"))
    assert "max \\|grad\\| 2.01" in row and "/grad/" not in md
    cells = re.split(r"(?<!\\)\|", row)[1:-1]
    assert len(cells) == 6 and cells[-1].strip().replace("\\|", "|") == PIPE_REASON


def test_batch_markdown_collapses_ops_not_run():
    md = batch_report.batch_markdown(two_op_batch())
    table = [line for line in md.splitlines() if line.startswith("| `")]
    assert [re.split(r"(?<!\\)\|", r)[1].strip() for r in table] == [
        "`Floor`", "`Reshape`", "`StringConcat`"]
    assert all(len(re.split(r"(?<!\\)\|", r)) == 5 for r in table)
    assert "string op: PyTorch has no string tensors \\| none at all" in md
    assert "3 ops not run in this batch: Abs, Add, Tanh" in md
    assert md.count("not run") == 1


def test_full_catalogue_two_op_batch_has_one_not_run_line():
    from torch_prover.output.coverage import coverage
    entries = coverage()
    rep = summary.batch_report([record(), record("Floor", "floor_basic")], entries, 1.0)
    # a batch that decides no case-less op leaves the by-type ones "not run" too
    covered = sum(e["status"] in ("covered", "by type") for e in entries)
    md, text = batch_report.batch_markdown(rep), batch_report.batch_text(rep, 100)
    assert f"{covered - 2} ops not run in this batch: Abs, " in md
    assert f"{covered - 2} ops not run in this batch (`torch-prover coverage OP`" in text
    assert "| not run |" not in md and " not run " not in text.replace("ops not run in", "")


def test_every_op_status_is_in_the_one_list():
    base = record()
    statuses = set()
    for case_status, verdict in (("error", "agree"), ("no-tags", "agree"), ("invalid", "agree"),
                                 ("disagree", "disagree"), ("proved", "proposed"),
                                 ("disagree", "declared"),
                                 ("inconclusive", "inconclusive"), ("proved", "agree")):
        declared = verdict == "declared"   # a disagreement its case declares: not failing
        verdict = "disagree" if declared else verdict
        r = dict(base, status=case_status, error="e",
                 invalid="i" if case_status == "invalid" else None, parameters=[
                     dict(p, verdict=verdict, **({"expected": {"verdict": "disagree",
                                                               "reason": "known"}}
                                                 if declared else {}))
                     for p in base["parameters"]])
        statuses.add(summary.op_status([r])[0])
    rep = two_op_batch()
    statuses |= {o["status"] for o in rep["ops"]}
    from torch_prover.output.coverage import coverage
    entries = coverage()   # a case-less op decided by type: "by type"
    rep = summary.batch_report([], entries, 1.0,
                               case_less_ops=summary.case_less(entries, {"StringSplit"}))
    statuses |= {o["status"] for o in rep["ops"]}
    assert statuses == set(batch_report.OP_STATUSES)
