"""PR mode (``verify-all --changed-from BASE``): exactly what a PR changes is proved.

The PR is the installed onnx; the base is its own generated docs, edited (gate_fixture.py)
so each difference is one this test made: its expectations come from those edits, the
schema's history and the math, never from the gate's output.

- Clip-13 ``min``: the base says differentiable, the PR non-differentiable. Clip's output
  is x clamped to [min, max]: where x < min it is min itself, so d output / d min = 1
  there -- differentiable, whatever the tag. The math refutes the PR: exit 1, although the
  catalogue declares this very disagreement for today's tags.
- Relu-14 ``X``: the base says non-differentiable, the PR differentiable: max(x, 0) has
  derivative 1 for x > 0, so the change is confirmed.
- Neg-6: a schema version the base lacks (a new version): proved by the variant of Neg's
  cases at the newest opset where Neg-6 is in force; Neg is linear (-x), so every
  floating parameter is differentiable; the schema leaves Neg-6's tags unknown, so the
  evidence proposes them.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import onnx.defs
import pytest

from docs_examples import assert_example
from gate_fixture import drop_section, generate_docs, set_tag
from json_contract import validate_text
from torch_prover import cli
from torch_prover.cases import all_cases

D, N, U = "differentiable", "non-differentiable", "unknown"


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> Path:
    """The installed onnx's own Changelog.md and Operators.md (gen_doc.py, ~4 s)."""
    return generate_docs(tmp_path_factory.mktemp("onnx_docs"))


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("gate_cache")


def _pr_base(docs: Path, dest: Path) -> Path:
    """The base of the simulated PR (module doc): two tags changed, one version removed."""
    text = (docs / "Changelog.md").read_text(encoding="utf-8")
    text = set_tag(text, "Clip-13", "min", N, D)
    text = set_tag(text, "Relu-14", "X", D, N)
    text = drop_section(text, "Neg-6")
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "Changelog.md").write_text(text, encoding="utf-8")
    return dest / "Changelog.md"


def _in_force(op: str, version: int) -> tuple[int, int]:
    """The opsets in which ``op``-``version`` is in force, from onnx.defs's history."""
    since = sorted({s.since_version for s in onnx.defs.get_all_schemas_with_history()
                    if s.name == op and s.domain == ""})
    later = [v for v in since if v > version]
    return version, (later[0] - 1 if later else onnx.defs.onnx_opset_version())


def _expected_proofs() -> set[str]:
    """From the catalogue's declarations: the Clip and Relu cases whose own opset lies in
    Clip-13's and Relu-14's ranges, and each Neg case at the newest opset of Neg-6's."""
    names = set()
    for op, version in (("Clip", 13), ("Relu", 14)):
        lo, hi = _in_force(op, version)
        names |= {c.name for c in all_cases() if c.op == op and lo <= c.export_opset <= hi}
    _, neg_last = _in_force("Neg", 6)
    names |= {f"{c.name}@{neg_last}" for c in all_cases() if c.op == "Neg"}
    return names


def _gate(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "torch_prover", "verify-all", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "COLUMNS": "100"})


@pytest.fixture(scope="module")
def pr_run(docs, cache, tmp_path_factory):
    """The fixture PR, proved cold (empty cache) with --format json."""
    work = tmp_path_factory.mktemp("pr")
    base = _pr_base(docs, work / "base")
    done = _gate(work, "--changed-from", "base/Changelog.md", "--cache-dir", str(cache),
                 "--no-write", "--format", "json")
    return {"work": work, "base": base, "done": done, "doc": validate_text(done.stdout)}


def test_the_fixture_pr_proves_exactly_its_three_versions(pr_run):
    doc = pr_run["doc"]
    assert pr_run["done"].returncode == 1, pr_run["done"].stderr
    assert doc["exit_code"] == 1 and doc["status"] == "finding"
    changed = {(c["op"], c["version"], c["kind"]) for c in doc["changes"]}
    assert changed == {("Clip", 13, "changed tags"), ("Relu", 14, "changed tags"),
                       ("Neg", 6, "new schema version")}
    ran = {r["case"] for r in doc["cases"]}
    assert ran == _expected_proofs()
    assert {r["op"] for r in doc["cases"]} == {"Clip", "Relu", "Neg"}
    # every proof judged the version it was run for, against the PR's (installed) tags
    for r in doc["cases"]:
        version = 6 if r["op"] == "Neg" else 13 if r["op"] == "Clip" else 14
        assert r["schema_version"] == version and r["tags_from"] == "onnx.defs"


