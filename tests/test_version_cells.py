"""The per-version cells (batch/version_table.py) on hand-written records: which variant a
cell rests on, failed variants, the cross-version self-check, by-type rows, and what
fix-tags may act on.

Expectations come from the issue's rules and the schemas: Resize's ``roi`` "only takes
effect when coordinate_transformation_mode is tf_crop_and_resize" (its description), so
cases in other modes declare it unexercised; its name, type constraint (T2: float16,
float, double) and description (only extended in Resize-18) are the same in Resize-11 and
-18; NonMaxSuppression's only output is int64, so every input is non-differentiable by
type.
"""
from __future__ import annotations


import onnx.defs
import pytest

from torch_prover.batch import versions as v
from torch_prover.batch.summary import exit_code
from torch_prover.batch.version_table import Declarations, table

DIFF, NONDIFF, UNKNOWN = "differentiable", "non-differentiable", "unknown"


def _p(io, index, name, tag, verdict, supports, rule="both witnesses", evidence="grad"):
    return {"io": io, "index": index, "name": name, "tag": tag, "verdict": verdict,
            "supports": supports, "rule": rule, "reason": f"{rule}: {supports}",
            "evidence": evidence}


def _rec(op, case, version, opset, params, status="proved", base=None):
    return {"kind": "proof", "op": op, "domain": "", "case": case, "opset": opset,
            "schema_version": version, "status": status, "parameters": params,
            **({"variant_of": base} if base else {})}


def _error(op, case, opset, failure, base, error="it failed"):
    return {"kind": "failed-case", "op": op, "domain": "", "case": case, "opset": opset,
            "status": "error", "error": error, "failure": failure, "parameters": [],
            "variant_of": base}


def _resize(version, opset, case, roi, base):
    """A Resize variant record: X and Y differentiable, roi as given."""
    return _rec("Resize", case, version, opset, [
        _p("input", 0, "X", UNKNOWN if version < 13 else DIFF,
           "proposed" if version < 13 else "agree", DIFF),
        roi,
        _p("output", 0, "Y", UNKNOWN if version < 13 else DIFF,
           "proposed" if version < 13 else "agree", DIFF)], base=base)


ROI_IGNORED = {"resize_bilinear_scale": frozenset({("input", "roi")})}
CROP_EXERCISES = {"resize_crop_roi": frozenset({("input", "X"), ("input", "roi"),
                                                ("output", "Y")})}


def _section(records, decl=None, ops=("Resize",), selection=None, case_less=()):
    return table(records, [], selection or v.Selection("range", 11, 12), ops,
                 declarations=decl, case_less=case_less)


def _cell(section, op, version, name):
    entry = next(e for o in section["ops"] if o["op"] == op for e in o["versions"]
                 if e["version"] == version)
    return next((c for c in entry["cells"] if c["name"] == name), None), entry


def test_roi_rests_only_on_the_variant_that_exercises_it_and_names_its_failure():
    """Resize-11: the bilinear variant's numeric witness says roi is flat (its mode ignores
    roi), the crop variant -- the one that uses it -- failed onnx.checker."""
    assert "tf_crop_and_resize" in next(
        p for p in onnx.defs.get_schema("Resize", 11, "").inputs if p.name == "roi").description
    records = [
        _resize(11, 12, "resize_bilinear_scale@12",
                _p("input", 1, "roi", UNKNOWN, "proposed", NONDIFF, "numeric witness only",
                   "constant"), "resize_bilinear_scale"),
        _error("Resize", "resize_crop_roi@12", 12, "case error", "resize_crop_roi",
               "onnx.checker rejects the exported model: input 2 is marked single")]
    decl = Declarations(unexercised=ROI_IGNORED, exercised=CROP_EXERCISES)
    section = _section(records, decl)
    roi, entry = _cell(section, "Resize", 11, "roi")
    assert (roi["verdict"], roi["supports"], roi["rule"]) == ("inconclusive", None,
                                                              "variant failed")
    assert roi["cases"] == ["resize_crop_roi@12"] and "marked single" in roi["reason"]
    x, _ = _cell(section, "Resize", 11, "X")
    assert (x["verdict"], x["supports"]) == ("proposed", DIFF)   # exercised by both
    assert entry["decided_by"] == "failed" and "resize_crop_roi@12" in entry["reason"]
    (failed,) = section["summary"]["failed_variants"]
    assert (failed["case"], failed["version"], failed["kind"], failed["declared"]) == (
        "resize_crop_roi@12", 11, "no model", None)
    assert section["summary"]["undeclared_failures"] == 1
    assert exit_code({"summary": _quiet(), "versions": section}) == 1

    # declared (Case.fails_at): listed with its reason, the version proved by the others,
    # roi still not decided by a case that ignores it; the run does not fail on it
    declared = Declarations(fails_at={"resize_crop_roi": {11: "why not"}},
                            unexercised=ROI_IGNORED, exercised=CROP_EXERCISES)
    section = _section(records, declared)
    roi, entry = _cell(section, "Resize", 11, "roi")
    assert roi["verdict"] == "inconclusive" and entry["decided_by"] == "proved"
    assert section["summary"]["failed_variants"][0]["declared"] == "why not"
    assert exit_code({"summary": _quiet(), "versions": section}) == 0

    # once the crop variant runs, roi rests on it alone
    records[1] = _resize(11, 12, "resize_crop_roi@12",
                         _p("input", 1, "roi", UNKNOWN, "proposed", DIFF), "resize_crop_roi")
    roi, entry = _cell(_section(records, decl), "Resize", 11, "roi")
    assert (roi["verdict"], roi["supports"], roi["cases"]) == ("proposed", DIFF,
                                                               ["resize_crop_roi@12"])
    assert entry["decided_by"] == "proved"


