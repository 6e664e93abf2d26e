"""What CI reads: GitHub annotations (escaping, the line in onnx/defs), the step summary, and
JUnit XML (parsed by junitparser and by xml.etree), from real runs.

The failing run's expectations come from outside the code under test: its tag source is
ONNX's Changelog with Softmax-13's ``input`` flipped to non-differentiable (so both its
cases must disagree there, and nowhere else), the line an annotation must name is found
in the fixture sources by text search, and the escapes are GitHub's rules worked by hand.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from junitparser import JUnitXml

from torch_prover import cli
from torch_prover.ci.github import Locator, annotations, command
from torch_prover.output.inert import workflow_data as escape_data
from torch_prover.output.inert import workflow_property as escape_property
from torch_prover.ci.junit import junit_xml
from torch_prover.ci.outcomes import Result, Why, all_tests
from torch_prover.batch.summary import exit_code

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SRC = DATA / "onnx-src"
FLIP_AT = '<a name="Softmax-13"></a>'
FLIPPED = "<dt><tt>input</tt> (non-differentiable) : T</dt>"


def flipped_changelog(tmp: Path) -> Path:
    """ONNX's Changelog.md with Softmax-13's input tagged non-differentiable."""
    text = (DATA / "Changelog.md").read_text(encoding="utf-8")
    at = text.index(FLIP_AT)
    old = "<dt><tt>input</tt> (differentiable) : T</dt>"
    k = text.index(old, at)
    out = tmp / "Changelog-flipped.md"
    out.write_text(text[:k] + FLIPPED + text[k + len(old):], encoding="utf-8")
    return out


def declared_line(path: Path, anchor: str, call: str) -> int:
    """1-based line of the first ``call`` after ``anchor`` in ``path`` (text search)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, x in enumerate(lines) if anchor in x)
    return next(i for i in range(start, len(lines)) if call in lines[i]) + 1


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ci_outputs")
    tags = flipped_changelog(tmp)
    env = {**os.environ, "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(tmp / "summary.md"),
           "GITHUB_WORKSPACE": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-m", "torch_prover", "verify-all", "--ops", "Softmax", "--no-write",
         "--versions", "13..25", "--tags-from", str(tags), "--cache-dir", str(tmp / "cache"),
         "--onnx-src", str(SRC), "--junit", str(tmp / "junit.xml"), "--format", "json",
         "--report", str(tmp / "report.json")],
        capture_output=True, text=True, env=env, timeout=900)
    return {"tmp": tmp, "tags": tags, "done": done,
            "report": json.loads((tmp / "report.json").read_text())}


def test_escaping_follows_githubs_rules():
    assert escape_data("50% done\r\nnext::x,y") == "50%25 done%0D%0Anext::x,y"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    line = command("error", "tag\n::add-mask::secret", file="onnx/defs/a,b.cc", line=7,
                   title="Clip-13: input 1, min")
    assert line == ("::error file=onnx/defs/a%2Cb.cc,line=7,title=Clip-13%3A input 1%2C min"
                    "::tag%0A::add-mask::secret")
    assert "\n" not in line
    assert command("error", "m", file=None, line=None, title="t") == "::error title=t::m"


