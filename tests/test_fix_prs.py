"""`fix-tags --pr-dir`: one PR per op family, each applying alone, carrying its family's C++
and both docs, and confirmed by the PR gate replayed from its own docs (no build).

The sources: the fixture's controlflow family (If-25's cond, declared with no tag; the
real docs leave it untagged too) and a math family holding Relu-14 with its input X
declared with no tag. The docs: tests/data's Changelog.md and Operators.md with Relu-14's X
untagged, as gen_doc would write them for these sources; the report is made with those
docs' tags. So the expectations (one PR each for controlflow and math; If-25 cond ->
non-differentiable, Relu-14 X -> differentiable) come from the fixture and the schemas'
math, never from fix-tags' output."""
from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from fix_report import SRC
from test_docs_files import tag_deprecated_ops_older_versions

from torch_prover import cli

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"
RELU = ('\nONNX_OPERATOR_SET_SCHEMA(Relu, 14, OpSchema().Input(0, "X", "Input tensor", "T")'
        '.Output(0, "Y", "Output tensor", "T", OpSchema::Single, true, 1, '
        'OpSchema::Differentiable));\n')


def _untag_relu_x(text: str, anchor: str) -> str:
    start = text.index(f'<a name="{anchor}"></a>')
    line = "<dt><tt>X</tt> (differentiable) : T</dt>"
    at = text.index(line, start)
    return text[:at] + "<dt><tt>X</tt> : T</dt>" + text[at + len(line):]


@pytest.fixture(scope="module")
def setup(tmp_path_factory, real_report):
    root = tmp_path_factory.mktemp("prs")
    src = root / "src"
    shutil.copytree(SRC / "onnx", src / "onnx")
    with open(src / "onnx" / "defs" / "math" / "defs.cc", "a", encoding="utf-8") as f:
        f.write(RELU)
    docs = root / "docs"
    docs.mkdir()
    (docs / "Changelog.md").write_text(_untag_relu_x(
        (DATA / "Changelog.md").read_text(encoding="utf-8"), "Relu-14"), encoding="utf-8")
    (docs / "Operators.md").write_text(_untag_relu_x(
        (DATA / "Operators.md").read_text(encoding="utf-8"), "Relu"), encoding="utf-8")
    report = real_report("If,Relu", "--tags-from", str(docs / "Changelog.md"))
    out = root / "prs"
    assert cli.main(["fix-tags", "--onnx-src", str(src), "--report", str(report),
                     "--pr-dir", str(out), "--docs", str(docs)]) == 0
    return src, docs, out


def _files(patch: str) -> list[str]:
    return re.findall(r"^diff --git a/(\S+) ", patch, re.M)


def test_one_pr_per_family_each_its_own_cpp_and_both_docs(setup):
    src, docs, out = setup
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["controlflow", "math"]
    for fam in ("controlflow", "math"):
        patch = (out / fam / f"{fam}.patch").read_text(encoding="utf-8")
        files = _files(patch)
        cpp = [f for f in files if f.startswith(f"onnx/defs/{fam}/")]
        assert cpp and files == cpp + ["docs/Changelog.md", "docs/Operators.md"], files
        text = (out / fam / f"{fam}.md").read_text(encoding="utf-8")
        assert f"`onnx/defs/{fam}/` only" in text and len(text) <= 65536
    math = (out / "math" / "math.patch").read_text(encoding="utf-8")
    assert "+<dt><tt>X</tt> (differentiable) : T</dt>" in math
    flow = (out / "controlflow" / "controlflow.patch").read_text(encoding="utf-8")
    assert "+<dt><tt>cond</tt> (non-differentiable) : B</dt>" in flow


def test_each_pr_applies_alone(setup, tmp_path):
    src, docs, out = setup
    for fam in ("controlflow", "math"):
        repo = tmp_path / fam
        shutil.copytree(src / "onnx", repo / "onnx")
        shutil.copytree(docs, repo / "docs")
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        subprocess.run(["git", "apply", "--check", str(out / fam / f"{fam}.patch")], cwd=repo,
                       check=True)


def test_each_prs_docs_pass_the_gate(setup, tmp_path):
    """The PR gate from each PR's own docs against the unpatched ones: every tag it writes
    confirmed, nothing refuted or not proved (scripts/gate_prs.py, as run for the report)."""
    src, docs, out = setup
    spec = importlib.util.spec_from_file_location("gate_prs", ROOT / "scripts" / "gate_prs.py")
    gate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gate)
    for fam in ("controlflow", "math"):
        work = tmp_path / fam
        work.mkdir()
        got = gate.replay(out / fam / f"{fam}.patch", docs, work)
        assert got["retagged"] >= 1, got
        assert (got["exit"], got["refuted"], got["not proved"]) == (0, 0, 0), json.dumps(got)
        assert got["confirmed"] == got["retagged"], got