def _quiet():
    """A batch summary with nothing failing (the versions section alone decides)."""
    return {"unwaived_disagreements": 0, "by_type": {"unwaived_disagreements": 0},
            "failed_cases": 0, "invalid_cases": 0, "unexpected_inconclusive": 0}


def test_resize_roi_decided_two_ways_is_flagged_in_both_versions():
    """Today's report: Resize-11 roi non-differentiable (from cases that ignore it, no
    declaration), Resize-18 differentiable (the crop case)."""
    records = [
        _resize(11, 12, "resize_bilinear_scale@12",
                _p("input", 1, "roi", UNKNOWN, "proposed", NONDIFF, "numeric witness only",
                   "constant"), "resize_bilinear_scale"),
        _resize(18, 18, "resize_crop_roi@18",
                _p("input", 1, "roi", NONDIFF, "disagree", DIFF), "resize_crop_roi")]
    section = _section(records, selection=v.Selection("range", 11, 18))
    for version, other in ((11, "Resize-18"), (18, "Resize-11")):
        roi, _ = _cell(section, "Resize", version, "roi")
        assert (roi["verdict"], roi["supports"], roi["rule"], roi["failing"]) == (
            "inconclusive", None, "versions disagree", True)
        assert other in roi["reason"]
    assert section["summary"]["versions_disagree"] == 2
    x11, _ = _cell(section, "Resize", 11, "X")
    assert x11["verdict"] == "proposed"   # X agrees across versions: untouched


def test_a_parameter_whose_types_changed_is_not_compared_across_versions():
    """Clip-12 added integer types to T: Clip-11's min and Clip-13's are not the same
    parameter for the self-check."""
    t11 = next(c for c in onnx.defs.get_schema("Clip", 11, "").type_constraints)
    t13 = next(c for c in onnx.defs.get_schema("Clip", 13, "").type_constraints)
    assert set(t11.allowed_type_strs) != set(t13.allowed_type_strs)
    records = [_rec("Clip", f"c@{o}", ver, o, [_p("input", 1, "min", t, verdict, s)])
               for ver, o, t, verdict, s in ((11, 11, UNKNOWN, "proposed", DIFF),
                                             (13, 13, DIFF, "disagree", NONDIFF))]
    section = _section(records, ops=("Clip",), selection=v.Selection("range", 11, 13))
    assert section["summary"]["versions_disagree"] == 0


def test_a_crashed_or_timed_out_variant_fails_its_version_and_is_no_equivalence_basis():
    """Relu-6 (opsets 6-12) stood for by a variant whose worker died: Relu-6 is failed,
    not explained; Relu-1 (below opset 7) is not decided by equivalence with nothing."""
    for failure, kind in (("worker died", "worker died"), ("timed out", "timed out")):
        records = [_error("Relu", "relu_basic@12", 12, failure, "relu_basic")]
        section = _section(records, ops=("Relu",), selection=v.Selection("range", 1, 12))
        _, six = _cell(section, "Relu", 6, "X")
        assert six["decided_by"] == "failed" and kind in six["reason"]
        _, one = _cell(section, "Relu", 1, "X")
        assert one["decided_by"] != "equivalence" and not one["cells"]
        assert "Relu-6" in one["reason"]
        (failed,) = section["summary"]["failed_variants"]
        assert (failed["kind"], failed["declared"]) == (kind, None)
        assert exit_code({"summary": _quiet(), "versions": section}) == 1


def test_an_equivalence_with_no_cell_is_no_decision():
    records = [_rec("Relu", "relu_basic@12", 6, 12, [
        _p("input", 0, "X", UNKNOWN, "inconclusive", None, "not exercised"),
        _p("output", 0, "Y", UNKNOWN, "inconclusive", None, "not exercised")])]
    section = _section(records, ops=("Relu",), selection=v.Selection("range", 1, 12))
    _, one = _cell(section, "Relu", 1, "X")
    assert one["decided_by"] == "explained" and not one["cells"]