def test_a_refuted_tag_fails_in_every_language(failing_run):
    done, rep, tmp = failing_run["done"], failing_run["report"], failing_run["tmp"]
    assert done.returncode == 1, done.stderr[-2000:]
    # the report's own disagreements, undeclared: exactly the flipped parameter
    refuted = {(r["op"], r["schema_version"], p["io"], p["index"]) for r in rep["cases"]
               for p in r["parameters"] if p["verdict"] == "disagree" and not p.get("expected")}
    assert refuted == {("Softmax", 13, "input", 0)}

    # annotations: on stderr (stdout is the JSON document), one per failing test, at the
    # line of the .Input call of Softmax's generator in the fixture's math/defs.cc
    errors = [x for x in done.stderr.splitlines() if x.startswith("::error ")]
    assert len(errors) == 1, done.stderr[-3000:]
    line = declared_line(SRC / "onnx/defs/math/defs.cc", "SoftmaxFamilyDocGenerator(",
                         "schema.Input(")
    assert errors[0].startswith(f"::error file=onnx/defs/math/defs.cc,line={line},"
                                "title=torch-prover%3A Softmax-13 input 0 (input)::")
    assert "tagged non-differentiable, evidence supports differentiable" in errors[0]
    assert "torch-prover prove Softmax --case softmax_" in errors[0]
    assert f"--tags-from {failing_run['tags']}" in errors[0]
    json.loads(done.stdout)   # stdout stays one JSON document

    # JUnit, read by two parsers: the failure is there, at its test, with its message
    xml = JUnitXml.fromfile(str(tmp / "junit.xml"))
    cases = [c for suite in xml for c in suite]
    failed = [c for c in cases if c.is_failure]
    assert [c.name for c in failed] == ["Softmax-13 input 0 (input)"]
    assert failed[0].classname == "Softmax"
    assert "undeclared disagreement" in failed[0].result[0].message
    root = ET.parse(tmp / "junit.xml").getroot()
    assert root.tag == "testsuites" and root.get("failures") == "1"
    assert len(root.findall(".//testcase")) == len(cases) == int(root.get("tests"))
    # one test per parameter of each schema version the run covered (the report's cells)
    cells = [(e["version"], c["io"], c["index"]) for o in rep["versions"]["ops"]
             for e in o["versions"] for c in e["cells"]]
    assert len(cases) == len(set(cells)) > 0

    summary = (tmp / "summary.md").read_text()
    assert summary.startswith("## torch-prover: finding")
    assert "Softmax-13 input 0 (input)" in summary and "**1 failed**" in summary


JUNIT_XSD = Path(__file__).resolve().parent / "data" / "junit" / "junit-10.xsd"


def test_the_junit_document_is_what_a_dashboard_reads(failing_run):
    """junit-10.xsd (Jenkins' xUnit, tests/data/junit) accepts it; the suite is named by
    the command's verb and selection, not its paths; the failed testcase carries the file
    and line of its parameter's declaration (--onnx-src), as the annotation does."""
    import xmlschema
    path = failing_run["tmp"] / "junit.xml"
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(str(path))
    root = ET.parse(path).getroot()
    assert [s.get("name") for s in root.iter("testsuite")] == \
        ["torch-prover verify-all --ops Softmax --versions 13..25"]
    assert str(failing_run["tmp"]) not in path.read_text(encoding="utf-8").split("<testcase")[0]
    failed = [c for c in root.iter("testcase") if c.find("failure") is not None]
    line = declared_line(SRC / "onnx/defs/math/defs.cc", "SoftmaxFamilyDocGenerator(",
                         "schema.Input(")
    assert [(c.get("file"), c.get("line")) for c in failed] == \
        [("onnx/defs/math/defs.cc", str(line))]


def test_without_sources_the_annotation_names_the_op(failing_run):
    found = all_tests(failing_run["report"])
    lines = annotations(found, Locator(None))
    assert len(lines) == 1
    assert lines[0].startswith("::error title=torch-prover%3A Softmax-13 input 0 (input)::")


