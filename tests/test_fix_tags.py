"""fix-tags' plan and patch on the fixture sources (tests/data/onnx-src, trimmed from ONNX).

Expected tags come from the verdicts the hand-written records declare; expected C++ text
from ONNX's own ``OpSchema::Input`` signature (param_option = Single, is_homogeneous = true,
min_arity = 1, differentiation_category) and the fixture's formatting.
"""
import pytest
from fix_report import SRC, applied, param, record, tags_of

from torch_prover.fix import patch
from torch_prover.fix.locate import Unlocated, read_tree
from torch_prover.fix.plan import Withheld, findings, plan
from torch_prover.fix.pr_text import summary
from torch_prover.vocab import Verdict

DIFF, NONDIFF = "differentiable", "non-differentiable"


def _plan(*records, **kw):
    tree = read_tree(SRC)
    return tree, plan(tree, findings(list(records)), **kw)


def _softmax_family(op: str, verdict: str, supports: str) -> dict:
    return record(op, 13, f"{op.lower()}_basic",
                  param("input", 0, "input", DIFF, verdict, supports))


def test_shared_generator_edited_once_when_every_user_agrees(tmp_path):
    tree, p = _plan(*(_softmax_family(op, "disagree", NONDIFF)
                      for op in ("Softmax", "LogSoftmax", "Hardmax")))
    assert not p.unlocated and not p.withheld
    (edit,) = p.edits
    assert edit.shared and edit.generator == "SoftmaxFamilyDocGenerator"
    assert edit.users == (("Hardmax", 13, "input", 0), ("LogSoftmax", 13, "input", 0),
                          ("Softmax", 13, "input", 0))
    diff = patch.unified_diff(patch.edited_texts(tree, p.edits))
    removed = [line for line in diff.splitlines() if line.startswith("-") and
               not line.startswith("---")]
    assert len(removed) == 1 and "OpSchema::NonDifferentiable);" in diff
    patch.check(tree, p.edits, diff)
    after = tags_of(applied(diff, tmp_path))
    before = tags_of(tree)
    changed = {k for k in before if before[k] != after[k]}
    assert changed == {(op, 13, "input", 0) for op in ("Softmax", "LogSoftmax", "Hardmax")}
    assert {after[k] for k in changed} == {NONDIFF}


def test_shared_generator_withheld_when_another_user_contradicts():
    _, p = _plan(_softmax_family("Hardmax", "disagree", NONDIFF),
                 _softmax_family("Softmax", "agree", DIFF),
                 _softmax_family("LogSoftmax", "agree", DIFF))
    assert not p.edits
    ((f, why, detail),) = p.withheld
    assert (f.op, why) == ("Hardmax", Withheld.SHARED_CONTRADICTED)
    assert "Softmax-13 input 0" in detail and "onnx/defs/math/defs.cc" in detail


def test_shared_generator_withheld_when_another_user_has_no_verdict():
    _, p = _plan(_softmax_family("Hardmax", "disagree", NONDIFF))
    assert not p.edits
    ((f, why, detail),) = p.withheld
    assert why is Withheld.SHARED_WITHOUT_VERDICT and "no decided verdict" in detail


IF_INPUT = """\
        .Input(
            0,
            "cond",
            "Condition for the if. The tensor must contain a single element.",
            "B",
            OpSchema::Single,
            true,
            1,
            OpSchema::NonDifferentiable)
"""
IF_OUTPUT_TAIL = """\
            OpSchema::Variadic,
            false,
            1,
            OpSchema::Differentiable)
"""


def test_missing_tag_argument_gets_the_defaults_before_it(tmp_path):
    tree, p = _plan(record("If", 25, "if_basic",
                           param("input", 0, "cond", "unknown", "proposed", NONDIFF),
                           param("output", 0, "outputs", "unknown", "proposed", DIFF)))
    assert len(p.edits) == 2 and not any(e.shared for e in p.edits)
    texts = patch.edited_texts(tree, p.edits)
    (old, new), = texts.values()
    assert IF_INPUT in new and IF_OUTPUT_TAIL in new
    assert len(new.splitlines()) == len(old.splitlines()) + 8 + 2
    diff = patch.unified_diff(texts)
    patch.check(tree, p.edits, diff)
    after = tags_of(applied(diff, tmp_path))
    assert after[("If", 25, "input", 0)] == NONDIFF
    assert after[("If", 25, "output", 0)] == DIFF


