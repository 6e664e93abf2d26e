"""A verdict's convention goes wherever the verdict goes (issue 33), and every decided cell
reaches fix-tags: equivalence below opset 7 and by type carry the label, a case-less
by-type cell is planned, the types decide a parameter a failed variant would have
exercised, equivalence looks past Single/Optional and the ``name...`` spelling, and a cell
cites the proofs that decided it apart from the others.

Expectations come from the schemas (onnx.defs: options, names, types) and the records'
own declarations, never from the table under test.
"""
from __future__ import annotations

import onnx.defs

from fix_report import SRC, param, record
from torch_prover.batch import versions as v
from torch_prover.batch.version_table import table
from torch_prover.conventions import Convention
from torch_prover.engine.rules.by_type import type_reason
from torch_prover.fix.locate import read_tree
from torch_prover.fix.plan import Withheld, findings, plan, report_records
from torch_prover.tags.schema import schema_tags

DIFF, NONDIFF, UNKNOWN = "differentiable", "non-differentiable", "unknown"
OPT = onnx.defs.OpSchema.FormalParameterOption


def _p(io, index, name, tag, verdict, supports, rule="both witnesses", **extra):
    return {"io": io, "index": index, "name": name, "tag": tag, "verdict": verdict,
            "supports": supports, "rule": rule, "reason": f"{rule}: {supports}", **extra}


def _rec(op, case, version, opset, params, base=None, failure=None):
    rec = {"kind": "proof", "op": op, "domain": "", "case": case, "opset": opset,
           "schema_version": version, "status": "proved", "parameters": params,
           **({"variant_of": base} if base else {})}
    if failure:
        rec.update({"kind": "failed-case", "status": "error", "error": "it failed",
                    "failure": failure, "parameters": []})
    return rec


def _entry(section, op, version):
    return next(e for o in section["ops"] if o["op"] == op for e in o["versions"]
                if e["version"] == version)


def _cell(section, op, version, io, name):
    return next((c for c in _entry(section, op, version)["cells"]
                 if (c["io"], c["name"]) == (io, name)), None)


def _bn7_record():
    """BatchNormalization-7 at opset 8, as the training case's variant records it: the
    statistics outputs under the 'state output' convention without precedent (the math
    decides, differentiable), X decided by the math alone."""
    unfounded = {"rule": "convention without precedent", "convention": "state output"}
    return _rec("BatchNormalization", "batchnormalization_training@8", 7, 8, [
        _p("input", 0, "X", UNKNOWN, "proposed", DIFF),
        _p("output", 1, "mean", UNKNOWN, "proposed", DIFF, **unfounded),
        _p("output", 3, "saved_mean", UNKNOWN, "proposed", DIFF, **unfounded)],
        base="batchnormalization_training")


def test_an_equivalence_cell_carries_its_basis_convention_and_fix_tags_withholds_it():
    """BatchNormalization-1 and -6's mean output are BatchNormalization-7's (same io,
    position, name, option, types: onnx.defs); -7's verdict rests on a convention, so theirs
    does too: labelled, and withheld from the patch, never written as the math's."""
    for old in (1, 6):
        f = schema_tags("BatchNormalization", old, "").formal("output", 1)
        g = schema_tags("BatchNormalization", 7, "").formal("output", 1)
        assert (f.name, f.option, set(f.types) <= set(g.types)) == (g.name, g.option, True)
    section = table([_bn7_record()], [], v.Selection("range", 1, 8), ("BatchNormalization",))
    for old in (1, 6):
        assert _entry(section, "BatchNormalization", old)["decided_by"] == "equivalence"
        for name in ("mean", "saved_mean"):
            cell = _cell(section, "BatchNormalization", old, "output", name)
            assert cell["basis"] == "BatchNormalization-7", cell
            assert cell["convention"] == "state output", cell
        x = _cell(section, "BatchNormalization", old, "input", "X")
        assert x["basis"] == "BatchNormalization-7" and "convention" not in x
    doc = {"cases": [], "versions": {**section, "cases": [_bn7_record()]}}
    the_plan = plan(read_tree(SRC), findings(report_records(doc)))
    withheld = {(f.version, f.name): why for f, why, _ in the_plan.withheld}
    for version in (1, 6, 7):
        assert withheld[version, "mean"] is Withheld.CONVENTION
        assert withheld[version, "saved_mean"] is Withheld.CONVENTION
    assert not [f for e in the_plan.edits for f in e.findings if f.conventions]


