"""``torch-prover prove OP`` for an op of another domain (ai.onnx.ml, ai.onnx.preview.training,
ai.onnx.preview): the op's reference cases (cases/other_domains.py), the ones ``verify-all
--domain`` proves, with the verdicts their math gives (``test_domain_cases.MATH``, each
parameter's tag with the derivative that decides it); an unknown name is one line, exit 2,
its suggestions from every domain.
"""
from __future__ import annotations

import json

import onnx.defs
import pytest
from cli_lines import deadline
from test_domain_cases import MATH

from torch_prover import cli
from torch_prover.cases.other_domains import DOMAIN_CASES


def test_no_op_name_is_in_two_domains():
    """What lets ``prove`` take a bare name (its help says so): the installed onnx has no
    op name, in any capitalisation, in two of the domains it registers."""
    domains: dict[str, set[str]] = {}
    for s in onnx.defs.get_all_schemas_with_history():
        domains.setdefault(s.name.lower(), set()).add(s.domain or "ai.onnx")
    assert {"ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training", "ai.onnx.preview"} <= \
        {d for ds in domains.values() for d in ds}
    assert not {n: ds for n, ds in domains.items() if len(ds) > 1}


def _prove(argv: list[str], capsys) -> tuple[int, dict]:
    with deadline(300):
        code = cli.main(["prove", *argv, "--no-write", "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("op,domain", [("LinearRegressor", "ai.onnx.ml"),
                                       ("momentum", "ai.onnx.preview.training")])
def test_prove_runs_the_domains_reference_case_with_the_maths_verdicts(op, domain, capsys):
    """``prove LinearRegressor`` (Y = X W^T + b: dY/dX = W, nonzero) and ``prove momentum``
    (any capitalisation; X_new = X - R V_new: dX_new/dR = -V_new; T an int64 count): the
    op's first reference case, at its own schema version, every parameter proposed as the
    math says against ONNX's unknown tag; exit 0."""
    code, doc = _prove([op], capsys)
    assert code == 0
    (record,) = doc["cases"]
    name = op[0].upper() + op[1:]
    first = next(c for c in DOMAIN_CASES if c.op == name)
    assert (record["op"], record["domain"], record["case"]) == (name, domain, first.name)
    assert record["schema_version"] == onnx.defs.get_schema(name, domain).since_version
    got = {(p["name"], p["supports"], p["verdict"]) for p in record["parameters"]}
    assert got == {(param, supports, "proposed")
                   for param, (supports, _) in MATH[name].items()}


def test_prove_and_verify_all_domain_give_the_same_verdicts(tmp_path, capsys):
    """The case ``verify-all --domain ai.onnx.ml --ops Scaler`` proves, and its verdicts,
    are the ones ``prove Scaler`` prints."""
    _, proved = _prove(["Scaler", "--all"], capsys)
    with deadline(300):
        cli.main(["verify-all", "--domain", "ai.onnx.ml", "--ops", "Scaler", "--no-write",
                  "--format", "json", "-q", "--cache-dir", str(tmp_path / "cache")])
    batch = json.loads(capsys.readouterr().out)

    def verdicts(records):
        return {(r["case"], p["io"], p["index"], p["supports"], p["verdict"])
                for r in records for p in r["parameters"]}
    assert verdicts(proved["cases"]) == verdicts(batch["cases"])
    assert {(c, s) for c, _, _, s, _ in verdicts(proved["cases"])} == \
        {(c.name, MATH["Scaler"]["X"][0]) for c in DOMAIN_CASES if c.op == "Scaler"}


@pytest.mark.parametrize("argv,says", [
    (["LinearRegresor"], "unknown ONNX op 'LinearRegresor'; did you mean LinearRegressor"),
    (["CategoryMapper"], "no case for op CategoryMapper in domain ai.onnx.ml"),
    (["Scaler", "--opset", "3"], "Scaler is an op of ai.onnx.ml, whose reference cases run "
                                 "at their own schema version"),
    (["LabelEncoder", "--case", "nope"], "op LabelEncoder has no case 'nope'; its cases: "),
])
def test_prove_refuses_in_one_line(argv, says, capsys):
    """A misspelt name is suggested the ML op it misses; an ML op without a case, an
    --opset, an unknown case: one line, exit 2, before any proof."""
    with deadline(60):
        code = cli.main(["prove", *argv, "--no-write"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("torch-prover prove: ") and says in err and err.count("\n") == 1, err


def test_prove_writes_the_evidence_verify_all_domain_committed(tmp_path, capsys):
    """``prove Adam --out DIR`` writes the training case's evidence byte for byte as the
    committed copy under models/ (written by ``verify-all --domain``'s evidence writer,
    scripts/domain_evidence.py)."""
    from pathlib import Path
    (case,) = [c for c in DOMAIN_CASES if c.op == "Adam"]
    with deadline(300):
        assert cli.main(["prove", "Adam", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    committed = Path(__file__).resolve().parents[1] / "models" / "Adam" / case.name
    mine = tmp_path / "Adam" / case.name
    names = sorted(p.relative_to(committed) for p in committed.rglob("*") if p.is_file())
    assert names and names == sorted(p.relative_to(mine) for p in mine.rglob("*")
                                     if p.is_file())
    assert all((committed / n).read_bytes() == (mine / n).read_bytes() for n in names)
