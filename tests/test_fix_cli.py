"""`torch-prover fix-tags`: bad input is one line and exit 2 before any work; a good run
writes a patch that git applies and the PR text beside it."""
import pytest
from fix_report import SRC, applied, docs_with_input_tag, tags_of

from torch_prover import cli




def _one_line_error(capsys, *words):
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err


@pytest.mark.usefixtures("no_work")
def test_missing_onnx_src_dir(tmp_path, capsys):
    out = tmp_path / "fix.patch"
    assert cli.main(["fix-tags", "--onnx-src", str(tmp_path / "nope"), "-o", str(out)]) == 2
    _one_line_error(capsys, "--onnx-src", "onnx/defs")
    assert not out.exists()


@pytest.mark.usefixtures("no_work")
def test_onnx_src_without_defs(tmp_path, capsys):
    (tmp_path / "onnx").mkdir()
    assert cli.main(["fix-tags", "--onnx-src", str(tmp_path), "-o",
                     str(tmp_path / "fix.patch")]) == 2
    _one_line_error(capsys, "--onnx-src", "no onnx/defs")


@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("content, words", [
    (None, ("--report",)),                              # no such file
    ("{not json", ("--report", "not JSON")),
    ('{"cases": 3}', ("--report", "not a batch-report")),
    ('{"cases": [{"case": "x"}]}', ("--report", "not a batch-report")),
])
def test_unreadable_report(tmp_path, capsys, content, words):
    report = tmp_path / "report.json"
    if content is not None:
        report.write_text(content)
    out = tmp_path / "fix.patch"
    assert cli.main(["fix-tags", "--onnx-src", str(SRC), "--report", str(report),
                     "-o", str(out)]) == 2
    _one_line_error(capsys, *words)
    assert not out.exists()


@pytest.mark.usefixtures("no_work")
def test_unknown_op_in_ops(tmp_path, capsys):
    assert cli.main(["fix-tags", "--onnx-src", str(SRC), "--ops", "Softmaxx",
                     "-o", str(tmp_path / "fix.patch")]) == 2
    _one_line_error(capsys, "Softmax")


def test_writes_a_checked_patch_and_its_pr_text(tmp_path, capsys, real_report):
    """If-25's cond is tagged unknown and allows only tensor(bool): its by-type verdict
    proposes non-differentiable, and the fixture sources declare it with no tag."""
    import onnx.defs
    cond = onnx.defs.get_schema("If", 25, "").inputs[0]
    assert cond.differentiation_category == onnx.defs.OpSchema.DifferentiationCategory.Unknown
    report = real_report("If,Relu")
    out = tmp_path / "fix.patch"
    assert cli.main(["fix-tags", "--onnx-src", str(SRC), "--report", str(report),
                     "-o", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert "hunks: 1 call sites edited (0 in shared generators)" in stdout
    assert tags_of(applied(out.read_text(), tmp_path))[("If", 25, "input", 0)] == \
        "non-differentiable"
    md = (tmp_path / "fix.md").read_text()
    assert "If-25 input 0 (cond): unknown -> non-differentiable" in md
    assert "reproduce: `torch-prover prove If --case " in md and "rule: by type" in md
    assert "gen_doc.py" in md


@pytest.mark.usefixtures("no_work")
def test_ops_not_in_the_report(tmp_path, capsys, real_report):
    report = real_report("Relu")
    assert cli.main(["fix-tags", "--onnx-src", str(SRC), "--report", str(report), "--ops",
                     "LSTM", "-o", str(tmp_path / "fix.patch")]) == 2
    _one_line_error(capsys, "--ops", "LSTM not in the report")
    assert not (tmp_path / "fix.patch").exists()


def test_report_from_stale_tags_is_not_a_failed_patch(tmp_path_factory, tmp_path, capsys,
                                                      real_report):
    """A report made with --tags-from an out-of-date docs file: it says the input of
    Softmax and LogSoftmax is non-differentiable, the evidence supports
    differentiable, and the fixture sources already say OpSchema::Differentiable. Nothing to
    edit, and the run says why."""
    assert "true, 1, OpSchema::Differentiable);" in (
        SRC / "onnx" / "defs" / "math" / "defs.cc").read_text()
    ops = ("Softmax", "LogSoftmax")
    docs = docs_with_input_tag(tmp_path_factory.mktemp("stale") / "Operators.md", ops,
                               "non-differentiable")
    report = real_report(",".join(ops), "--tags-from", str(docs))
    out = tmp_path / "fix.patch"
    assert cli.main(["fix-tags", "--onnx-src", str(SRC), "--report", str(report),
                     "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert "already says differentiable" in captured.out and "withheld: 2" in captured.out
    assert not out.exists()


@pytest.mark.usefixtures("no_work")
def test_no_git_is_one_line_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))   # an empty directory: no git on PATH
    out = tmp_path / "fix.patch"
    assert cli.main(["fix-tags", "--onnx-src", str(SRC), "-o", str(out)]) == 2
    _one_line_error(capsys, "git is not on PATH")
    assert not out.exists()