def test_a_by_type_cell_resting_on_float8_storage_is_labelled():
    """DequantizeLinear-19's x_zero_point allows float8 types beside int8/uint8/int32: it is
    non-differentiable only if float8 is quantized storage (the convention); -13's allows
    integers only: by type alone."""
    new = schema_tags("DequantizeLinear", 19, "").formal("input", 2)
    old = schema_tags("DequantizeLinear", 13, "").formal("input", 2)
    assert any(t.startswith("tensor(float8") for t in new.types)
    assert all(t.startswith(("tensor(int", "tensor(uint")) for t in old.types)
    why_new = type_reason(schema_tags("DequantizeLinear", 19, ""), new,
                          outputs_from_inputs=True)
    why_old = type_reason(schema_tags("DequantizeLinear", 13, ""), old,
                          outputs_from_inputs=True)
    assert why_new.convention is Convention.QUANTIZED_STORAGE
    assert why_old is not None and why_old.convention is None
    section = table([], [], v.Selection("range", 13, 19), ("DequantizeLinear",),
                    case_less={"DequantizeLinear"})
    assert _cell(section, "DequantizeLinear", 19, "input", "x_zero_point")[
        "convention"] == "quantized storage"
    assert "convention" not in _cell(section, "DequantizeLinear", 13, "input", "x_zero_point")


def test_a_case_less_by_type_cell_is_planned_never_absent():
    """NonMaxSuppression-10 has no case and no record; its only output is int64
    (onnx.defs), so every input is decided by type: each reaches the planner (here the
    fixture sources have no NonMaxSuppression block, so each is 'not located', named)."""
    assert [o.type_str for o in onnx.defs.get_schema("NonMaxSuppression", 10, "").outputs] \
        == ["tensor(int64)"]
    section = table([], [], v.Selection("range", 10, 10), ("NonMaxSuppression",),
                    case_less={"NonMaxSuppression"})
    doc = {"cases": [], "versions": {**section, "cases": []}}
    found = findings(report_records(doc))
    names = [p.name for p in onnx.defs.get_schema("NonMaxSuppression", 10, "").inputs]
    mine = {k: f for k, f in found.items() if k[:3] == ("NonMaxSuppression", "", 10)}
    assert sorted(f.name for f in mine.values() if f.io == "input") == sorted(names)
    assert all(c.case == "by type" and c.supports == NONDIFF
               for f in mine.values() for c in f.cases)
    the_plan = plan(read_tree(SRC), found)
    placed = {f.key for f, *_ in the_plan.unlocated} | {f.key for f, *_ in the_plan.withheld} \
        | {f.key for e in the_plan.edits for f in e.findings}
    assert set(mine) <= placed


def test_a_report_without_versions_plans_its_case_less_ops_by_type_rows():
    """A default report: a case-less op's by-type rows (``ops[].parameters``) are planned."""
    rows = [_p("input", 0, "boxes", UNKNOWN, "proposed", NONDIFF, "by type")]
    doc = {"cases": [record("Relu", 14, "relu_basic",
                            param("input", 0, "X", DIFF, "agree", DIFF))],
           "ops": [{"op": "NonMaxSuppression", "schema_version": 11, "parameters": rows}]}
    found = findings(report_records(doc))
    assert found[("NonMaxSuppression", "", 11, "input", 0)].cases[0].case == "by type"


