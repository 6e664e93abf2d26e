"""Evidence files: ONNX's node-test layout, loadable, atomic."""
import json

import onnx
import onnx.numpy_helper
import pytest

from torch_prover.output import evidence, evidence_data, index_files


def test_layout_is_loadable(tmp_path, proof_of):
    proof = proof_of("gather_index_select")
    d = evidence.write_proof(tmp_path, proof)
    assert d == tmp_path / "Gather" / "gather_index_select"
    model = onnx.load(d / "model.onnx")
    onnx.checker.check_model(model)
    data = d / "test_data_set_0"
    names = sorted(p.name for p in data.iterdir())
    assert names == ["grad_input_0.pb", "grad_output_0.pb", "input_0.pb", "input_1.pb",
                     "output_0.pb"]
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


def test_replacement_is_one_exchange_and_leaves_nothing(tmp_path, proof_of):
    proof = proof_of("reshape_basic")
    d = evidence.write_proof(tmp_path, proof)
    (d / "proof.json").write_text(json.dumps({**json.loads((d / "proof.json").read_text()),
                                              "status": "old"}))
    evidence.write_proof(tmp_path, proof)
    assert json.loads((d / "proof.json").read_text())["status"] == proof.record()["status"]
    assert sorted(p.name for p in d.parent.iterdir()) == ["reshape_basic"]


def test_a_crash_between_two_renames_is_repaired(tmp_path, proof_of, monkeypatch):
    """Where the file system cannot exchange two directories, a crash between moving the
    old evidence aside and moving the new in leaves the old aside; the next sweep puts it
    back, so a reader never finds the case missing for longer than that."""
    import os
    proof = proof_of("reshape_basic")
    d = evidence.write_proof(tmp_path, proof)
    (d / "proof.json").write_text(json.dumps({**json.loads((d / "proof.json").read_text()),
                                              "status": "old"}))   # stale: must be replaced
    before = (d / "proof.json").read_bytes()
    from torch_prover.output import commit
    monkeypatch.setattr(commit, "exchange", lambda a, b: False)   # the one exchange helper
    real_rename, calls = os.rename, []

    def crash_on_second(a, b):
        calls.append((a, b))
        if len(calls) == 2:
            raise KeyboardInterrupt   # the process dies here
        return real_rename(a, b)
    monkeypatch.setattr(evidence.os, "rename", crash_on_second)
    with pytest.raises(KeyboardInterrupt):
        evidence.write_proof(tmp_path, proof)
    monkeypatch.setattr(evidence.os, "rename", real_rename)
    assert not d.exists()
    evidence.sweep_temporaries(tmp_path, ["Reshape"])
    assert (d / "proof.json").read_bytes() == before
    assert sorted(p.name for p in d.parent.iterdir()) == ["reshape_basic"]


def test_a_current_case_directory_is_kept_as_is(tmp_path, proof_of):
    """Same record and model, data equal up to noise: the files on disk stay (git clean)."""
    import numpy as np
    proof = proof_of("reshape_basic")
    d = evidence.write_proof(tmp_path, proof)
    pb = d / "test_data_set_0" / "output_0.pb"
    y = evidence_data.load_pb(pb)
    nudged = y * (1 + 4 * np.finfo(y.dtype).eps)     # what another CPU's kernel might give
    pb.write_bytes(onnx.numpy_helper.from_array(nudged, "y0").SerializeToString())
    kept = pb.read_bytes()
    evidence.write_proof(tmp_path, proof)
    assert pb.read_bytes() == kept
    pb.write_bytes(onnx.numpy_helper.from_array(y + 1e-3, "y0").SerializeToString())
    evidence.write_proof(tmp_path, proof)             # a real difference: rewritten
    assert np.array_equal(evidence_data.load_pb(pb), y)


def test_files_get_the_users_umask(tmp_path, proof_of):
    import os
    old = os.umask(0o022)
    try:
        d = evidence.write_proof(tmp_path, proof_of("reshape_basic"))
        evidence.write_text(tmp_path / "report.md", "x")
    finally:
        os.umask(old)
    assert (d / "proof.json").stat().st_mode & 0o777 == 0o644
    assert d.stat().st_mode & 0o777 == 0o755
    assert (d / "test_data_set_0").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "report.md").stat().st_mode & 0o777 == 0o644


