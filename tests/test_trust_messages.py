"""Bad arguments are one line, exit 2, before any work (issue 28, findings 13, 15, 16)."""
from __future__ import annotations

import pytest

from torch_prover import cli


def _one_line_exit_2(capsys, argv, *words) -> str:
    code = cli.main(argv)
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, captured.err
    assert "Traceback" not in captured.err and "internal error" not in captured.err
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


# ----------------------------------------------------------------------------- finding 13
@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("shard", ["²/3", "1/³", "١/3", "1/100001"])
def test_a_shard_in_other_digits_is_usage(capsys, shard):
    """str.isdigit accepts '²' (and Arabic-Indic digits), which int refuses or reads."""
    _one_line_exit_2(capsys, ["verify-all", "--ops", "Relu", "--no-write", "--no-cache",
                              "--shard", shard], "--shard", "K/N")


@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("versions", ["²..13", "7..¹³"])
def test_a_version_range_in_other_digits_is_usage(capsys, versions):
    line = _one_line_exit_2(capsys, ["verify-all", "--ops", "Relu", "--no-write", "--no-cache",
                                     "--versions", versions], "--versions", "A..B")
    assert "invalid literal" not in line


# ----------------------------------------------------------------------------- finding 15
def test_coverage_versions_empty_is_usage(capsys):
    _one_line_exit_2(capsys, ["coverage", "--versions", ""], "--versions")


@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("flag", [["--opset", "7"], ["--explain"]])
def test_tags_all_versions_with_one_version_flag_is_usage(capsys, flag):
    _one_line_exit_2(capsys, ["tags", "Relu", "--all-versions", *flag], "--all-versions",
                     flag[0])


# ----------------------------------------------------------------------------- finding 16
@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("opset", ["6", "29", "-7"])
def test_prove_a_bad_opset_of_an_op_with_several_cases_is_one_line(capsys, opset):
    """Max has several cases: the note naming the first used to come before the error."""
    from torch_prover.cases import cases_for
    assert len(cases_for("Max")) > 1
    line = _one_line_exit_2(capsys, ["prove", "Max", "--no-write", "--opset", opset],
                            f"--opset {opset}")
    assert not line.startswith("note:")
