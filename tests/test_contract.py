"""The package's contract with its users: invalid cases say why (CaseError, not a NameError),
a bug of ours has its own exit code, every command's --format json prints one JSON object
on every exit, and every JSON document validates against its shipped schema."""
from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest
import torch

from json_contract import problems, schemas, validate_text
from torch_prover import Case, CaseError, Expect, Float, Spec, cli
from torch_prover.vocab import DocKind, Tag, Verdict

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"


def relu(x):
    return torch.relu(x)


# ------------------------------------------------------------------ invalid cases: CaseError
class _Instance(torch.nn.Module):
    def forward(self, x):
        return x


def _not_a_module():
    return 42


INVALID = {  # kind of mistake -> (how it is made, words its CaseError must say)
    "expect verdict": (lambda: Expect("agrees", "typo"), "Expect verdict must be one of"),
    "expect reason": (lambda: Expect("disagree", "  "), "Expect needs a non-empty reason"),
    "exporter": (lambda: Case("Relu", "c", relu, (Float(2),), exporter="jit"),
                 "c: exporter must be 'dynamo' or 'torchscript'"),
    "case kind": (lambda: Case("Relu", "c", relu, (Float(2),), kind="made-up"),
                  "c: kind must be 'natural' or 'reference'"),
    "input names": (lambda: Case("Relu", "c", relu, (Float(2),), input_names=("a", "b")),
                    "c: 2 input_names for 1 inputs"),
    "key": (lambda: Case("Relu", "c", relu, (Float(2),),
                         expect={"in 0": Expect("disagree", "why")}),
            "c: key 'in 0' must look like 'input 1' or 'output 0'"),
    "seeds": (lambda: Case("Relu", "c", relu, (Float(2),), seeds=(0,)),
              "c: needs at least two seeds"),
    "export options": (lambda: Case("Relu", "c", relu, (Float(2),),
                                    export_options={"optimize": False}),
                       "c: export_options need a reason in notes"),
    "module instance": (lambda: Case("Relu", "c", _Instance(), (Float(2),)).build_module(),
                        "c: pass the Module class or a factory, not an instance"),
    "factory result": (lambda: Case("Relu", "c", _not_a_module, (Float(2),)).build_module(),
                       "c: a no-argument model must return an nn.Module"),
    "spec kind": (lambda: Spec("complex", (2,)).build(torch.Generator(), torch.float64),
                  "unknown input kind 'complex'"),
}


@pytest.mark.parametrize("mistake", sorted(INVALID))
def test_an_invalid_case_says_why(mistake):
    make, says = INVALID[mistake]
    with pytest.raises(CaseError) as err:
        make()
    assert says in str(err.value)


