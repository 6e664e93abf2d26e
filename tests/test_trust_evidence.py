"""What the cache, check-evidence and tags --explain read is re-checked, not trusted (issue
28, findings 8, 10, 11).

The evidence is what ``evidence.write_proof`` writes for real proofs; each test edits one
file the way a hand (or a careless tool) would and checks what the reader then says.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import onnx.defs
import pytest

from torch_prover import cli
from torch_prover.output import evidence


def _check(capsys, root):
    code = cli.main(["check-evidence", str(root), "--format", "json"])
    return code, {d["path"]: d for d in json.loads(capsys.readouterr().out)["directories"]}


@pytest.fixture
def tree(tmp_path, proof_of):
    for name in ("reshape_basic", "relu_basic"):
        evidence.write_proof(tmp_path, proof_of(name))
    return tmp_path


def _record(tree, op, case):
    return tree / op / case / "proof.json"


# ----------------------------------------------------------------------------- finding 10
def test_a_deleted_gradient_the_record_implies_is_a_mismatch(tree, capsys):
    """The record's VJP check passed for x: it ran on PyTorch's gradient of x, which the
    evidence saves as grad_input_0.pb; without it the check silently re-checked nothing."""
    rec = json.loads(_record(tree, "Reshape", "reshape_basic").read_text())
    assert rec["numeric"]["vjp"]["x"]["ok"] is True
    (tree / "Reshape" / "reshape_basic" / "test_data_set_0" / "grad_input_0.pb").unlink()
    code, by = _check(capsys, tree)
    assert code == 1 and by["Reshape/reshape_basic"]["status"] == "mismatch"
    assert "grad_input_0.pb is missing" in by["Reshape/reshape_basic"]["detail"]
    assert by["Relu/relu_basic"]["status"] == "match"


def test_a_verdict_edited_against_its_witnesses_is_a_mismatch(tree, capsys):
    path = _record(tree, "Relu", "relu_basic")
    rec = json.loads(path.read_text())
    p = rec["parameters"][0]
    assert (p["witnesses"]["autograd"]["outcome"], p["witnesses"]["numeric"]["outcome"]) == (
        "grad", "smooth")
    p["supports"], p["verdict"] = "non-differentiable", "disagree"
    path.write_text(json.dumps(rec, indent=2))
    code, by = _check(capsys, tree)
    assert code == 1 and by["Relu/relu_basic"]["status"] == "mismatch"
    assert "proof.json: input 0" in by["Relu/relu_basic"]["detail"]


def test_a_model_of_another_opset_is_a_mismatch_even_with_its_sha256(tree, capsys):
    """relu_basic's model swapped for Relu exported at opset 12 (Relu-6, not Relu-14), the
    record's sha256 updated to match."""
    from torch_prover.batch.versions import at_opset
    from torch_prover.cases import find_case
    from torch_prover.engine.prove import prove_case
    assert onnx.defs.get_schema("Relu", 12, "").since_version == 6
    old = prove_case(at_opset(find_case("Relu", "relu_basic"), 12), numeric=False)
    d = tree / "Relu" / "relu_basic"
    (d / "model.onnx").write_bytes(old.model_bytes)
    rec = json.loads((d / "proof.json").read_text())
    rec["model"]["sha256"] = hashlib.sha256(old.model_bytes).hexdigest()
    (d / "proof.json").write_text(json.dumps(rec, indent=2))
    code, by = _check(capsys, tree)
    assert code == 1 and by["Relu/relu_basic"]["status"] == "mismatch"
    assert "opset 12" in by["Relu/relu_basic"]["detail"]