def test_prune_never_follows_a_symlink_nor_removes_foreign_folders(tmp_path, proof_of):
    evidence.write_proof(tmp_path, proof_of("reshape_basic"))
    outside = tmp_path.parent / f"{tmp_path.name}_outside"
    outside.mkdir()
    (outside / "proof.json").write_text(json.dumps(
        {"format": 1, "op": "Reshape", "case": "linked", "parameters": []}))
    (tmp_path / "Reshape" / "linked").symlink_to(outside, target_is_directory=True)
    meeting = tmp_path / "notes" / "meeting"
    meeting.mkdir(parents=True)
    (meeting / "proof.json").write_text("{}")
    (meeting / "minutes.txt").write_text("x")
    (tmp_path / "Reshape" / ".git").mkdir()
    assert evidence.prune(tmp_path, set()) == [tmp_path / "Reshape" / "reshape_basic"]
    assert (outside / "proof.json").exists() and (meeting / "minutes.txt").exists()
    assert (tmp_path / "Reshape" / ".git").is_dir()


def test_index_readme_escapes_pipes_in_reasons(tmp_path):
    from torch_prover.batch.summary import batch_report
    report = {**batch_report([], [], 0.0), "cases": [{"op": "Clip", "case": "clip_min_only"}],
              "ops": [{"op": "Clip", "status": "disagrees", "reason": "max |grad| 0.638"}]}
    index_files.write_index(tmp_path, report)
    row = next(line for line in (tmp_path / "README.md").read_text().splitlines()
               if line.startswith("| Clip"))
    assert "max \\|grad\\| 0.638" in row and "/grad/" not in row


def test_bfloat16_data_is_written_as_bfloat16_with_the_same_bits(tmp_path, proof_of):
    """numpy has no bfloat16: BitCast float16 -> bfloat16's output is written from its raw
    bits as a BFLOAT16 TensorProto; a bitcast keeps the bytes, so they equal the input's."""
    d = evidence.write_proof(tmp_path, proof_of("bitcast_float16_to_bfloat16"))
    model = onnx.load(d / "model.onnx")
    assert [(i.domain, i.version) for i in model.opset_import] == [("", 26)]
    data = d / "test_data_set_0"
    x, y = onnx.TensorProto(), onnx.TensorProto()
    x.ParseFromString((data / "input_0.pb").read_bytes())
    y.ParseFromString((data / "output_0.pb").read_bytes())
    assert (x.data_type, y.data_type) == (onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16)
    assert list(y.dims) == list(x.dims)
    x_bits = onnx.numpy_helper.to_array(x).view("uint16")
    y_bits = onnx.numpy_helper.to_array(y).view("uint16")
    assert (x_bits == y_bits).all()


@pytest.mark.parametrize("op,case", [("Conv", "conv2d_bias"),
                                     ("ConvTranspose", "convtranspose_bias")])
def test_module_parameters_do_not_depend_on_the_cpu_kernel(op, case):
    """torch's default init draws float32 values whose last bit depends on the CPU kernel
    (ATEN_CPU_CAPABILITY): the model (its initializers), hence the record's sha256, must
    be the same with the portable kernel as with this machine's best one."""
    import os
    import subprocess
    import sys

    def sha(env_extra):
        env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
        out = subprocess.run(
            [sys.executable, "-m", "torch_prover", "prove", op, "--case", case, "--no-write",
             "--no-numeric", "--format", "json"], env={**env, **env_extra},
            capture_output=True, text=True, timeout=300)
        return json.loads(out.stdout)["cases"][0]["model"]["sha256"]
    assert sha({"ATEN_CPU_CAPABILITY": "default"}) == sha({})


def test_the_dy_is_saved_beside_the_gradients(tmp_path, proof_of):
    """grad_output_0.pb is the dy behind grad_input_0.pb: Reshape's vector-Jacobian product
    is dy reshaped back to the input's shape, value for value."""
    import numpy as np
    data = evidence.write_proof(tmp_path, proof_of("reshape_basic")) / "test_data_set_0"
    x, dy = evidence_data.load_pb(data / "input_0.pb"), evidence_data.load_pb(data / "grad_output_0.pb")
    grad = evidence_data.load_pb(data / "grad_input_0.pb")
    assert dy.shape == evidence_data.load_pb(data / "output_0.pb").shape
    assert np.array_equal(grad, dy.reshape(x.shape))
