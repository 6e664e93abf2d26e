"""The PR gate on ai.onnx.ml: a base docs/Changelog-ml.md and the PR's, and a changed tag of
an ML op judged by that domain's evidence (its reference cases, else its types).

The PR's file is made from a real Changelog-ml.md (tests/data: what onnx 1.23.2's
gen_doc writes from the schemas) with one input's tag written in, as gen_doc would write
it after a PR tags that input. The expected verdicts come from the math each reference
case declares (``test_domain_cases.MATH``) and the schema's types.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_lines import deadline
from test_domain_cases import MATH

from torch_prover import cli

DATA = Path(__file__).parent / "data"
BASE = DATA / "Changelog-ml.md"


def _tagged(tmp: Path, op: str, version: int, name: str, tag: str) -> Path:
    """The real Changelog-ml.md with input ``name`` of ``op``-``version`` tagged ``tag``:
    its line ``<dt><tt>X</tt> : T</dt>`` under the section's Inputs becomes
    ``<dt><tt>X</tt> (tag) : T</dt>``, gen_doc's form (docs/Changelog.md)."""
    text = BASE.read_text(encoding="utf-8")
    section = text.index(f'<a name="ai.onnx.ml.{op}-{version}">')
    inputs = text.index("#### Inputs", section)
    line = text.index(f"<dt><tt>{name}</tt> : ", inputs)
    at = line + len(f"<dt><tt>{name}</tt>")
    path = tmp / "Changelog-ml-pr.md"
    path.write_text(text[:at] + f" ({tag})" + text[at:], encoding="utf-8")
    assert path.read_text().count(f"({tag})") == 1
    return path


def _gate(tmp: Path, pr: Path, capsys) -> tuple[int, dict]:
    with deadline(300):
        code = cli.main(["verify-all", "--changed-from", str(BASE), "--tags-from", str(pr),
                         "--no-write", "--format", "json", "-q",
                         "--cache-dir", str(tmp / "cache")])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("op,name,verdict,supports", [
    # a step: derivative 0 wherever it exists (its reference case, both witnesses)
    ("Binarizer", "X", "refuted", MATH["Binarizer"]["X"][0]),
    # Y = (X - offset) * scale: dY/dX = diag(scale) (its reference case)
    ("Scaler", "X", "confirmed", MATH["Scaler"]["X"][0]),
    # no case: X is a string or int64 tensor, non-differentiable by its types
    ("CategoryMapper", "X", "refuted", "non-differentiable"),
])
def test_a_pr_tagging_an_ml_input_differentiable_is_judged(op, name, verdict, supports,
                                                          tmp_path, capsys):
    """One tag changed in the PR's Changelog-ml.md: exactly that parameter of that version
    is the change, judged by the ai.onnx.ml evidence; the gate fails (exit 1) only when the
    evidence refutes it."""
    import onnx.defs
    if op == "CategoryMapper":   # the types that decide it, from the schema
        s = onnx.defs.get_schema(op, 1, "ai.onnx.ml")
        (types,) = [c.allowed_type_strs for c in s.type_constraints
                    if c.type_param_str == s.inputs[0].type_str]
        assert not any(t.startswith(("tensor(float", "tensor(double")) for t in types)
    code, doc = _gate(tmp_path, _tagged(tmp_path, op, 1, name, "differentiable"), capsys)
    ml = [s for s in onnx.defs.get_all_schemas_with_history() if s.domain == "ai.onnx.ml"]
    assert doc["summary"]["versions_compared"] == len(ml)
    (change,) = doc["changes"]
    assert (change["op"], change["version"], change["kind"]) == (op, 1, "changed tags")
    (param,) = change["parameters"]
    assert (param["io"], param["index"], param["name"], param["base"], param["pr"]) == \
        ("input", 0, name, "unknown", "differentiable")
    assert (param["verdict"], param["supports"]) == (verdict, supports)
    from torch_prover.cases.other_domains import DOMAIN_CASES
    cases = {c.name for c in DOMAIN_CASES if c.op == op}
    assert any(w["case"] in cases for w in param["witnesses"]) == (op != "CategoryMapper")
    for w in param["witnesses"]:   # a reference case: reproduced by verify-all --domain
        if w["case"] in cases:
            assert w["command"] == (f"torch-prover verify-all --domain ai.onnx.ml --ops {op} "
                                    f"--no-write --tags-from {tmp_path / 'Changelog-ml-pr.md'}")
    assert code == (1 if verdict == "refuted" else 0)


def test_ml_and_default_domain_docs_are_not_compared_with_each_other(tmp_path, capsys):
    """A base of one domain and a PR's docs of the other: one line, exit 2, naming the
    file and the domain it lacks, before any proof."""
    for base, pr, says in ((BASE, DATA / "Changelog.md", "documents no ai.onnx.ml op"),
                           (DATA / "Changelog.md", BASE, "documents no ai.onnx op")):
        with deadline(120):
            code = cli.main(["verify-all", "--changed-from", str(base), "--tags-from",
                             str(pr), "--no-write", "--no-cache"])
        err = capsys.readouterr().err.strip()
        assert code == 2 and says in err and pr.name in err and "\n" not in err