def test_failed_tests_are_the_exit_code(failing_run, full_run):
    """``exit 1`` and "some test failed" are one thing, on a failing run and on the full
    default run; the default run's declared disagreements are skipped tests, each of them."""
    for rep in (failing_run["report"], full_run["report"]):
        found = all_tests(rep)
        assert (exit_code(rep) == 1) == any(t.result is Result.FAILED for t in found)
    rep = full_run["report"]
    found = all_tests(rep)
    declared = {(r["op"], r["schema_version"], p["io"], p["index"]) for r in rep["cases"]
                for p in r["parameters"] if p["verdict"] == "disagree"}
    skipped = {(t.op, t.version, t.io, t.index) for t in found if t.why is Why.DECLARED}
    assert skipped == declared
    params = {(r["op"], r["schema_version"], p["io"], p["index"]) for r in rep["cases"]
              for p in r["parameters"]}
    params |= {(o["op"], o.get("schema_version"), p["io"], p["index"]) for o in rep["ops"]
               for p in o.get("parameters") or ()}
    assert len(found) == len(params)   # a full default run: every test is a parameter
    root = ET.fromstring(junit_xml(found, "torch-prover verify-all").encode())
    assert int(root.get("tests")) == len(params) and root.get("failures") == "0"
    assert root.get("skipped") is None   # junit-10.xsd: no skipped on <testsuites>
    assert int(root.find("testsuite").get("skipped")) == \
        sum(t.result is Result.SKIPPED for t in found)


def test_a_forged_record_cannot_break_the_xml_or_start_a_command(failing_run):
    rep = json.loads(json.dumps(failing_run["report"]))
    for r in rep["cases"] + rep["versions"]["cases"]:
        for p in r["parameters"]:
            if p["verdict"] == "disagree":
                p["reason"] = "bad\x01byte\n::add-mask::x\r::warning::y"
    text = junit_xml(all_tests(rep), "suite\x02")
    root = ET.fromstring(text.encode())
    assert root.get("failures") == "1"
    lines = annotations(all_tests(rep), Locator(None))
    assert all("\n" not in x and "\r" not in x for x in lines)
    assert any("%0A::add-mask::x%0D::warning::y" in x for x in lines)