def test_nonmaxsuppression_10_and_11_are_decided_by_type_in_the_versions_table():
    for version in (10, 11):
        s = onnx.defs.get_schema("NonMaxSuppression", version, "")
        assert [o.type_str for o in s.outputs] == ["tensor(int64)"]
    section = _section([], ops=("NonMaxSuppression",), selection=v.Selection("all"),
                       case_less={"NonMaxSuppression"})
    for version in (10, 11):
        entry = next(e for o in section["ops"] for e in o["versions"]
                     if e["version"] == version)
        names = [p.name for p in onnx.defs.get_schema("NonMaxSuppression", version, "").inputs]
        assert entry["decided_by"] == "by type" and "undecided" not in entry
        assert [c["name"] for c in entry["cells"] if c["io"] == "input"] == names
        assert {(c["rule"], c["supports"]) for c in entry["cells"]} == {("by type", NONDIFF)}


def test_fix_tags_acts_only_on_decided_cells(tmp_path):
    """An all-versions report whose records say Softmax, LogSoftmax and Hardmax-13's input
    is non-differentiable (the fixture's shared generator, tagged differentiable): the one
    edit is made while every cell is decided, and none while one of them is inconclusive
    (a failed variant, versions that disagree, cases in conflict)."""
    from fix_report import SRC, param, record
    from torch_prover.fix.locate import read_tree
    from torch_prover.fix.plan import findings, plan, report_records
    ops = ("Softmax", "LogSoftmax", "Hardmax")
    recs = [record(op, 13, f"{op.lower()}_basic",
                   param("input", 0, "input", DIFF, "disagree", NONDIFF)) for op in ops]

    def edits(hardmax_cell):
        cells = {op: {"io": "input", "index": 0, "name": "input", "tag": DIFF,
                      "verdict": "disagree", "supports": NONDIFF, "rule": "both witnesses"}
                 for op in ops}
        cells["Hardmax"] = hardmax_cell
        doc = {"format": 1, "summary": {}, "cases": recs, "versions": {
            "selection": "all", "summary": {}, "cases": [],
            "ops": [{"op": op, "versions": [{"version": 13, "cells": [cells[op]]}]}
                    for op in ops]}}
        return plan(read_tree(SRC), findings(report_records(doc))).edits

    decided = {"io": "input", "index": 0, "name": "input", "tag": DIFF,
               "verdict": "disagree", "supports": NONDIFF, "rule": "both witnesses"}
    assert [e.tag for e in edits(decided)] == [NONDIFF]
    for rule in ("variant failed", "versions disagree", "cases conflict"):
        assert edits({**decided, "verdict": "inconclusive", "supports": None,
                      "rule": rule}) == ()


@pytest.mark.parametrize("declared,want", [(None, 1), ("a declared limit", 0)])
def test_exit_code_counts_the_undeclared_failed_variants(declared, want):
    versions = {"summary": {"failing": 0, "undeclared_failures": int(declared is None),
                            "failed_variants": [{"declared": declared}]}}
    assert exit_code({"summary": _quiet(), "versions": versions}) == want


def test_every_declared_failure_names_a_version_the_case_has_a_variant_for():
    """A declaration (Case.fails_at) is checked by running its variant: it must name a schema
    version of the case's op that an all-versions run proves with this case."""
    from torch_prover.cases import all_cases
    cases = [c for c in all_cases() if c.fails_at]
    assert cases
    planned = {(p.base.name, p.version.version) for p in v.plan(cases, v.Selection("all"))
               if p.case is not None}
    for c in cases:
        for version, reason in c.fails_at.items():
            assert (c.name, version) in planned, (c.name, version)
            assert version in {s.version for s in v.schema_versions(c.op)}
            assert reason.strip()


def test_an_unexercised_extra_element_of_a_variadic_keeps_the_others_evidence():
    """Loop's v_initial is variadic (its schema): a case carrying x first and an int64
    counter second (node inputs 2 and 3, both v_initial) declares input 3 unexercised; x's
    evidence at input 2 still decides the cell. A case declaring input 2 itself (the
    counter first) gives v_initial nothing."""
    (v_initial,) = [p for p in onnx.defs.get_schema("Loop", 16, "").inputs
                    if p.name == "v_initial"]
    assert v_initial.option == onnx.defs.OpSchema.FormalParameterOption.Variadic
    records = [_rec("Loop", "loop_x_first", 16, 18, [
        _p("input", 2, "v_initial", UNKNOWN, "proposed", DIFF),
        _p("input", 3, "v_initial", UNKNOWN, "inconclusive", None, "not exercised",
           "constant")])]
    extra = Declarations(unexercised={"loop_x_first": frozenset({("input", "v_initial", 3)})})
    cell, _ = _cell(_section(records, extra, ops=("Loop",), selection=v.Selection("range", 16, 18)),
                    "Loop", 16, "v_initial")
    assert (cell["verdict"], cell["supports"]) == ("proposed", DIFF)
    whole = Declarations(unexercised={"loop_x_first": frozenset({("input", "v_initial")})})
    cell, _ = _cell(_section(records, whole, ops=("Loop",), selection=v.Selection("range", 16, 18)),
                    "Loop", 16, "v_initial")
    assert cell is None or cell["supports"] is None