def test_pr_dir_refuses_missing_docs_before_any_work(tmp_path, capsys):
    assert cli.main(["fix-tags", "--onnx-src", str(SRC), "--pr-dir", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert "no Changelog.md or Operators.md" in err and "--docs DIR" in err
    assert not (tmp_path / "p").exists()
    assert cli.main(["fix-tags", "--onnx-src", str(SRC), "--pr-dir", str(tmp_path / "p"),
                     "-o", str(tmp_path / "x.patch")]) == 2
    assert "give one" in capsys.readouterr().err


def test_pr_dir_leaves_a_file_it_did_not_write(setup, tmp_path, capsys, real_report):
    src, docs, _ = setup
    out = tmp_path / "prs"
    (out / "math").mkdir(parents=True)
    mine = out / "math" / "math.md"
    mine.write_text("someone's notes\n")
    report = real_report("If,Relu", "--tags-from", str(docs / "Changelog.md"))
    assert cli.main(["fix-tags", "--onnx-src", str(src), "--report", str(report),
                     "--pr-dir", str(out), "--docs", str(docs)]) == 2
    assert "math.md: exists and is not a fix-tags PR text" in capsys.readouterr().err
    assert mine.read_text() == "someone's notes\n"
    assert not (out / "controlflow").exists()


def test_a_rerun_removes_the_prs_it_no_longer_backs(setup, tmp_path, real_report):
    """A rerun for If alone: controlflow's PR is rewritten, math's files (written by the
    first run, listed in its manifest) are removed; a file of someone else's stays."""
    src, docs, _ = setup
    out = tmp_path / "prs"
    report = real_report("If,Relu", "--tags-from", str(docs / "Changelog.md"))
    args = ["fix-tags", "--onnx-src", str(src), "--report", str(report), "--pr-dir", str(out),
            "--docs", str(docs)]
    assert cli.main(args) == 0
    assert (out / "math" / "math.patch").is_file()
    (out / "math" / "notes.txt").write_text("mine\n")
    assert cli.main(args + ["--ops", "If"]) == 0
    assert not (out / "math" / "math.patch").exists() and not (out / "math" / "math.md").exists()
    assert (out / "math" / "notes.txt").read_text() == "mine\n"
    assert (out / "controlflow" / "controlflow.patch").is_file()


def test_a_deprecated_ops_older_version_is_proved_from_a_changelog(tmp_path, real_report):
    """The tensor PR's Changelog tags Scatter-9 and Upsample-9 (whose last versions,
    Scatter-11 and Upsample-10, are deprecation stubs without parameters): a report made
    ``--tags-from`` it proves their cases against those tags -- the catalogue exports them
    at opset 10 and 9 -- naming the stub as the latest version, and fix-tags' re-check
    takes the report (it refused one whose cases had failed as 'no tags')."""
    changelog = tmp_path / "Changelog.md"
    changelog.write_text(tag_deprecated_ops_older_versions(
        (DATA / "Changelog.md").read_text(encoding="utf-8")), encoding="utf-8")
    report = real_report("Scatter,Upsample", "--tags-from", str(changelog))
    cases = {c["case"]: c for c in json.loads(report.read_text(encoding="utf-8"))["cases"]}
    stated = {"Scatter": {"data": "differentiable", "indices": "non-differentiable",
                          "updates": "differentiable", "output": "differentiable"},
              "Upsample": {"X": "differentiable", "scales": "unknown", "Y": "differentiable"}}
    for name in ("scatter_opset10", "upsample_linear_scales", "upsample_nearest"):
        rec = cases[name]
        assert rec["status"] not in ("no-tags", "error", "invalid"), (name, rec.get("error"))
        assert (rec["schema_version"], rec["latest_schema_version"]) == (
            9, 11 if rec["op"] == "Scatter" else 10)
        assert {p["name"]: p["tag"] for p in rec["parameters"]} == stated[rec["op"]]
        assert not any("tag_latest" in p for p in rec["parameters"])   # the stub states none
    assert cli.main(["fix-tags", "--onnx-src", str(SRC), "--report", str(report),
                     "-o", str(tmp_path / "fix.patch")]) == 0