def test_declaration_under_a_literal_condition_is_located():
    tree, p = _plan(record("ReduceSum", 13, "reducesum_axes",
                           param("input", 1, "axes", "unknown", "proposed", NONDIFF)),
                    record("ReduceL1", 13, "reducel1_axes",
                           param("input", 1, "axes", "unknown", "proposed", NONDIFF)))
    (edit,) = p.edits   # ReduceSum passes axes_input = true; ReduceL1 false: no such call
    assert [(f.op, f.index) for f in edit.findings] == [("ReduceSum", 1)]
    assert edit.users == (("ReduceSum", 13, "input", 1),)
    ((f, why, _),) = p.unlocated
    assert (f.op, why) == ("ReduceL1", Unlocated.NO_CALL)
    (old, new), = patch.edited_texts(tree, p.edits).values()
    assert '"tensor(int64)",\n          OpSchema::Optional,\n          true,\n          1,\n' \
           '          OpSchema::NonDifferentiable);\n' in new


def test_parameters_that_cannot_be_located_are_reported_not_guessed():
    _, p = _plan(record("ReduceSum", 13, "reducesum_basic",
                        param("output", 0, "reduced", "unknown", "proposed", DIFF)),
                 record("Concat", 13, "concat_basic",
                        param("input", 0, "inputs", "unknown", "proposed", DIFF)),
                 record("Softmax", 11, "softmax_old",
                        param("input", 0, "input", DIFF, "disagree", NONDIFF)))
    assert not p.edits and not p.withheld
    why = {f.op: reason for f, reason, _ in p.unlocated}
    assert why == {"ReduceSum": Unlocated.CONDITIONAL, "Concat": Unlocated.RUNTIME_INDEX,
                   "Softmax": Unlocated.NO_BLOCK}
    text = summary(p)
    assert "not located: 3" in text and "hunks: 0" in text
    for reason in why.values():
        assert reason.value in text


def test_cases_supporting_different_tags_are_withheld():
    _, p = _plan(record("If", 25, "if_a", param("input", 0, "cond", "unknown", "proposed", DIFF)),
                 record("If", 25, "if_b",
                        param("input", 0, "cond", "unknown", "proposed", NONDIFF)))
    assert not p.edits
    ((_, why, detail),) = p.withheld
    assert why is Withheld.CONFLICTING_CASES and "if_a" in detail and "if_b" in detail


def test_only_and_ops_filter_what_is_acted_on():
    recs = (record("If", 25, "if_basic",
                   param("input", 0, "cond", "unknown", "proposed", NONDIFF)),
            record("ReduceSum", 13, "reducesum_basic",
                   param("input", 0, "data", NONDIFF, "disagree", DIFF)))
    _, only = _plan(*recs, only=Verdict.DISAGREE)
    assert [f.op for f in only.acted] == ["ReduceSum"]
    _, ops = _plan(*recs, ops={"If"})
    assert [f.op for f in ops.acted] == ["If"]


def test_check_refuses_a_diff_that_changes_an_unplanned_tag():
    tree, p = _plan(record("If", 25, "if_basic",
                           param("input", 0, "cond", "unknown", "proposed", NONDIFF)))
    diff = patch.unified_diff(patch.edited_texts(tree, p.edits))
    with pytest.raises(patch.CheckFailed, match="If-25 input 0 .*non-differentiable"):
        patch.check(tree, (), diff)     # the same diff, checked against no planned edit
    broken = diff.replace('"cond"', '"condition"', 1)   # its context no longer matches
    with pytest.raises(patch.CheckFailed, match="git apply"):
        patch.check(tree, p.edits, broken)


def test_shared_generator_without_verdict_says_whether_the_op_ran():
    """The fixture's generator serves Softmax-13, LogSoftmax-13 and Hardmax-13; Softmax is
    the one without a verdict: either not run at all, or run only against Softmax-11."""
    from torch_prover.fix.plan import reached_versions
    both = [_softmax_family(op, "disagree", NONDIFF) for op in ("Hardmax", "LogSoftmax")]
    old = record("Softmax", 11, "softmax_old", param("input", 0, "input", DIFF, "agree", DIFF))
    for records, says in ((both, "(Softmax is not in this report: add it to verify-all's --ops)"),
                          (both + [old], "(no case reaches Softmax-13: the report's Softmax "
                                         "cases ran against Softmax-11;")):
        _, p = _plan(*records, reached=reached_versions(records))
        assert len(p.withheld) == 2 and not p.edits
        for _f, why, detail in p.withheld:
            assert why is Withheld.SHARED_WITHOUT_VERDICT
            assert "also declares Softmax-13 input 0" in detail and says in detail
