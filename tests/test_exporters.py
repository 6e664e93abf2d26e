"""Proving without the TorchScript exporter (engine/exporters.py, --no-torchscript).

The full comparison over the catalogue is scripts/compare_exporters.py; here a few ops
that take each path: a TorchScript case with a declared dynamo way (Softplus), glue and
op adapters below opset 13 (Unsqueeze's axes input), a version-specific adapter with a
case valid at every version (Dropout), a sampling op with no input whose dynamo way is a
reference (RandomUniform), Loop, whose v_initial only TorchScript reached until a dynamo
case carried x first, and Softmax, whose axis-1 case runs below opset 13 only through
TorchScript (declared for a run without it).
"""
import onnx.defs
import pytest

from torch_prover.batch import verify
from torch_prover.batch.exporter_compare import compare, decided_cells
from torch_prover.batch.versions import Selection, plan
from torch_prover.cases import all_cases, cases_for, find_case
from torch_prover.engine import exporters

SUBSET = "Softplus,Unsqueeze,Dropout,RandomUniform,Loop,Softmax"


def _report(**kw):
    request = verify.Request(ops=SUBSET, versions="all", out=None, cache_dir=None, **kw)
    return verify.run(verify.prepare(request)).report


@pytest.fixture(scope="module")
def both():
    return _report(), _report(torchscript=False)


def test_without_torchscript_the_same_cells_get_the_same_answers(both):
    with_ts, without = both
    assert with_ts["exporters"] == {"torchscript": True, "left_out": []}
    assert without["exporters"]["torchscript"] is False
    result = compare(with_ts, without)
    assert result.base_decided == len(decided_cells(with_ts)) > 0
    assert not result.different, result.lines()
    assert not result.undecided, result.lines()
    # a variant that only TorchScript exports faithfully fails without it, declared
    assert without["versions"]["summary"]["undeclared_failures"] == 0
    assert {(f["case"], f["version"]) for f in without["versions"]["summary"]["failed_variants"]
            if f["case"].startswith("softmax_axis1")} == {("softmax_axis1@10", 1),
                                                          ("softmax_axis1@12", 11)}
    assert not with_ts["versions"]["summary"]["failed_variants"]


def test_a_dynamo_case_declares_what_fails_without_torchscript():
    """Softmax-1 and -11 coerce the input to 2-D at their axis (their schema's text);
    softmax_axis1 normalizes along axis 1 of a 3-D input, which TorchScript reaches by
    transposing it last, the relabelled opset-18 node does not: its failures there are
    declared for a run without TorchScript only."""
    assert "coerced into one" in onnx.defs.get_schema("Softmax", 11).doc
    case = find_case("Softmax", "softmax_axis1")
    assert case.exporter == "dynamo" and not case.fails_at
    way = exporters.dynamo_only(case)
    assert sorted(way.fails_at) == [1, 11] and way.exporter == "dynamo"
    assert way.opset == case.opset


def test_both_reports_keep_the_json_contract(both):
    """The batch report's ``exporters`` and the records' ``adaptations`` are described by
    the shipped schemas."""
    from json_contract import problems
    for rep in both:
        assert not problems(rep)


def test_without_torchscript_no_record_comes_from_it(both):
    _, without = both
    records = without["cases"] + without["versions"]["cases"]
    assert records and all(r["exporter"] == "dynamo" for r in records if "exporter" in r)
    relabelled = [r for r in records if r.get("route") == "relabelled"]
    assert any(a["op"] == "Unsqueeze" and a["from"] == 13 and a["to"] == 11
               for r in relabelled for a in r.get("adaptations", []))


def test_the_default_is_dynamo_only_where_torch_lacks_torchscript(monkeypatch):
    """No flag, no TorchScript exporter: the run proves with dynamo, no error; a TorchScript
    case without a dynamo way is left out and named."""
    monkeypatch.setattr(exporters, "torchscript_available", lambda: False)
    prepared = verify.prepare(verify.Request(ops="Softplus,Loop", out=None, cache_dir=None))
    assert prepared.torchscript is False
    assert all(c.exporter == "dynamo" for c in prepared.cases)
    scripted = [c.name for c in cases_for("Loop") if c.exporter == "torchscript"]
    assert scripted and set(prepared.left_out) == set(scripted)


