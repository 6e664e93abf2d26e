"""Issue 35's findings on what torch-prover reads and what its errors say (part B: problems
4, 13, 15, 16, 20, 22): every input has its kind checked and its size bounded before it is
read (``inputs.read_bytes``), and every error names the file at fault in one line, exit 2,
before any work.

Expectations come from outside the code under test: the files each test plants (a FIFO,
a sparse file one byte over the bound the docs state, a name holding a byte that is not
UTF-8), gen_doc's own ai.onnx.ml files (tests/data/README.md), the edit made to a base.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_lines import deadline, one_line_exit_2
from fix_report import SRC

from torch_prover import cli

DATA = Path(__file__).parent / "data"
DOCS_BOUND = 64 * 2 ** 20
"""docs/safety.md: an ONNX docs file is at most 64 MiB (Changelog.md of main is 1.4 MB)."""
TOML_BOUND = 16 * 2 ** 20
"""docs/safety.md: a waivers file or a pyproject.toml is at most 16 MiB."""


def sparse(path: Path, size: int) -> Path:
    """A file of ``size`` bytes that costs no disk (a hole): one byte over a bound."""
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def _main(capsys, argv, *words) -> str:
    with deadline(120):
        code = cli.main(argv)
    return one_line_exit_2(capsys, code, *words)


# ----------------------------------------------------------------------------- problem 4
@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("name", ["Changelog-ml.md", "Operators-ml.md"])
def test_problem_4_an_ai_onnx_ml_document_as_base_is_compared_as_ai_onnx_ml(capsys, name):
    """gen_doc writes the ai.onnx.ml domain's docs beside the default domain's, in the same
    outline: compared with ai.onnx, every ai.onnx op would be new (1013 proofs) and every
    declared disagreement blamed on the PR. Since issue 45 such a base is read as what it
    is, ai.onnx.ml's, and compared with the installed onnx's ai.onnx.ml (the onnx that
    wrote these files: no change, no proof), never with ai.onnx: every ai.onnx.ml schema
    version compared (the Operators-ml.md: each op's latest)."""
    import onnx.defs
    ml = [s for s in onnx.defs.get_all_schemas_with_history() if s.domain == "ai.onnx.ml"]
    with deadline(120):
        code = cli.main(["verify-all", "--changed-from", str(DATA / name), "--no-write",
                         "--no-cache", "--format", "json"])
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert code == 0 and (summary["changed_versions"], summary["proofs"]) == (0, 0)
    assert summary["versions_compared"] == (len(ml) if name == "Changelog-ml.md"
                                            else len({s.name for s in ml}))


@pytest.mark.usefixtures("no_work")
def test_problem_4_an_ai_onnx_ml_document_is_refused_as_tag_source(capsys):
    _main(capsys, ["verify-all", "--ops", "Relu", "--tags-from", str(DATA / "Changelog-ml.md"),
                   "--no-write", "--no-cache"], "--tags-from", "Changelog-ml.md", "ai.onnx.ml")


# ----------------------------------------------------------------------------- problem 13
@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("flag", ["--changed-from", "--tags-from"])
def test_problem_13_a_docs_file_over_its_bound_is_refused_by_its_size(tmp_path, capsys, flag):
    """Read whole, a 2 GB base cost 4.4 GB and 17 s before its refusal; now its size alone
    refuses it (one byte over the bound: the file is a hole, the test costs no disk)."""
    big = sparse(tmp_path / "Changelog.md", DOCS_BOUND + 1)
    argv = ["verify-all", flag, str(big), "--no-write", "--no-cache"]
    _main(capsys, argv + ([] if flag == "--changed-from" else ["--ops", "Relu"]),
          flag, str(big), str(DOCS_BOUND + 1), str(DOCS_BOUND))


@pytest.mark.usefixtures("no_work")
def test_problem_13_a_waivers_file_over_its_bound_is_refused_by_its_size(tmp_path, capsys):
    big = sparse(tmp_path / "waivers.toml", TOML_BOUND + 1)
    _main(capsys, ["verify-all", "--ops", "Relu", "--no-write", "--no-cache", "--waivers",
                   str(big)], str(big), str(TOML_BOUND))


@pytest.mark.usefixtures("no_work")
def test_problem_13_a_pyproject_over_its_bound_is_refused_by_its_size(tmp_path, capsys,
                                                                     monkeypatch):
    sparse(tmp_path / "pyproject.toml", TOML_BOUND + 1)
    monkeypatch.chdir(tmp_path)
    _main(capsys, ["tags", "Relu"], "pyproject.toml", str(TOML_BOUND))


def test_problem_13_the_reader_never_blocks_nor_reads_a_device(tmp_path):
    """The one reader opens without blocking (a FIFO with no writer would wait forever)
    and judges the kind on the open file: a FIFO, a directory and /dev/zero (which never
    ends) are refused before a byte is read."""
    from torch_prover import inputs
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a FIFO"), (tmp_path, "a directory"),
                       (Path("/dev/zero"), "a character device")):
        with deadline(10), pytest.raises(inputs.InputError) as got:
            inputs.read_bytes(path, inputs.Bound.DOCS, "--x")
        assert str(got.value) == f"--x {path}: is {kind}, not a regular file"