def test_each_changed_tag_gets_the_verdict_the_math_gives(pr_run):
    params = {(c["op"], c["version"], p["io"], p["name"]): p
              for c in pr_run["doc"]["changes"] for p in c["parameters"]}
    neg6 = onnx.defs.get_schema("Neg", 6)
    expected_neg = {("Neg", 6, io, f.name) for io, fs in (("input", neg6.inputs),
                                                          ("output", neg6.outputs))
                    for f in fs}
    assert set(params) == {("Clip", 13, "input", "min"), ("Relu", 14, "input", "X")} | \
        expected_neg
    clip = params["Clip", 13, "input", "min"]
    assert (clip["base"], clip["pr"], clip["verdict"], clip["supports"]) == \
        (D, N, "refuted", D)
    # the catalogue declares this disagreement; the gate fails on it all the same
    assert any(w["declared"] == "disagree" for w in clip["witnesses"])
    assert all(w["command"].startswith("torch-prover prove Clip --case ")
               for w in clip["witnesses"])
    relu = params["Relu", 14, "input", "X"]
    assert (relu["base"], relu["pr"], relu["verdict"], relu["supports"]) == (N, D, "confirmed", D)
    unknown = onnx.defs.OpSchema.DifferentiationCategory.Unknown
    assert all(f.differentiation_category == unknown for f in neg6.inputs + neg6.outputs)
    for key in expected_neg:   # the schema leaves them unknown; Neg is linear
        p = params[key]
        assert (p["base"], p["pr"], p["verdict"], p["supports"]) == (None, U, "proposed", D)
        assert p["witnesses"][0]["command"].endswith(f"--opset {_in_force('Neg', 6)[1]}")


def test_unchanged_tags_of_a_proved_version_are_listed_not_failed(pr_run):
    """Clip-13's max is tagged non-differentiable too (unchanged by the PR): the proofs
    find it differentiable, and the comment lists it without failing on it."""
    also = {(a["op"], a["version"], a["io"], a["name"]) for a in pr_run["doc"]["also"]}
    assert also == {("Clip", 13, "input", "max")}


def test_the_pr_comment_warm(pr_run, cache):
    """The same PR again, every proof from the cache: the Markdown comment (docs/pr-gate.md)."""
    done = _gate(pr_run["work"], "--changed-from", "base/Changelog.md", "--cache-dir",
                 str(cache), "--no-write", "--format", "markdown")
    assert done.returncode == 1, done.stderr
    n = len(_expected_proofs())
    assert f"{n}/{n} cases done ({n} from cache)" in done.stderr
    assert_example("pr-gate-markdown", "$ torch-prover verify-all --changed-from "
                   "base/Changelog.md --format markdown\n" + done.stdout)
    assert "torch-prover prove Neg --case neg_basic --opset 12" in done.stdout


def test_a_confirmed_change_passes(docs, cache, tmp_path):
    """A PR that changes one tag, rightly (Relu-14's X): exit 0."""
    text = set_tag((docs / "Changelog.md").read_text(encoding="utf-8"), "Relu-14", "X", D, N)
    (tmp_path / "Changelog.md").write_text(text, encoding="utf-8")
    done = _gate(tmp_path, "--changed-from", "Changelog.md", "--cache-dir", str(cache),
                 "--out", "evidence", "--format", "markdown", "--report", "comment.md")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("PR gate: 1 changed tags, none refuted (1 confirmed) in 1 ")
    comment = (tmp_path / "comment.md").read_text()
    assert comment.startswith("## torch-prover: the differentiability tags this PR changes")
    assert "| `Relu-14` | changed tags | input 0 (`X`) | non-differentiable | differentiable " \
           "| confirmed |" in comment
    lo, hi = _in_force("Relu", 14)
    relu = {c.name for c in all_cases() if c.op == "Relu" and lo <= c.export_opset <= hi}
    written = {p.parent.relative_to(tmp_path / "evidence").as_posix()
               for p in (tmp_path / "evidence").rglob("proof.json")}
    assert written == {f"Relu/{name}" for name in relu}