def test_outputs_are_checked_before_any_work(tmp_path, no_work, capsys):
    tags = tmp_path / "Operators.md"
    tags.write_text((DATA / "Operators.md").read_text(encoding="utf-8"), encoding="utf-8")
    cache = tmp_path / "cache"
    cases = [
        (["--tags-from", str(tags), "--junit", str(tags)], "is the --tags-from file"),
        (["--cache-dir", str(cache), "--junit", str(cache / "j.xml")], "is inside --cache-dir"),
        (["--junit", str(tmp_path)], "is a directory"),
        (["--junit", ""], "--junit: empty path"),
        (["--report", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.json")],
         "is also --report"),
        (["--onnx-src", str(SRC), "--no-github"], "give it with --github"),
        (["--onnx-src", str(tmp_path), "--github"], "no onnx/defs there"),
    ]
    for extra, said in cases:
        code = cli.main(["verify-all", "--ops", "Relu", "--no-write", *extra])
        err = capsys.readouterr().err
        assert code == 2 and said in err, (extra, err)
    report = tmp_path / "shard.json"
    report.write_text("{}")
    assert cli.main(["merge", str(report), "--junit", str(report)]) == 2
    assert "is the REPORT file" in capsys.readouterr().err
    assert report.read_text() == "{}"


def test_docs_annotation_example(failing_run):
    from docs_examples import assert_example
    rep = json.loads(json.dumps(failing_run["report"]))
    rep["summary"]["tags_path"] = failing_run["tags"].name   # the docs show a relative path
    lines = annotations(all_tests(rep), Locator(SRC, workspace=str(SRC)))
    assert_example("github-annotation", "\n".join(lines))


def _failed_test(k: int):
    from torch_prover.ci.outcomes import Grain, Test
    return Test(Grain.PARAMETER, f"Op{k}", "", 1, "input", 0, "x", Result.FAILED,
                Why.DISAGREE, f"reason {k} " + "x" * 400, (f"case{k}",),
                f"torch-prover prove Op{k} --case case{k}")


def test_the_step_summary_keeps_to_a_comments_limit_through_the_one_splitter():
    """The step summary keeps to GitHub's 65,536-character limit for a comment's body
    (output/markdown_limit.py, the one place that limit is written and kept): every failed
    test's row while they fit, in order, then how many more; the whole list when it fits."""
    from torch_prover.ci.github import summary_markdown
    from torch_prover.output.markdown_limit import PR_BODY_LIMIT
    report = {"status": "failed", "reason": "1000 failed tests"}
    many = [_failed_test(k) for k in range(1000)]
    md = summary_markdown(many, report, "torch-prover verify-all")
    assert len(md) <= PR_BODY_LIMIT < sum(len(t.message) for t in many)
    shown = [k for k in range(1000) if f"| `Op{k}-1 input 0 (x)` |" in md]
    assert shown == list(range(len(shown))) and 100 < len(shown) < 1000
    assert f"... and {1000 - len(shown)} more failed tests" in md
    assert "65,536-character limit" in md and md.endswith("the JUnit XML lists every test.\n")
    few = summary_markdown(many[:3], report, "torch-prover verify-all")
    assert all(f"| `Op{k}-1 input 0 (x)` |" in few for k in range(3)) and "more failed" not in few


def test_the_ci_outputs_are_checked_once_with_the_others(tmp_path, no_work, capsys,
                                                         monkeypatch):
    """--junit and $GITHUB_STEP_SUMMARY are checked by the output rule with every other
    output (preflight.outputs_checked), once each: ci/options checked them a second time."""
    from torch_prover import preflight
    real, seen = preflight.writable_file, []
    monkeypatch.setattr(preflight, "writable_file",
                        lambda path, what: seen.append(what) or real(path, what))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    notes = tmp_path / "notes.md"   # read after every output is checked: refused there
    notes.write_text("# notes\n")
    code = cli.main(["verify-all", "--ops", "Relu", "--no-write", "--github",
                     "--junit", str(tmp_path / "j.xml"), "--tags-from", str(notes)])
    assert code == 2 and "neither an Operators.md" in capsys.readouterr().err
    assert seen.count("--junit") == 1 and seen.count("$GITHUB_STEP_SUMMARY") == 1


def test_a_tests_reproduce_command_is_the_one_the_report_prints(failing_run):
    """Every CI test's reproduce command is the report's own (batch_report.prove_command:
    the case, its opset, the report's --tags-from), not a copy that adds the flag again."""
    from torch_prover.output.batch_report import reproduce
    rep = failing_run["report"]
    records = {r["case"]: r for r in rep["cases"] + rep["versions"]["cases"]}
    checked = 0
    for t in all_tests(rep):
        if t.reproduce and t.cases and all(c in records for c in t.cases):
            assert t.reproduce in {reproduce(rep, records[c]) for c in t.cases}, t
            assert t.reproduce.endswith(f" --tags-from {rep['summary']['tags_path']}")
            checked += 1
    assert checked == 2   # Softmax-13 input and output: the run's two tests


def test_onnx_defs_is_read_once_and_only_when_a_test_needs_a_line(failing_run, tmp_path,
                                                                  monkeypatch, capsys):
    """Issue 40, item 5: the JUnit file and the annotations share one reading of onnx/defs,
    and a run with no test (a PR with nothing to prove) reads none: the second gate run
    costs no tokenizing then."""
    from torch_prover.ci import options as ci_options
    from torch_prover.fix import locate
    reads = []
    real = locate.read_tree
    monkeypatch.setattr(locate, "read_tree", lambda root: reads.append(root) or real(root))
    plan = ci_options.Plan(github=True, junit=str(tmp_path / "j.xml"), onnx_src=SRC)
    ci_options.emit(plan, failing_run["report"], "json")
    err = capsys.readouterr().err
    assert reads == [SRC] and "::error file=" in err      # lines found, from one reading
    nothing = {"kind": "pr-gate", "changes": [], "failed": [], "summary": {}}
    ci_options.emit(ci_options.Plan(github=True, junit=str(tmp_path / "k.xml"), onnx_src=SRC),
                    nothing, "markdown")
    assert reads == [SRC]                                 # nothing located: nothing read
    assert (tmp_path / "k.xml").is_file()
