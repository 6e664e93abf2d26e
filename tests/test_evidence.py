"""Evidence files: ONNX's node-test layout, loadable, atomic."""
import json

import onnx
import onnx.numpy_helper
import pytest

from torch_prover import evidence


def test_layout_is_loadable(tmp_path, proof_of):
    proof = proof_of("gather_index_select")
    d = evidence.write_proof(tmp_path, proof)
    assert d == tmp_path / "Gather" / "gather_index_select"
    model = onnx.load(d / "model.onnx")
    onnx.checker.check_model(model)
    data = d / "test_data_set_0"
    names = sorted(p.name for p in data.iterdir())
    assert names == ["grad_input_0.pb", "input_0.pb", "input_1.pb", "output_0.pb"]
    t = onnx.TensorProto()
    t.ParseFromString((data / "input_1.pb").read_bytes())
    assert onnx.numpy_helper.to_array(t).dtype.name == "int64"
    rec = json.loads((d / "proof.json").read_text())
    assert rec == json.loads(evidence.dumps(proof.record()))


def test_failed_write_keeps_old_evidence(tmp_path, proof_of, monkeypatch):
    proof = proof_of("reshape_basic")
    d = evidence.write_proof(tmp_path, proof)
    before = (d / "proof.json").read_text()

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(evidence, "_pb", boom)
    with pytest.raises(OSError):
        evidence.write_proof(tmp_path, proof)
    assert (d / "proof.json").read_text() == before
    assert sorted(p.name for p in d.parent.iterdir()) == ["reshape_basic"]


def test_prune_removes_only_evidence_of_gone_cases(tmp_path, proof_of):
    evidence.write_proof(tmp_path, proof_of("reshape_basic"))
    evidence.write_proof(tmp_path, proof_of("floor_basic"))
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "Floor" / "scratch").mkdir()
    removed = evidence.prune(tmp_path, {("Reshape", "reshape_basic")})
    assert removed == [tmp_path / "Floor" / "floor_basic"]
    assert (tmp_path / "Reshape" / "reshape_basic" / "proof.json").exists()
    assert (tmp_path / "notes.txt").exists() and (tmp_path / "Floor" / "scratch").exists()


def test_index_readme_escapes_pipes_in_reasons(tmp_path):
    report = {"summary": {"cases": 1}, "cases": [{"op": "Clip", "case": "clip_min_only"}],
              "ops": [{"op": "Clip", "status": "disagrees", "reason": "max |grad| 0.638"}]}
    evidence.write_index(tmp_path, report)
    row = next(line for line in (tmp_path / "README.md").read_text().splitlines()
               if line.startswith("| Clip"))
    assert "max \\|grad\\| 0.638" in row and "/grad/" not in row