def test_a_waiver_from_pyproject_accepts_a_refutation(pr_run, cache, tmp_path):
    """The fixture PR, with a waiver for Clip's min read from [tool.torch-prover] in the
    pyproject.toml of a parent directory: waived, exit 0."""
    (tmp_path / "waivers.toml").write_text(
        '[[waiver]]\nop = "Clip"\nparameter = "min"\nreason = "tracked in onnx/onnx#1"\n')
    (tmp_path / "pyproject.toml").write_text('[tool.torch-prover]\nwaivers = "waivers.toml"\n')
    sub = tmp_path / "sub"
    sub.mkdir()
    done = _gate(sub, "--changed-from", str(pr_run["base"]), "--cache-dir", str(cache),
                 "--no-write", "--format", "json")
    doc = validate_text(done.stdout)
    assert done.returncode == 0, done.stderr
    clip = next(p for c in doc["changes"] if c["op"] == "Clip" for p in c["parameters"])
    assert (clip["verdict"], clip["waiver"]) == ("waived", "tracked in onnx/onnx#1")


# ----------------------------------------------------------------------------- no change
def test_an_unchanged_base_proves_nothing(docs, no_work, capsys, monkeypatch):
    """The installed onnx's own docs as the base: no change, no proof (no_work), exit 0."""
    monkeypatch.chdir(docs.parent)
    monkeypatch.setenv("COLUMNS", "100")
    code = cli.main(["verify-all", "--changed-from", "docs/Changelog.md", "--no-write"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert_example("pr-gate-nothing",
                   "$ torch-prover verify-all --changed-from docs/Changelog.md\n" + out)
    total = len({(s.name, s.since_version) for s in onnx.defs.get_all_schemas_with_history()
                 if s.domain == ""})
    assert (f"nothing to prove: the installed onnx has the base's tags in each of the {total} "
            "schema versions compared, and no other") in " ".join(out.split())
    assert out.rstrip().endswith("exit 0: the gate passes (no changed tag refuted)")


@pytest.mark.parametrize("fmt, written", [("json", "PR gate report (JSON) written to "),
                                          ("markdown", "PR comment written to ")])
def test_report_says_what_it_wrote_and_names_the_base_by_its_commit(
        docs, no_work, capsys, monkeypatch, tmp_path, fmt, written):
    """Run 1's JSON is not announced as a PR comment; TORCH_PROVER_BASE_COMMIT (the
    workflow's merge base) names the base in the document and the comment, not its path;
    a value that is not a commit is refused before any work."""
    monkeypatch.chdir(docs.parent)
    commit = "0123456789abcdef0123456789abcdef01234567"
    monkeypatch.setenv("TORCH_PROVER_BASE_COMMIT", commit)
    report = tmp_path / f"report.{fmt}"
    code = cli.main(["verify-all", "--changed-from", "docs/Changelog.md", "--no-write",
                     "--format", fmt, "--report", str(report)])
    err = capsys.readouterr().err
    assert code == 0 and err == f"{written}{report}\n", err
    written_text = report.read_text(encoding="utf-8")
    if fmt == "json":
        assert validate_text(written_text)["base"]["commit"] == commit
    else:
        assert f"Base: the merge base `{commit}` (Changelog.md" in written_text
        assert "docs/Changelog.md" not in written_text.split("PR:")[0]
    monkeypatch.setenv("TORCH_PROVER_BASE_COMMIT", "main\n::error::x")
    code = cli.main(["verify-all", "--changed-from", "docs/Changelog.md", "--no-write"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "not a commit" in err


# ----------------------------------------------------------------------------- other bases
def test_an_operators_md_base_compares_each_ops_latest_version(docs, pr_run, cache, tmp_path,
                                                               monkeypatch, capsys):
    """Relu's X flipped in an Operators.md: only Relu's latest version is compared and
    changed; the comment says what such a base cannot see."""
    from torch_prover.gate.changes import diff
    from torch_prover.tags.docs import load
    text = set_tag((docs / "Operators.md").read_text(encoding="utf-8"), "Relu", "X", D, N)
    (tmp_path / "Operators.md").write_text(text, encoding="utf-8")
    found = diff(load(tmp_path / "Operators.md"))
    latest = onnx.defs.get_schema("Relu").since_version
    assert found.latest_only and found.compared == len({
        s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain == ""})
    assert [(c.op, c.version, [p.label() for p in c.params]) for c in found.changes] == \
        [("Relu", latest, ["input 0 (X)"])]
    monkeypatch.chdir(tmp_path)
    code = cli.main(["verify-all", "--changed-from", "Operators.md", "--no-write",
                     "--cache-dir", str(cache)])
    out = capsys.readouterr().out
    assert code == 0
    assert "it documents each op's latest schema version only" in out


def test_a_new_op_without_a_case_says_how_to_add_one(docs, tmp_path, monkeypatch, capsys,
                                                     no_work):
    """A base without Shrink and StringConcat: two new ops. With no case for either (the
    catalogue seen without Shrink's), StringConcat is decided by its types (strings carry
    no gradient) and Shrink, which ships ONNX node tests, is decided case-free at their
    points (piecewise linear, slope 1 outside [-lambd, lambd]: its tags, both
    differentiable, are confirmed); the comment still gives the command that starts its
    case."""
    import torch_prover.cases as cases
    text = (docs / "Changelog.md").read_text(encoding="utf-8")
    for v in sorted({s.since_version for s in onnx.defs.get_all_schemas_with_history()
                     if s.name in ("Shrink", "StringConcat")}):
        for op in ("Shrink", "StringConcat"):
            if f'<a name="{op}-{v}">' in text:
                text = drop_section(text, f"{op}-{v}")
    (tmp_path / "Changelog.md").write_text(text, encoding="utf-8")
    real = cases.cases_for
    monkeypatch.setattr(cases, "cases_for", lambda op: [] if op == "Shrink" else real(op))
    monkeypatch.chdir(tmp_path)
    code = cli.main(["verify-all", "--changed-from", "Changelog.md", "--no-write",
                     "--format", "json"])
    doc = validate_text(capsys.readouterr().out)
    assert code == 0
    by_op = {c["op"]: c for c in doc["changes"]}
    assert set(by_op) == {"Shrink", "StringConcat"}
    assert all(c["kind"] == "new op" for c in doc["changes"])
    shrink = by_op["Shrink"]
    assert shrink["no_case"] and shrink["new_case"] == "torch-prover new-case Shrink"
    schema = onnx.defs.get_schema("Shrink")
    assert {f.differentiation_category for f in (*schema.inputs, *schema.outputs)} == {
        onnx.defs.OpSchema.DifferentiationCategory.Differentiable}
    assert {p["verdict"] for p in shrink["parameters"]} == {"confirmed"}
    assert all(p["supports"] == D and p["witnesses"][0]["case"] == "case-free"
               for p in shrink["parameters"])
    concat = onnx.defs.get_schema("StringConcat")
    for p in by_op["StringConcat"]["parameters"]:   # every type is a string: N by type
        formal = (concat.inputs if p["io"] == "input" else concat.outputs)[p["index"]]
        tag = {onnx.defs.OpSchema.DifferentiationCategory.NonDifferentiable: N,
               onnx.defs.OpSchema.DifferentiationCategory.Differentiable: D}.get(
            formal.differentiation_category, U)
        assert p["supports"] == N and p["verdict"] == {N: "confirmed", D: "refuted",
                                                        U: "proposed"}[tag]
    from torch_prover.gate.comment import markdown
    md = markdown(doc)
    assert "### Ops without a case" in md and "`torch-prover new-case Shrink` writes" in md


# ----------------------------------------------------------------------------- before any work
@pytest.mark.parametrize("extra, says", [
    (["--ops", "Relu"], "--changed-from with --ops: the ops are the ones the PR changes"),
    (["--versions", "all"], "--changed-from with --versions"),
    (["--shard", "1/2"], "--changed-from with --shard"),
    (["--tags-from", "Operators.md"], "--tags-from Operators.md: with --changed-from give "
                                      "the PR's docs/Changelog.md"),
    (["--format", "html"], "--changed-from with --format html: PR mode writes text, json, "
                           "markdown"),
    (["--report", "BASE"], "--report BASE: is the --changed-from file this run reads"),
    (["--report", "."], "--report .: is a directory"),
    (["--jobs", "0"], "--jobs 0: must be at least 1"),
])
def test_bad_usage_is_one_line_before_any_work(docs, extra, says, no_work, capsys,
                                                monkeypatch):
    monkeypatch.chdir(docs)
    base = "Changelog.md"
    args = [a.replace("BASE", base) for a in extra]
    code = cli.main(["verify-all", "--changed-from", base, "--no-write", *args])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and says.replace("BASE", base) in err, err


@pytest.mark.parametrize("content, says", [
    (None, "--changed-from missing.md: no such file"),
    ("# notes\n", "--changed-from: base.md:1: neither an Operators.md"),
])
def test_a_base_that_is_not_onnx_docs_is_refused(tmp_path, content, says, no_work, capsys,
                                                 monkeypatch):
    monkeypatch.chdir(tmp_path)
    name = "missing.md" if content is None else "base.md"
    if content is not None:
        (tmp_path / name).write_text(content)
    code = cli.main(["verify-all", "--changed-from", name, "--format", "json"])
    out = capsys.readouterr()
    assert code == 2 and out.err.count("\n") == 1 and says in out.err
    doc = validate_text(out.out)
    assert doc["kind"] == "error" and says in doc["reason"]


def test_a_comment_past_githubs_limit_keeps_the_table(pr_run):
    """Many changed versions: the details go, the table and headline stay, under 65,536
    with the marker line the comment workflow puts first; past that too, the table's rows
    are kept while they fit (output/markdown_limit.py, the one splitter), in order, and the
    comment says how many more JSON has."""
    from torch_prover.gate.comment import markdown
    from torch_prover.output.markdown_limit import COMMENT_MARKER, PR_BODY_LIMIT
    posted = len(COMMENT_MARKER) + 1   # the marker's line, before the comment
    doc = dict(pr_run["doc"])
    doc["changes"] = doc["changes"] * 60
    md = markdown(doc)
    assert posted + len(md) <= PR_BODY_LIMIT < len(markdown({**doc, "changes": doc["changes"][:3]})) * 60
    assert "The proofs behind each verdict are left out" in md
    assert md.count("| `Clip-13` | changed tags | input 1 (`min`) |") == 60
    rows = md.count("\n| ") - 2          # every table line but the header's two
    doc["changes"] = doc["changes"] * 20
    md = markdown(doc)
    kept = md.count("\n| ") - 2
    assert posted + len(md) <= PR_BODY_LIMIT and rows < kept < rows * 20
    assert md.startswith("## torch-prover: the differentiability tags this PR changes")
    assert f"... and {rows * 20 - kept} more changed parameters: `--format json` has every row" in md
    assert "The proofs behind each verdict are left out" in md


def test_pr_mode_speaks_ci(pr_run, cache, tmp_path):
    """The CI outputs of PR mode (docs/ci.md): one JUnit testcase per changed tag, failed
    exactly where the math refutes the change (Clip-13 min, module doc), and an ::error
    annotation for it; the warm rerun reuses the fixture's proofs."""
    import xml.etree.ElementTree as ET
    work = pr_run["work"]
    summary = tmp_path / "summary.md"
    done = subprocess.run(
        [sys.executable, "-m", "torch_prover", "verify-all", "--changed-from",
         "base/Changelog.md", "--cache-dir", str(cache), "--no-write", "--github",
         "--junit", str(tmp_path / "gate.xml")],
        cwd=work, capture_output=True, text=True, timeout=900,
        env={**os.environ, "COLUMNS": "100", "GITHUB_STEP_SUMMARY": str(summary)})
    assert done.returncode == 1, done.stderr
    n_changed = sum(len(c["parameters"]) for c in pr_run["doc"]["changes"])
    cases = ET.parse(tmp_path / "gate.xml").getroot().iter("testcase")
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert failed == ["Clip-13 input 1 (min)"]
    assert len(list(ET.parse(tmp_path / "gate.xml").getroot().iter("testcase"))) == n_changed
    errors = [line for line in done.stdout.splitlines() if line.startswith("::error")]
    assert len(errors) == 1 and "Clip" in errors[0]
    assert "1 failed" in summary.read_text() or "**1 failed**" in summary.read_text()