def test_asking_for_torchscript_where_torch_lacks_it_is_no_error(monkeypatch):
    monkeypatch.setattr(exporters, "torchscript_available", lambda: False)
    assert verify.exporter_mode(True, [])[0] is False


def test_the_capability_is_probed_not_read_from_a_version():
    """torch 2.13 (constraints.txt) still exports with TorchScript."""
    assert exporters.torchscript_available() is True


def test_no_variant_routes_through_torchscript_without_it():
    _, cases, _ = verify.exporter_mode(False, list(all_cases()))
    planned = plan(cases, Selection("all"), torchscript=False)
    assert planned and all(p.case.exporter == "dynamo" for p in planned if p.case)
    below = [p.case for p in planned if p.case and p.case.export_opset < 18
             and not p.case.translation]
    assert below and all(c.origin == ("dynamo", 18) for c in below)


def test_coverage_shows_the_plan_without_torchscript(capsys):
    from docs_examples import assert_example

    from torch_prover import cli
    args = ["coverage", "Dropout", "DepthToSpace", "Softplus", "--versions", "all",
            "--no-torchscript"]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert " to@" not in out.split("\n", 1)[1]   # no TorchScript route after the legend
    assert_example("coverage-no-torchscript", "$ torch-prover " + " ".join(args) + "\n" + out)


def test_prove_without_torchscript_takes_the_dynamo_way(monkeypatch, capsys):
    """Where torch lacks the TorchScript exporter, prove proves a TorchScript case its dynamo
    way, and refuses in one line (exit 2, before any work) one that has none."""
    from torch_prover import cli
    monkeypatch.setattr(exporters, "torchscript_available", lambda: False)
    assert cli.main(["prove", "Softplus", "--no-write", "--format", "json"]) == 0
    assert '"exporter": "dynamo"' in capsys.readouterr().out
    assert cli.main(["prove", "Loop", "--case", "loop_scripted_for", "--no-write"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "loop_scripted_for" in err and "TorchScript" in err


def test_an_undecided_cell_says_the_other_reports_typed_failure():
    """Why the TorchScript-free report left a cell undecided comes from its own typed
    failures (``failed_variants``: case, kind, reason), or the cases it left out; a failure
    of a case that does not decide the cell is not its reason."""
    def cell(case):
        return {"io": "input", "index": 0, "verdict": "agree", "supports": "differentiable",
                "cases": [case]}
    base = {"versions": {"ops": [{"op": "Softmax", "versions": [
        {"version": 1, "cells": [cell("softmax_axis1@10")]},
        {"version": 11, "cells": [cell("softmax_ts@12")]},
        {"version": 13, "cells": [cell("softmax_basic")]}]}]}}
    other = {"exporters": {"torchscript": False, "left_out": ["softmax_ts"]},
             "versions": {"ops": [{"op": "Softmax", "versions": [
                 {"version": v, "cells": []} for v in (1, 11, 13)]}],
                 "summary": {"failed_variants": [
                     {"case": "softmax_axis1@10", "op": "Softmax", "version": 1,
                      "kind": "not a run of its version", "reason": "Softmax-1 coerces to 2-D",
                      "declared": None},
                     {"case": "softmax_other@13", "op": "Softmax", "version": 13,
                      "kind": "no model", "reason": "refused", "declared": None}]}}}
    why = dict(compare(base, other).undecided)
    assert why == {
        ("Softmax", 1, "input", 0): "softmax_axis1@10: not a run of its version: "
                                    "Softmax-1 coerces to 2-D",
        ("Softmax", 11, "input", 0): "TorchScript case left out (no dynamo way): softmax_ts",
        ("Softmax", 13, "input", 0): "no variant of it decided it"}