# ----------------------------------------------------------------------------- finding 8
def test_a_cache_entry_edited_into_a_settled_error_is_not_trusted(tmp_path):
    """A proved case's cache entry hand-edited into a 'settled' error (a broken case is
    cached as one) was trusted: the case went from proved to error while its proof was
    still in --out. It must be proved again."""
    from torch_prover.batch.one_case import error_record
    from torch_prover.cases import find_case
    out, cache = tmp_path / "out", tmp_path / "cache"

    def run():
        cp = subprocess.run([sys.executable, "-m", "torch_prover", "verify-all", "--ops",
                             "Reshape", "--out", str(out), "--cache-dir", str(cache),
                             "--format", "json"], capture_output=True, text=True, timeout=900)
        assert cp.returncode in (0, 1), cp.stderr[-2000:]
        return {r["case"]: r for r in json.loads(cp.stdout)["cases"]}
    first = run()
    assert first["reshape_basic"]["kind"] == "proof"
    forged = 0
    for entry in cache.glob("*.json"):
        doc = json.loads(entry.read_text())
        if doc.get("record", {}).get("case") == "reshape_basic":   # (the cache also holds ONNX's points)
            doc = {"record": error_record(find_case("Reshape", "reshape_basic"),
                                          "Reshape/reshape_basic: broken"),
                   "files": None, "settled": True}
            entry.write_text(json.dumps(doc))
            forged += 1
    assert forged == 1
    again = run()
    assert again["reshape_basic"] == first["reshape_basic"]


def test_a_settled_error_of_another_case_shape_is_a_miss(proof_of):
    """Without evidence to compare, a settled error must still be exactly the failed-case
    record of this very case (its exporter, opset, kind)."""
    from torch_prover.batch.cache import cache_check
    from torch_prover.batch.one_case import BatchOptions, error_record
    from torch_prover.cases import find_case
    case = find_case("Reshape", "reshape_basic")
    good = error_record(case, "Reshape/reshape_basic: broken")
    assert cache_check({"record": good, "files": None, "settled": True}, case,
                       BatchOptions()) == good
    for field, value in (("exporter", "torchscript"), ("opset", 7), ("kind", "proof")):
        bad = {**good, field: value}
        assert cache_check({"record": bad, "files": None, "settled": True}, case,
                           BatchOptions()) is None, field


# ----------------------------------------------------------------------------- finding 11
def test_explain_at_an_old_opset_uses_the_variant_that_proves_it(tmp_path, capsys, monkeypatch):
    """Softmax-11 is in force at opset 12; every all-versions run proves it with the
    variant softmax_axis1@12 (the case exported at 12)."""
    from torch_prover.batch.versions import plan, Selection
    from torch_prover.cases import cases_for
    assert onnx.defs.get_schema("Softmax", 12, "").since_version == 11
    variants = {p.case.name for p in plan(cases_for("Softmax"), Selection("all"))
                if p.case is not None and p.version.version == 11}
    assert "softmax_axis1@12" in variants
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cli.main(["tags", "Softmax", "--explain", "--opset", "12", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    text = json.dumps(doc)
    assert "softmax_axis1@12" in text and "no case reaches it" not in text
    assert cli.main(["tags", "Softmax", "--explain", "--opset", "12"]) == 0
    out = capsys.readouterr().out
    assert "no case reaches it" not in out and "softmax_axis1@12" in out


def test_a_record_of_no_catalogue_case_is_rechecked_too(tree, capsys):
    """A `run` script's evidence names a case the catalogue lacks (the script's name): its
    verdicts are re-derived with no declarations, and an edited one is a mismatch."""
    d = tree / "Relu" / "relu_script"
    (tree / "Relu" / "relu_basic").rename(d)
    rec = json.loads((d / "proof.json").read_text())
    rec["case"] = "relu_script"
    (d / "proof.json").write_text(json.dumps(rec, indent=2))
    code, by = _check(capsys, tree)
    assert code == 0 and by["Relu/relu_script"]["status"] == "match"
    assert "not re-checked" not in by["Relu/relu_script"]["detail"]
    rec["parameters"][0]["verdict"] = "disagree"
    (d / "proof.json").write_text(json.dumps(rec, indent=2))
    code, by = _check(capsys, tree)
    assert code == 1 and by["Relu/relu_script"]["status"] == "mismatch"