def test_a_domain_case_runs_the_version_its_record_names():
    """The gate picks the reference cases of a changed version by the version their node
    runs (``batch.domains.case_version``, from the reference op's opset, without proving):
    each is the schema version its committed record ran (engine.prove.domain_opset, read
    from the exported model)."""
    from torch_prover.batch.domains import case_version
    from torch_prover.cases.other_domains import DOMAIN_CASES
    models = Path(__file__).resolve().parents[1] / "models"
    for c in DOMAIN_CASES:
        record = json.loads((models / c.op / c.name / "proof.json").read_text())
        assert case_version(c) == record["schema_version"], c.name


def test_merge_joins_the_two_domains_reports_into_one_verdict(tmp_path, capsys):
    """The workflow's two runs -- ai.onnx (Relu-14's X fixed to the installed onnx's tag:
    confirmed) and ai.onnx.ml (Binarizer-1's X tagged differentiable: a step, refuted by
    MATH) -- joined by ``merge``: one pr-gate document valid against the shipped schema,
    both changes, the counts summed, the worse exit (1); each domain's verdict under
    ``parts``. Two reports of one domain, or a format the gate does not write: one line,
    exit 2."""
    from gate_fixture import generate_docs, retag

    from torch_prover.output.json_schema import first_problem
    installed = (generate_docs(tmp_path / "gen") / "Changelog.md").read_text(encoding="utf-8")
    base = tmp_path / "base-Changelog.md"
    base.write_text(retag(installed, "Relu-14", "X", "non-differentiable"), encoding="utf-8")
    pr = tmp_path / "Changelog.md"
    pr.write_text(installed, encoding="utf-8")
    ml_pr = _tagged(tmp_path, "Binarizer", 1, "X", "differentiable")
    reports = []
    for base_docs, pr_docs, name in ((base, pr, "pr-gate.json"),
                                     (BASE, ml_pr, "pr-gate-ml.json")):
        with deadline(300):
            cli.main(["verify-all", "--changed-from", str(base_docs), "--tags-from",
                      str(pr_docs), "--no-write", "--format", "json", "-q",
                      "--cache-dir", str(tmp_path / "cache"),
                      "--report", str(tmp_path / name)])
        reports.append(str(tmp_path / name))
    # one report merged is the comment the gate's own run writes (the workflow's run 2 was
    # that run, from the cache)
    with deadline(300):
        cli.main(["verify-all", "--changed-from", str(base), "--tags-from", str(pr),
                  "--no-write", "--format", "markdown", "-q", "--cache-dir",
                  str(tmp_path / "cache"), "--report", str(tmp_path / "run.md")])
        cli.main(["merge", reports[0], "--format", "markdown", "--report",
                  str(tmp_path / "merged.md")])
    assert (tmp_path / "merged.md").read_text() == (tmp_path / "run.md").read_text()
    capsys.readouterr()
    # ML's report first: ai.onnx's still leads the merged one
    assert cli.main(["merge", reports[1], reports[0], "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert first_problem(doc, "pr-gate") is None
    assert [(c["op"], c.get("domain"), c["parameters"][0]["verdict"]) for c in doc["changes"]] \
        == [("Relu", None, "confirmed"), ("Binarizer", "ai.onnx.ml", "refuted")]
    assert MATH["Binarizer"]["X"][0] == "non-differentiable"
    assert [(p["domain"], p["exit_code"]) for p in doc["parts"]] == \
        [("ai.onnx", 0), ("ai.onnx.ml", 1)]
    assert doc["summary"]["verdicts"]["confirmed"] == doc["summary"]["verdicts"]["refuted"] == 1
    assert doc["summary"]["versions_compared"] == sum(p["versions_compared"]
                                                      for p in doc["parts"])
    for argv, says in (([reports[1], reports[1]], "a second PR gate report of ai.onnx.ml"),
                       ([*reports, "--format", "html"], "--format html")):
        assert cli.main(["merge", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert says in err and "\n" not in err, err


def test_merge_of_reports_with_nothing_to_prove_and_a_forged_domain(tmp_path, capsys):
    """Two reports with nothing to prove merge into one exit-0 report whose reason gives
    each domain's; a report whose ``domain`` is not a domain name (Markdown, a mention) is
    refused by the shipped schema, one line, exit 2, before anything is rendered."""
    from gate_fixture import generate_docs
    docs = generate_docs(tmp_path / "gen")
    reports = []
    for name, docs_file in (("pr-gate.json", "Changelog.md"),
                            ("pr-gate-ml.json", "Changelog-ml.md")):
        with deadline(300):
            assert cli.main(["verify-all", "--changed-from", str(docs / docs_file),
                             "--no-write", "--format", "json", "-q", "--no-cache",
                             "--report", str(tmp_path / name)]) == 0
        reports.append(str(tmp_path / name))
    capsys.readouterr()
    assert cli.main(["merge", *reports, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["changes"] == [] and [p["domain"] for p in doc["parts"]] == \
        ["ai.onnx", "ai.onnx.ml"]
    assert doc["reason"].startswith("ai.onnx: nothing to prove") and \
        "; ai.onnx.ml: nothing to prove" in doc["reason"]
    forged = json.loads(Path(reports[1]).read_text())
    forged["domain"] = "ai.onnx.ml @maintainer ![x](https://x.invalid/x.png)"
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    assert cli.main(["merge", reports[0], str(tmp_path / "forged.json"),
                     "--format", "markdown"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "forged.json" in err, err
