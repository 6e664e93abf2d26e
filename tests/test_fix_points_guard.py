"""fix-tags makes no edit ONNX's own node tests contradict (fix/points_guard.py; issue 32).

The contradiction is constructed outside the code under test: records declaring the Softmax
family's input non-differentiable (a proof verdict no real run gives: the catalogue's agree
with ONNX's tag), while softmax's derivative ds_i/dx_j = s_i (delta_ij - s_j) is nonzero at
every point, so ONNX's Softmax tests move the output. Expected tags come from the fixture
sources (tests/data/onnx-src) and the records' declarations.
"""
from fix_report import SRC, applied, param, record, tags_of

from torch_prover import cli
from torch_prover.batch.onnx_points import PointsRun
from torch_prover.engine.onnx_points import witness as points_witness
from torch_prover.fix import command
from torch_prover.fix.locate import read_tree
from torch_prover.fix.plan import Withheld, findings, plan
from torch_prover.fix.points_guard import contradiction
from torch_prover.vocab import NumericOutcome as N

DIFF, NONDIFF = "differentiable", "non-differentiable"
FAMILY = ("Softmax", "LogSoftmax", "Hardmax")


def _family_nondiff():
    return [record(op, 13, f"{op.lower()}_basic", param("input", 0, "input", DIFF, "disagree",
                                                       NONDIFF)) for op in FAMILY]


def _run(outcome):
    w = points_witness.TestWitness("test_softmax_example", "Softmax", 13, "onnxruntime",
                    (points_witness.ParamOutcome("input", "input", outcome),))
    return PointsRun("fixture", 4, {("Softmax", 13): (w,)}, {})


def test_an_edit_is_contradicted_only_by_a_derivative_at_onnx_points():
    (edit,) = plan(read_tree(SRC), findings(_family_nondiff())).edits   # one shared generator
    assert edit.tag == NONDIFF and ("Softmax", 13, "input", 0) in edit.users
    why = contradiction(_run(N.SMOOTH), edit)
    assert why is not None and "Softmax-13 input 0 (input)" in why and "test_softmax_example" in why
    for quiet in (N.FLAT, N.JUMP, N.INTEGER):   # flat or no point: nothing contradicts it
        assert contradiction(_run(quiet), edit) is None


def test_fix_tags_withholds_an_edit_onnx_points_contradict(tmp_path, capsys, monkeypatch,
                                                           real_report):
    """A real report (If, Relu: If-25's cond proposed non-differentiable by type) plus the
    Softmax family's forced verdicts: the patch edits If's cond and not the family's shared
    input, and the summary and the PR text name each withheld parameter and the reason."""
    from torch_prover.batch.report_io import load_report
    rep = load_report(str(real_report("If,Relu")), what="--report")
    rep = {**rep, "cases": list(rep["cases"]) + _family_nondiff()}
    monkeypatch.setattr(command, "_report", lambda args, cache_dir: rep)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))   # ONNX's tests collected here
    out = tmp_path / "fix.patch"
    assert cli.main(["fix-tags", "--onnx-src", str(SRC), "-o", str(out)]) == 0
    stdout = capsys.readouterr().out
    after, before = tags_of(applied(out.read_text(), tmp_path)), tags_of(read_tree(SRC))
    assert after[("If", 25, "input", 0)] == NONDIFF
    for op in FAMILY:
        assert after[(op, 13, "input", 0)] == before[(op, 13, "input", 0)] == DIFF
    assert f"withheld: 3 ({Withheld.ONNX_POINTS.value}: 3)" in stdout
    md = (tmp_path / "fix.md").read_text()
    for op in FAMILY:
        assert f"    {op}-13 input 0 (input): " in stdout
        assert f"- {op}-13 input 0 (input): withheld ({Withheld.ONNX_POINTS.value})" in md
    assert "is smooth and nonzero at ONNX's node tests (test_" in md


def test_a_conventions_edit_is_not_held_by_onnx_points():
    """A convention sets the math aside by declaration (docs/verdicts.md, "Conventions"):
    the same Softmax-family edit, each verdict decided by a named convention, is not one the
    points can contradict -- they measure the math; the PR text names the convention."""
    from torch_prover.fix.points_guard import _checked
    by_convention = [dict(r, parameters=[dict(p, rule="convention", convention="state output")
                                         for p in r["parameters"]])
                     for r in _family_nondiff()]
    (edit,) = plan(read_tree(SRC), findings(by_convention), include_conventions=True).edits
    assert edit.tag == NONDIFF and all(f.conventions for f in edit.findings)
    assert not _checked(edit)
    (math_edit,) = plan(read_tree(SRC), findings(_family_nondiff())).edits
    assert _checked(math_edit)