@pytest.mark.parametrize("mistake", sorted(INVALID))
def test_an_invalid_case_through_the_cli_is_one_line_exit_2(mistake, monkeypatch, capsys):
    """The catalogue handing prove an invalid case: a broken case (exit 2), its message."""
    import torch_prover.cases as cases
    make, says = INVALID[mistake]

    def broken(op):
        make()
    monkeypatch.setattr(cases, "cases_for", broken)
    assert cli.main(["prove", "Relu", "--all", "--no-write"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [err.strip()]
    assert err.startswith("torch-prover prove: broken case: ") and says in err


# ------------------------------------------------------------------ internal errors: exit 3
def _raise_bug(args):
    raise RuntimeError("an injected bug")


def test_an_internal_error_exits_3_in_one_line(monkeypatch, capsys):
    monkeypatch.setitem(cli.COMMANDS, "tags", _raise_bug)
    assert cli.main(["tags", "Relu"]) == cli.EXIT_BUG == 3
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.count("\n") == 1 and "Traceback" not in out.err
    assert out.err.startswith("torch-prover tags: internal error (a bug in torch-prover, not in "
                              "your input)")
    assert "please report" not in out.err      # there is nowhere named to report it
    assert "RuntimeError: an injected bug" in out.err and "--debug" in out.err


def test_an_internal_error_under_debug_shows_the_traceback(monkeypatch):
    monkeypatch.setitem(cli.COMMANDS, "tags", _raise_bug)
    with pytest.raises(RuntimeError, match="an injected bug"):
        cli.main(["--debug", "tags", "Relu"])


def test_an_internal_error_with_format_json_prints_the_error_document(monkeypatch, capsys):
    monkeypatch.setitem(cli.COMMANDS, "tags", _raise_bug)
    assert cli.main(["tags", "Relu", "--format", "json"]) == 3
    doc = validate_text(capsys.readouterr().out)
    assert (doc["kind"], doc["status"], doc["exit_code"], doc["command"]) == (
        "error", "internal error", 3, "tags")
    assert "RuntimeError: an injected bug" in doc["reason"]


# ------------------------------------------------------------------ --format json at exit 2
EXIT_2 = {  # command -> arguments that are bad usage, refused before any work
    "prove": ["prove", "Reshap", "--format", "json"],
    "verify-all": ["verify-all", "--jobs", "0", "--no-write", "--format", "json"],
    "coverage": ["coverage", "Reshap", "--format", "json"],
    "tags": ["tags", "Reshap", "--format", "json"],
    "run": ["run", "no_such_script.py", "--format", "json"],
    "fix-tags": ["fix-tags", "--onnx-src", "no_such_dir", "--format", "json"],
    "node-tests": ["node-tests", "no_such_dir", "-o", "out", "--format", "json"],
}


@pytest.mark.parametrize("command", sorted(EXIT_2))
def test_every_command_prints_json_at_exit_2(command, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(EXIT_2[command]) == 2
    out = capsys.readouterr()
    doc = validate_text(out.out)
    assert (doc["kind"], doc["status"], doc["exit_code"], doc["command"]) == (
        "error", "usage error", 2, command)
    assert out.err.strip() == f"torch-prover {command}: {doc['reason']}"


PARSES = {"prove": ["prove", "Relu"], "verify-all": ["verify-all"], "coverage": ["coverage"],
          "tags": ["tags", "Relu"], "run": ["run", "s.py"], "fix-tags": ["fix-tags", "--onnx-src", "."],
          "node-tests": ["node-tests", "models", "-o", "out"]}


@pytest.mark.parametrize("command", sorted(PARSES))
def test_an_argparse_error_with_format_json_is_json_too(command, capsys):
    """Before the arguments parse (an unknown option), --format json still gets its object."""
    argv = [*PARSES[command], "--no-such-option", "--format=json"]
    assert cli.main(argv) == 2
    doc = validate_text(capsys.readouterr().out)
    assert (doc["status"], doc["command"]) == ("usage error", command)
    assert "unrecognized arguments: --no-such-option" in doc["reason"]


def test_fix_tags_json_on_success_is_its_documented_shape(tmp_path, capsys, real_report):
    """Relu's tags all agree with its evidence: nothing is considered, no patch written."""
    from fix_report import SRC
    report = real_report("Relu")
    assert cli.main(["fix-tags", "--onnx-src", str(SRC), "--report", str(report),
                     "-o", str(tmp_path / "fix.patch"), "--format", "json"]) == 0
    doc = validate_text(capsys.readouterr().out)
    assert (doc["kind"], doc["status"], doc["patch"], doc["counts"]["considered"]) == (
        "fix-tags", "ok", None, 0)


# ------------------------------------------------------------------ version
def test_version_is_the_installed_distributions(capsys):
    import torch_prover
    assert torch_prover.__version__ == importlib.metadata.version("torch-prover")
    with pytest.raises(SystemExit) as done:
        cli.build_parser().parse_args(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"torch-prover {torch_prover.__version__}"
    assert cli.main(["--version"]) == 0


# ------------------------------------------------------------------ schemas
def test_every_document_kind_has_a_schema_in_the_package():
    assert {str(k) for k in DocKind} | {"defs", "table-row"} == set(schemas())
    for name, schema in schemas().items():
        assert schema["$id"] == f"urn:torch-prover:schema:{name}"


def test_the_schemas_words_are_the_records_words():
    """The schema's enums name exactly the words a record may hold (vocab.py, verdict.py)."""
    from torch_prover.engine.rules.verdict import Rule
    from torch_prover.output.batch_report import OP_STATUSES
    d = schemas()["defs"]["$defs"]
    assert d["verdict"]["enum"] == [str(v) for v in Verdict]
    assert d["tag"]["enum"] == [str(t) for t in Tag]
    assert d["rule"]["enum"] == [str(r) for r in Rule]
    assert d["op_status"]["enum"] == list(OP_STATUSES)


def test_a_document_breaking_its_schema_is_caught():
    """The validator can say no: a record without its parameters, a batch case claiming a
    proof's format without its fields, a document without kind."""
    rec = json.loads((MODELS / "Relu" / "relu_basic" / "proof.json").read_text())
    assert problems(rec) == []
    assert problems({k: v for k, v in rec.items() if k != "parameters"})
    assert problems({**rec, "versions": {**rec["versions"], "torch-prover": "0.1.0"}})
    assert problems({"kind": "failed-case", "format": 3, "op": "Relu", "case": "c",
                     "status": "error", "parameters": []})
    assert problems({"format": 2, "op": "Relu"})


def test_every_committed_record_and_the_index_validate():
    recs = sorted(MODELS.glob("*/*/proof.json"))
    assert len(recs) >= 300
    bad = [f"{p.relative_to(MODELS)}: {e}" for p in recs
           for e in problems(json.loads(p.read_text()))]
    bad += problems(json.loads((MODELS / "index.json").read_text()))
    assert not bad, "\n".join(bad[:20])


def test_the_full_runs_report_index_and_evidence_validate(full_run):
    """What forked workers wrote (checked where it landed) and the report on disk."""
    rep = full_run["report"]
    assert problems(rep) == []
    assert (rep["kind"], rep["status"], rep["exit_code"]) == ("batch-report", "ok", 0)
    assert json.loads(full_run["stdout"]) == rep    # --format json: stdout is JSON too
    out = full_run["out"]
    bad = problems(json.loads((out / "index.json").read_text()))
    for r in rep["cases"]:
        if r["kind"] == "proof":
            bad += problems(json.loads((out / r["op"] / r["case"] / "proof.json").read_text()))
    assert not bad, "\n".join(bad[:20])


def test_prove_json_has_one_shape_with_or_without_all(capsys):
    shapes = []
    for extra in ([], ["--all"]):
        assert cli.main(["prove", "Add", "--no-write", "--format", "json",
                         *extra]) == 0
        doc = validate_text(capsys.readouterr().out)
        shapes.append((doc["kind"], sorted(doc), [r["case"] for r in doc["cases"]]))
    from torch_prover.cases import cases_for
    names = [c.name for c in cases_for("Add")]
    assert shapes[0][:2] == shapes[1][:2] and shapes[0][0] == "prove"
    assert (shapes[0][2], shapes[1][2]) == (names[:1], names)


def test_an_op_whose_disagreements_are_all_declared_is_declared_not_disagrees():
    """Declared by the case (expect=) or waived: the run exits 0, so the op's status must not
    say it disagrees; an undeclared one beside it still does."""
    from torch_prover.batch import summary
    from torch_prover.output.coverage import coverage
    p = {"io": "input", "index": 1, "name": "min", "verdict": "disagree", "rule": "both witnesses",
         "tag": "non-differentiable", "reason": "smooth in min",
         "expected": {"verdict": "disagree", "reason": "declared in the case"}}
    rec = {"op": "Clip", "case": "clip_a", "status": "disagree", "parameters": [p]}
    rep = summary.batch_report([rec], coverage(), 1.0)
    assert {o["op"]: o["status"] for o in rep["ops"]}["Clip"] == "declared"
    assert summary.exit_code(rep) == 0
    undeclared = {**rec, "case": "clip_b", "parameters": [
        {k: v for k, v in p.items() if k != "expected"}]}
    rep = summary.batch_report([rec, undeclared], coverage(), 1.0)
    assert {o["op"]: o["status"] for o in rep["ops"]}["Clip"] == "disagrees"
    assert summary.exit_code(rep) == 1


# ------------------------------------------------------------------ defaults that don't litter
@pytest.mark.parametrize("argv", [["prove", "Relu"], ["verify-all", "--ops", "Relu"]])
def test_outside_a_checkout_no_evidence_is_written_and_the_user_is_told(
        argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 0
    err = capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    assert (f"torch-prover {argv[0]}: evidence not written (not in a torch_prover checkout); "
            "pass --out DIR to keep") in err


def test_inside_a_checkout_prove_keeps_the_quickstarts_models(tmp_path, monkeypatch, capsys):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "torch-prover"\n')
    (tmp_path / "models").mkdir()
    (tmp_path / "torch_prover").mkdir()
    monkeypatch.chdir(tmp_path)
    assert cli.main(["prove", "Relu"]) == 0
    assert "evidence not written" not in capsys.readouterr().err
    assert (tmp_path / "models" / "Relu" / "relu_basic" / "proof.json").is_file()


def test_another_projects_pyproject_is_not_a_checkout(tmp_path):
    from torch_prover.preflight import in_checkout
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "onnx"\n')
    (tmp_path / "models").mkdir()
    (tmp_path / "torch_prover").mkdir()
    assert not in_checkout(tmp_path)
    assert in_checkout(ROOT)


# ------------------------------------------------------------------ design in the repository
def test_every_design_section_the_code_cites_exists():
    import re
    headings = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)[. ]", (ROOT / "docs" / "design.md")
                              .read_text(), flags=re.M))
    cited = {}
    for path in sorted((ROOT / "torch_prover").rglob("*.py")) + sorted(
            (ROOT / "tests").glob("*.py")):
        for n in re.findall(r"docs/design\.md §(\d+(?:\.\d+)?)", path.read_text()):
            cited.setdefault(n, path.name)
    assert len(cited) >= 5
    assert not {n: f for n, f in cited.items() if n not in headings}, headings
    assert "DESIGN §" not in "".join(p.read_text() for p in (ROOT / "torch_prover").rglob("*.py"))


def test_every_error_class_of_the_package_derives_from_prover_error():
    """One hierarchy: cli.main maps ProverError subclasses to exit codes by class
    (``exit_code``), so an error class outside it would surface as a bug (exit 3)."""
    import importlib
    import inspect
    import pkgutil

    import torch_prover
    from torch_prover.errors import EXIT_FINDING, EXIT_USAGE, ProverError
    found = {}
    for info in pkgutil.walk_packages(torch_prover.__path__, "torch_prover."):
        if info.name == "torch_prover.__main__":   # importing it runs the CLI
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (inspect.isclass(obj) and issubclass(obj, BaseException)
                    and obj.__module__ == info.name):
                found[f"{info.name}.{name}"] = obj
    assert len(found) >= 13
    outside = sorted(n for n, c in found.items() if not issubclass(c, ProverError))
    assert outside == []
    assert {c.exit_code for c in found.values()} <= {EXIT_USAGE, EXIT_FINDING}


@pytest.mark.parametrize("fields, says", [
    ({"exporter": "jit"}, "relu_adhoc: exporter must be 'dynamo' or 'torchscript'"),
    ({"seeds": (3,)}, "relu_adhoc: needs at least two seeds"),
    ({"expect": {"input zero": Expect("disagree", "why")}}, "must look like 'input 1'"),
])
def test_the_librarys_prove_reports_an_invalid_case(fields, says):
    """``torch_prover.prove`` builds its Case from the caller's fields: a bad one is a
    CaseError naming it, before any export."""
    import torch_prover
    with pytest.raises(CaseError, match=says.replace("(", r"\(").replace(")", r"\)")):
        torch_prover.prove(relu, [torch.ones(2)], op="Relu", **fields)
