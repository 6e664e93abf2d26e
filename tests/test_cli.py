"""The CLI's contract: output shapes and exit codes (0 ok, 1 finding, 2 usage / broken case)."""
import dataclasses
import json

from torch_prover import cli
import importlib

prove_mod = importlib.import_module("torch_prover.prove")  # the package re-exports prove()
from torch_prover.tags import schema_tags


def test_prove_reshape_json(tmp_path, capsys):
    assert cli.main(["prove", "Reshape", "--format", "json", "--out", str(tmp_path)]) == 0
    rec = json.loads(capsys.readouterr().out)
    by = {(p["io"], p["index"]): p for p in rec["parameters"]}
    assert (by["input", 0]["name"], by["input", 0]["evidence"], by["input", 0]["verdict"]) == (
        "data", "grad", "agree")
    assert (by["input", 1]["name"], by["input", 1]["tag"], by["input", 1]["verdict"]) == (
        "shape", "non-differentiable", "agree")
    assert (by["output", 0]["name"], by["output", 0]["verdict"]) == ("reshaped", "agree")
    assert rec["format"] == 1 and rec["op"] == "Reshape"
    assert (tmp_path / "Reshape" / "reshape_basic" / "proof.json").exists()


def test_prove_text_names_every_parameter(tmp_path, capsys):
    assert cli.main(["prove", "topk", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for word in ("Values", "Indices", "integer", "status: proved"):
        assert word in out


def test_unknown_op_names_the_closest(capsys):
    assert cli.main(["prove", "Reshap"]) == 2
    err = capsys.readouterr().err
    assert "Reshape" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_unknown_case_lists_existing(capsys):
    assert cli.main(["prove", "Add", "--case", "nope"]) == 2
    assert "add_same_shape" in capsys.readouterr().err


def test_bad_usage_exits_2(capsys):
    assert cli.main(["prove"]) == 2
    assert cli.main([]) == 2


def test_disagreement_exits_1(tmp_path, monkeypatch, capsys):
    def flipped(op, opset, domain):
        tags = schema_tags(op, opset, domain)
        return dataclasses.replace(tags, inputs=(
            dataclasses.replace(tags.inputs[0], tag="non-differentiable"),) + tags.inputs[1:])
    monkeypatch.setattr(prove_mod, "_default_tags", flipped)
    assert cli.main(["prove", "Reshape", "--no-write", "--no-numeric"]) == 1
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("input 0"))
    assert "disagree" in row.split() and "DISAGREE" not in out  # the record's word


def test_tags_command(capsys):
    assert cli.main(["tags", "TopK", "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert [p["tag"] for p in rec["parameters"]] == [
        "differentiable", "non-differentiable", "differentiable", "non-differentiable"]