def test_the_types_decide_a_parameter_a_failed_variant_would_have_exercised():
    """Scatter-11's indices allows int32 and int64 only (onnx.defs): non-differentiable by
    type, whether or not the variant that would exercise it failed; its float data stays
    inconclusive, naming the failure."""
    assert set(schema_tags("Scatter", 11, "").formal("input", 1).types) == {
        "tensor(int32)", "tensor(int64)"}
    failed = _rec("Scatter", "scatter_opset10@11", None, 11, [], base="scatter_opset10",
                  failure="case error")
    section = table([failed], [], v.Selection("range", 11, 11), ("Scatter",),
                    targets={"scatter_opset10@11": 11})
    indices = _cell(section, "Scatter", 11, "input", "indices")
    assert (indices["rule"], indices["supports"]) == ("by type", NONDIFF)
    data = _cell(section, "Scatter", 11, "input", "data")
    assert (data["verdict"], data["rule"]) == ("inconclusive", "variant failed")


def test_equivalence_looks_past_single_optional_and_the_variadic_spelling():
    """GRU-1's Y_h is Single where GRU-7's is Optional; Split-1's output is spelled
    ``outputs...`` where Split-2's is ``outputs`` (onnx.defs): the same value, the same
    math, so the old versions take the proved ones' support."""
    y_h = [o for o in onnx.defs.get_schema("GRU", 1, "").outputs if o.name == "Y_h"][0]
    y_h7 = [o for o in onnx.defs.get_schema("GRU", 7, "").outputs if o.name == "Y_h"][0]
    assert (y_h.option, y_h7.option) == (OPT.Single, OPT.Optional)
    out1 = onnx.defs.get_schema("Split", 1, "").outputs[0]
    out2 = onnx.defs.get_schema("Split", 2, "").outputs[0]
    assert (out1.name, out2.name) == ("outputs...", "outputs")
    assert out1.option == out2.option == OPT.Variadic
    gru = _rec("GRU", "gru_h0_bias@13", 7, 13, [
        _p("input", 0, "X", UNKNOWN, "proposed", DIFF),
        _p("output", 1, "Y_h", UNKNOWN, "proposed", DIFF)], base="gru_h0_bias")
    split = _rec("Split", "split_sizes@10", 2, 10, [
        _p("input", 0, "input", UNKNOWN, "proposed", DIFF),
        _p("output", 0, "outputs", UNKNOWN, "proposed", DIFF),
        _p("output", 1, "outputs", UNKNOWN, "proposed", DIFF)], base="split_sizes")
    section = table([gru, split], [], v.Selection("range", 1, 13), ("GRU", "Split"))
    cell = _cell(section, "GRU", 1, "output", "Y_h")
    assert (cell["basis"], cell["supports"]) == ("GRU-7", DIFF)
    cell = _cell(section, "Split", 1, "output", "outputs...")
    assert (cell["basis"], cell["supports"]) == ("Split-2", DIFF)


def test_a_cell_cites_the_proofs_that_decided_it_apart_from_the_others():
    """Max-6: one variant decides data_0; another reached it with an inconclusive verdict
    (its forward failed): the cell's cases are the deciding one, the other listed apart."""
    decided = _rec("Max", "max_ties@7", 6, 7, [
        _p("input", 0, "data_0", UNKNOWN, "proposed", DIFF)], base="max_ties")
    undecided = _rec("Max", "max_broadcast@7", 6, 7, [
        _p("input", 0, "data_0", UNKNOWN, "inconclusive", None, "not exercised")],
        base="max_broadcast")
    section = table([decided, undecided], [], v.Selection("range", 6, 7), ("Max",))
    cell = _cell(section, "Max", 6, "input", "data_0")
    assert (cell["cases"], cell["not_deciding"]) == (["max_ties@7"], ["max_broadcast@7"])