def test_problem_13_a_fifo_in_the_cache_is_a_miss_not_a_hang(tmp_path, capsys):
    """The cache is read like every input: a FIFO where an entry was (a shared cache
    directory) is a miss, and the case is proved again."""
    cache = tmp_path / "cache"
    argv = ["verify-all", "--ops", "Relu", "--no-write", "--cache-dir", str(cache),
            "--format", "json"]
    with deadline(300):
        assert cli.main(argv) == 0
    entries = sorted(cache.glob("*.json"))
    assert entries
    for entry in entries:
        entry.unlink()
        os.mkfifo(entry)
    capsys.readouterr()
    with deadline(300):
        assert cli.main(argv) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["cache_hits"] == 0


# ----------------------------------------------------------------------------- problem 15
def test_problem_15_a_non_utf8_path_name_is_refused_before_any_work(tmp_path, capsys,
                                                                   real_report, monkeypatch):
    """A report whose name holds the byte 0xff: fix-tags wrote its patch, then failed on
    its PR text (which names the report) with exit 3. Now: one line, exit 2, the name shown
    as its bytes, and nothing written."""
    monkeypatch.chdir(tmp_path)
    name = os.fsdecode(b"r\xff.json")
    Path(name).write_bytes(real_report("If,Relu").read_bytes())
    line = _main(capsys, ["fix-tags", "--onnx-src", str(SRC), "--report", name,
                          "-o", "fix.patch"], "--report", "r\\xff.json", "not UTF-8")
    assert "internal error" not in line
    assert os.listdir(tmp_path) == [name]   # no patch, no PR text


@pytest.mark.usefixtures("no_work")
def test_problem_15_the_json_error_document_is_valid_utf8(tmp_path, capsys):
    name = os.fsdecode(b"out\xfe.json")
    with deadline(60):
        code = cli.main(["verify-all", "--ops", "Relu", "--no-write", "--no-cache",
                         "--format", "json", "--report", str(tmp_path / name)])
    out, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    doc = json.loads(out.encode("utf-8"))
    assert doc["kind"] == "error" and "out\\xfe.json" in doc["reason"]


# ----------------------------------------------------------------------------- problem 16
@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("value, says", [
    ('"~nosuchuser-of-torch-prover/w.toml"', "~nosuchuser-of-torch-prover"),
    ('"w\\u0000.toml"', "NUL")])
def test_problem_16_a_config_path_that_cannot_be_a_path(tmp_path, capsys, monkeypatch,
                                                       value, says):
    """``~user`` for a user this machine lacks, and an embedded NUL, were exit 3: now one
    line naming the file and the key."""
    (tmp_path / "pyproject.toml").write_text(f"[tool.torch-prover]\nwaivers = {value}\n")
    monkeypatch.chdir(tmp_path)
    _main(capsys, ["verify-all", "--ops", "Relu", "--no-write", "--no-cache"],
          str(tmp_path / "pyproject.toml"), "waivers", says)


# ----------------------------------------------------------------------------- problem 20
def test_problem_20_coverage_no_torchscript_needs_versions(capsys):
    """``--no-torchscript`` changes the per-version plan only: without ``--versions`` it
    was accepted and ignored."""
    _main(capsys, ["coverage", "--no-torchscript"], "--no-torchscript", "--versions")


# ----------------------------------------------------------------------------- problem 22
@pytest.mark.usefixtures("no_work")
def test_problem_22_a_renamed_parameter_is_shown_as_a_rename(tmp_path, capsys, monkeypatch):
    """The base calls StringConcat-20's first input ``A``, the PR (the installed onnx)
    ``X``, with the same tag: the comment's row is a rename with both names, not a
    "changed tag" whose two tag cells are equal. (StringConcat's types, strings, decide
    every parameter: no proof runs.)"""
    from gate_fixture import generate_docs, rename_param
    docs = generate_docs(tmp_path / "onnx")
    base = tmp_path / "Changelog.md"
    base.write_text(rename_param((docs / "Changelog.md").read_text(encoding="utf-8"),
                                 "StringConcat-20", "X", "A"), encoding="utf-8")
    monkeypatch.setenv("COLUMNS", "200")
    # Markdown: each name a code span (output/inert.py)
    for fmt, sep, names in (("text", "  ", "A -> X"), ("markdown", " | ", "`A` -> `X`")):
        with deadline(120):
            code = cli.main(["verify-all", "--changed-from", str(base), "--no-write",
                             "--no-cache", "--format", fmt])
        out = capsys.readouterr().out
        assert code == 0, out
        row = next(line for line in out.splitlines() if "StringConcat-20" in line)
        cells = [c.strip() for c in row.strip(" |").split(sep) if c.strip()]
        assert cells[1:4] == ["renamed parameter", f"input 0 ({names})", "non-differentiable"], row
        assert "changed tags" not in row
