"""check-evidence: a tree of evidence re-run from its files alone, per directory."""
import json

import numpy as np
import onnx
import onnx.numpy_helper
import pytest

from torch_prover import cli
from torch_prover.output import evidence, evidence_data

CASES = ("reshape_basic", "conv2d_bias", "hammingwindow_periodic",
         "randomuniformlike_rand_like")


@pytest.fixture
def tree(tmp_path, proof_of):
    for name in CASES:
        evidence.write_proof(tmp_path, proof_of(name))
    return tmp_path


def _run(capsys, *args):
    code = cli.main(["check-evidence", *map(str, args), "--format", "json"])
    return code, {d["path"]: d for d in json.loads(capsys.readouterr().out)["directories"]}


def _ort_runs(model_path) -> bool:
    import onnxruntime as ort
    try:
        sess = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
        feeds = {i.name: np.zeros([d.dim_value for d in i.type.tensor_type.shape.dim],
                                  dtype=np.float64) for i in onnx.load(model_path).graph.input}
        sess.run(None, feeds)
        return True
    except Exception:
        return False


def test_each_directory_is_matched_or_explained(tree, capsys):
    code, by = _run(capsys, tree)
    assert code == 0
    assert by["Reshape/reshape_basic"]["status"] == "match"
    conv = by["Conv/conv2d_bias"]
    assert conv["status"] == "match" and conv["gradients_rechecked"] >= 1
    # onnxruntime has no float64 Conv kernel: the record names the reference evaluator
    assert not _ort_runs(tree / "Conv" / "conv2d_bias" / "model.onnx")
    assert conv["runtime"] == "onnx.reference"
    # HammingWindow declares its forward mismatch; a random draw cannot be compared
    assert by["HammingWindow/hammingwindow_periodic"]["status"] == "not compared"
    assert "declared mismatch" in by["HammingWindow/hammingwindow_periodic"]["detail"]
    assert by["RandomUniformLike/randomuniformlike_rand_like"]["status"] == "not compared"
    assert "random draw" in by["RandomUniformLike/randomuniformlike_rand_like"]["detail"]


def _scale(pb, factor):
    t = evidence_data.load_pb(pb)
    pb.write_bytes(onnx.numpy_helper.from_array(t * factor, "x").SerializeToString())


@pytest.mark.parametrize("damage", ["output", "gradient", "dy", "missing input"])
def test_evidence_that_no_longer_holds_is_a_mismatch(tree, capsys, damage):
    """The runtime's output and the finite difference along the saved dy are the outside
    facts: a changed output, a doubled gradient or dy (<dy, J v> != <2 grad, v>) or a
    missing input file is a mismatch, and the exit code is 1."""
    data = tree / "Conv" / "conv2d_bias" / "test_data_set_0"
    if damage == "output":
        _scale(data / "output_0.pb", 1.01)
    elif damage == "gradient":
        _scale(data / "grad_input_0.pb", 2.0)
    elif damage == "dy":
        _scale(data / "grad_output_0.pb", 2.0)
    else:
        (data / "input_0.pb").unlink()
    code, by = _run(capsys, tree)
    assert code == 1
    assert by["Conv/conv2d_bias"]["status"] == "mismatch"
    assert by["Reshape/reshape_basic"]["status"] == "match"


def test_not_a_directory_is_one_line_exit_2(tmp_path, capsys):
    assert cli.main(["check-evidence", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a directory" in err