def unlabelled_cells(report: dict) -> list[str]:
    """Every cell of a report's versions table whose basis chain holds a convention and that
    does not carry it: an equivalence cell whose basis cell is labelled, or a proved cell
    one of whose deciding records' parameters names a convention (the one check
    test_versions_faithful.py runs over a whole all-versions run)."""
    section = report["versions"]
    cells = {(o["op"], e["version"], c["io"], c["index"]): c
             for o in section["ops"] for e in o["versions"] for c in e["cells"]}
    records = {r["case"]: r for r in [*report["cases"], *section.get("cases", [])]}
    out = []
    for (op, version, io, index), c in cells.items():
        if c.get("basis"):
            basis_version = int(c["basis"].rsplit("-", 1)[1])
            basis = cells.get((op, basis_version, io, index)) or {}
            named = {basis["convention"]} if basis.get("convention") else set()
        else:
            named = {p["convention"] for n in c.get("cases") or () if n in records
                     for p in records[n].get("parameters") or ()
                     if (p["io"], p["index"]) == (io, index) and p.get("convention")
                     and p.get("verdict") in ("agree", "disagree", "proposed")}
        if named and c.get("convention") != ", ".join(sorted(named)):
            out.append(f"{op}-{version} {io} {index} ({c['name']}): {sorted(named)}")
    return out


def test_the_whole_table_check_finds_an_unlabelled_equivalence():
    section = table([_bn7_record()], [], v.Selection("range", 1, 8), ("BatchNormalization",))
    doc = {"cases": [], "versions": {**section, "cases": [_bn7_record()]}}
    assert unlabelled_cells(doc) == []
    for o in section["ops"]:
        for e in o["versions"]:
            for c in e["cells"]:
                if e["version"] == 1:
                    c.pop("convention", None)
    assert unlabelled_cells(doc) == [
        "BatchNormalization-1 output 1 (mean): ['state output']",
        "BatchNormalization-1 output 3 (saved_mean): ['state output']"]


def test_no_cell_of_an_all_versions_run_rests_on_a_convention_unlabelled(versions_run):
    """Over the whole versions table of the suite's all-versions run: no cell whose basis
    chain holds a convention is unlabelled; BatchNormalization-1 and -6's statistics
    outputs and the saved statistics are among the labelled (issue 33)."""
    report = versions_run["report"]
    assert unlabelled_cells(report) == []
    section = report["versions"]
    labelled = {(o["op"], e["version"], c["io"], c["name"]) for o in section["ops"]
                for e in o["versions"] for c in e["cells"] if c.get("convention")}
    for version in (1, 6, 7):
        for name in ("mean", "var", "saved_mean", "saved_var"):
            assert ("BatchNormalization", version, "output", name) in labelled, (version, name)


def test_every_acted_cell_of_an_all_versions_run_is_planned(versions_run, tmp_path):
    """Every disagreeing or proposed cell of the suite's all-versions run reaches fix-tags'
    plan -- edited, withheld with its reason, or not located with its reason (the fixture
    sources hold few blocks) -- and none that carries a convention is edited."""
    import json
    from torch_prover.batch.report_io import load_report
    path = tmp_path / "report.json"
    path.write_text(json.dumps(versions_run["report"]))
    records = report_records(load_report(str(path), what="--report"))
    the_plan = plan(read_tree(SRC), findings(records))
    placed = {(f.op, f.version, f.io, f.name) for e in the_plan.edits for f in e.findings}
    assert not [f for e in the_plan.edits for f in e.findings if f.conventions]
    placed |= {(f.op, f.version, f.io, f.name) for f, *_ in the_plan.withheld}
    placed |= {(f.op, f.version, f.io, f.name) for f, *_ in the_plan.unlocated}
    absent = [(o["op"], e["version"], c["io"], c["name"])
              for o in versions_run["report"]["versions"]["ops"] for e in o["versions"]
              for c in e["cells"] if c["verdict"] in ("disagree", "proposed")
              and (o["op"], e["version"], c["io"], c["name"]) not in placed]
    assert absent == []
