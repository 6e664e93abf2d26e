"""PR mode blames only what the PR writes, and refuses a base from another onnx line.

The PR's tags are read from its docs (``--tags-from``), the installed onnx's own generated
docs, edited (gate_fixture.py); the base is the same docs without Resize-19: so the PR
adds Resize-19, a version the installed onnx has (provable without a build), whose every
parameter carries Resize-18's name and tag. Resize-18 tags ``roi`` and ``scales``
non-differentiable, which the math refutes (the catalogue declares both disagreements:
``cases/resize.py``). Copied forward unchanged, they are not the PR's doing: the gate
passes with a warning. A PR that also tags ``X`` non-differentiable wrote that tag: the
gate fails on it (Resize's output is a weighted sum of X's values: differentiable), and
on nothing else. And a version the installed onnx lacks: in the base, main ahead of the
installed onnx -- normal, named, and "not proved: build the PR's onnx" only when the PR
changes it -- unless the installed onnx closed an opset without a version the newer base
has there (not of the base's line: refused); "not proved: build the PR's onnx" when only
the PR adds it.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gate_fixture import drop_section, generate_docs, retag, section_span
from json_contract import validate_text
from torch_prover import cli

D, N = "differentiable", "non-differentiable"
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> Path:
    return generate_docs(tmp_path_factory.mktemp("onnx_docs"))


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("inherit_cache")


def _gate(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "torch_prover", "verify-all", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "COLUMNS": "100", "GITHUB_ACTIONS": "true"})


def _pr(docs: Path, work: Path, edit_x: bool) -> subprocess.CompletedProcess:
    text = (docs / "Changelog.md").read_text(encoding="utf-8")
    work.mkdir(parents=True, exist_ok=True)
    (work / "base.md").write_text(drop_section(text, "Resize-19"), encoding="utf-8")
    pr = retag(text, "Resize-19", "X", N) if edit_x else text
    (work / "pr.md").write_text(pr, encoding="utf-8")
    return work


def _params(doc: dict) -> dict[str, dict]:
    return {p["name"]: p for c in doc["changes"] for p in c["parameters"]
            if (c["op"], c["version"]) == ("Resize", 19)}


def test_a_declared_wrong_tag_copied_forward_passes_with_a_warning(docs, cache, tmp_path):
    work = _pr(docs, tmp_path, edit_x=False)
    done = _gate(work, "--changed-from", "base.md", "--tags-from", "pr.md", "--no-write",
                 "--cache-dir", str(cache), "--format", "json", "--junit", "junit.xml")
    doc = validate_text(done.stdout)
    assert done.returncode == 0, done.stderr
    assert [(c["op"], c["version"], c["kind"]) for c in doc["changes"]] == \
        [("Resize", 19, "new schema version")]
    params = _params(doc)
    assert {n: p["inherited"] for n, p in params.items()} == dict.fromkeys(params, "Resize-18")
    for name in ("roi", "scales"):   # the math refutes them; the PR only copied them
        p = params[name]
        assert (p["verdict"], p["supports"]) == ("inherited", D)
        assert "inherited from Resize-18" in p["why"] and "catalogue declares" in p["why"]
    assert {params[n]["verdict"] for n in ("X", "Y", "sizes")} == {"confirmed"}
    warnings = [line for line in done.stdout.splitlines() + done.stderr.splitlines()
                if line.startswith("::warning ")]
    assert len(warnings) == 2 and not any(line.startswith("::error ") for line in
                                          done.stderr.splitlines())
    assert all("Resize-19 input" in w for w in warnings)


def test_a_tag_the_pr_changes_beside_a_copied_one_fails_alone(docs, cache, tmp_path):
    work = _pr(docs, tmp_path, edit_x=True)
    done = _gate(work, "--changed-from", "base.md", "--tags-from", "pr.md", "--no-write",
                 "--cache-dir", str(cache), "--format", "json")
    doc = validate_text(done.stdout)
    assert done.returncode == 1, done.stderr
    params = _params(doc)
    assert params["X"]["inherited"] is None   # Resize-18 tags X differentiable
    assert (params["X"]["verdict"], params["X"]["supports"]) == ("refuted", D)
    refuted = [n for n, p in params.items() if p["verdict"] == "refuted"]
    assert refuted == ["X"]
    assert {params[n]["verdict"] for n in ("roi", "scales")} == {"inherited"}
    from torch_prover.ci.outcomes import Result, all_tests
    failed = [t.label for t in all_tests(doc) if t.result is Result.FAILED]
    assert failed == ["Resize-19 input 0 (X)"]


def test_a_base_of_another_onnx_line_is_refused_before_any_proof(no_work, capsys,
                                                                 monkeypatch):
    """onnx 1.19.0's Operators.md as the base of the installed onnx (1.23): versions added
    at several opsets (the releases between), which no single PR adds."""
    import onnx.defs
    monkeypatch.chdir(DATA / "releases")
    code = cli.main(["verify-all", "--changed-from", "Operators-v1.19.0.md", "--no-write"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "are not one pull request apart" in err and "only the PR's tags have" in err
    newest = onnx.defs.onnx_opset_version()
    assert f"{newest}" in err.split("at opsets ", 1)[1].split(":", 1)[0]


def _with_a_later_relu(text: str) -> tuple[str, int]:
    """``text`` (a Changelog.md of the installed onnx) with an opset past the installed
    onnx's newest holding Relu (Relu-14's section, renumbered): a version it lacks."""
    import onnx.defs
    start, end = section_span(text, "Relu-14")
    later = onnx.defs.onnx_opset_version() + 1
    relu = text[start:end].replace("Relu-14", f"Relu-{later}").replace(
        "since version 14 of", f"since version {later} of")
    at = text.index("\n# ai.onnx.preview\n")
    return (text[:at] + f"\n## Version {later} of the default ONNX operator set\n" + relu
            + text[at:]), later


def _with_a_relu_at(text: str, opset: int) -> str:
    """``text`` with Relu-14's section renumbered to ``opset`` under that opset's heading
    (an opset the installed onnx has): a version the installed onnx lacks at an opset it
    closed without it."""
    start, end = section_span(text, "Relu-14")
    relu = text[start:end].replace("Relu-14", f"Relu-{opset}").replace(
        "since version 14 of", f"since version {opset} of")
    head = f"## Version {opset} of the default ONNX operator set\n"
    at = text.index(head) + len(head)
    return text[:at] + relu + text[at:]


def test_main_ahead_of_the_installed_onnx_is_normal(docs, no_work, capsys, monkeypatch,
                                                    tmp_path):
    """Issue 40: a base and PR documenting an opset past the installed onnx's newest (Relu
    there: a version it lacks) are the normal state of main between releases: nothing to
    prove (the PR changes nothing), exit 0, the version named as newer than the installed
    onnx."""
    newer, later = _with_a_later_relu((docs / "Changelog.md").read_text(encoding="utf-8"))
    for name in ("base.md", "pr.md"):
        (tmp_path / name).write_text(newer, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code = cli.main(["verify-all", "--changed-from", "base.md", "--tags-from", "pr.md",
                     "--no-write", "--format", "json"])
    doc = validate_text(capsys.readouterr().out)
    assert code == 0 and doc["changes"] == [] and doc["reason"].startswith("nothing to prove")
    assert doc["absent"] == [{"version": f"Relu-{later}", "why": "newer than the installed onnx"}]
    assert doc["summary"]["needs_build"] == 0


def test_a_change_to_a_version_newer_than_the_installed_onnx_needs_the_build(
        docs, cache, tmp_path):
    """On a base ahead of the installed onnx, a PR that re-tags Relu-14's X (which the
    installed onnx has) and Relu-<later>'s X (which it lacks): the first is proved -- Relu
    passes x through where x > 0, d relu/dx = 1 there, so non-differentiable is refuted --
    the second is "not proved: build the PR's onnx", a typed state in JSON, the comment
    and JUnit, and the one version the workflow builds for."""
    newer, later = _with_a_later_relu((docs / "Changelog.md").read_text(encoding="utf-8"))
    (tmp_path / "base.md").write_text(newer, encoding="utf-8")
    pr = retag(retag(newer, "Relu-14", "X", N), f"Relu-{later}", "X", N)
    (tmp_path / "pr.md").write_text(pr, encoding="utf-8")
    done = _gate(tmp_path, "--changed-from", "base.md", "--tags-from", "pr.md", "--no-write",
                 "--cache-dir", str(cache), "--format", "json", "--junit", "junit.xml")
    doc = validate_text(done.stdout)
    assert done.returncode == 1, done.stderr
    by = {(c["op"], c["version"], p["name"]): p for c in doc["changes"] for p in c["parameters"]}
    assert set(by) == {("Relu", 14, "X"), ("Relu", later, "X")}
    assert (by["Relu", 14, "X"]["verdict"], by["Relu", 14, "X"]["supports"]) == ("refuted", D)
    assert by["Relu", later, "X"]["verdict"] == "not proved: build the PR's onnx"
    assert doc["summary"]["needs_build"] == 1
    assert doc["summary"]["verdicts"]["not proved: build the PR's onnx"] == 1
    from torch_prover.gate.comment import markdown, text
    assert f"| `Relu-{later}` | changed tags | input 0 (`X`) | differentiable | " \
        f"non-differentiable | not proved: build the PR's onnx |" in markdown(doc)
    assert "not proved: build the PR's onnx" in text(doc, 100)
    junit = (tmp_path / "junit.xml").read_text(encoding="utf-8")
    assert 'type="not proved: build the PR&apos;s onnx"' in junit \
        or "type=\"not proved: build the PR's onnx\"" in junit


def test_an_installed_onnx_not_of_the_bases_line_is_refused(docs, no_work, capsys,
                                                            monkeypatch, tmp_path):
    """The real refusal kept: a base newer than the installed onnx (an opset past its
    newest) that also documents a version at an opset the installed onnx has and closed
    without it (Relu-20, which no onnx has): not a release of the base's line, exit 2, one
    line naming it -- never "older" for the version past its newest."""
    newer, later = _with_a_later_relu((docs / "Changelog.md").read_text(encoding="utf-8"))
    other = _with_a_relu_at(newer, 20)
    for name in ("base.md", "pr.md"):
        (tmp_path / name).write_text(other, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code = cli.main(["verify-all", "--changed-from", "base.md", "--tags-from", "pr.md",
                     "--no-write"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "lacks 1 schema versions the newer base documents at opsets it has" in err
    assert "Relu-20" in err and f"Relu-{later}" not in err and "older" not in err


def test_a_version_the_installed_onnx_lacks_is_not_proved_build_the_pr(docs, no_work, capsys,
                                                                       monkeypatch, tmp_path):
    """The PR's own new version that the installed onnx lacks is not a mismatch: it is
    'not proved: build the PR's onnx', named, with nothing proved in its place (no_work:
    no proof starts) and the count the workflow reads to decide on a build."""
    text = (docs / "Changelog.md").read_text(encoding="utf-8")
    newer, later = _with_a_later_relu(text)
    (tmp_path / "base.md").write_text(text, encoding="utf-8")
    (tmp_path / "pr.md").write_text(newer, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code = cli.main(["verify-all", "--changed-from", "base.md", "--tags-from", "pr.md",
                     "--no-write", "--format", "json"])
    doc = validate_text(capsys.readouterr().out)
    assert code == 0
    assert [(c["op"], c["version"], c["kind"], c["unbuilt"]) for c in doc["changes"]] == \
        [("Relu", later, "new schema version", True)]
    assert doc["summary"]["needs_build"] == 1 and doc["cases"] == []
    for p in doc["changes"][0]["parameters"]:
        assert p["verdict"] == "not proved: build the PR's onnx" and "build the PR's onnx" in p["why"]
    from torch_prover.gate.comment import markdown
    assert f"build the PR's onnx to prove them\n\n- `Relu-{later}`" in markdown(doc)
