"""The committed evidence under models/ is complete and current.

Regenerating everything is verify-all's job (minutes); here a sample is re-proved and
compared byte for byte, and every catalogue case must have a self-consistent record.
After changing a case or the engine: `torch-prover verify-all` rewrites models/.
"""
import hashlib
import json
from pathlib import Path

import pytest

from torch_prover import evidence
from torch_prover.cases import all_cases, find_case
from torch_prover.prove import prove_case, versions
from torch_prover.tags import all_ops

MODELS = Path(__file__).resolve().parents[1] / "models"
SAMPLE = [("Reshape", "reshape_basic"), ("Conv", "conv2d_bias"), ("Shape", "shape_dynamic"),
          ("TopK", "topk_values_indices"), ("Shrink", "shrink_default"), ("Clip", "clip_tensor_bounds"),
          ("RandomNormal", "randomnormal_fixed_shape")]  # random: onnxruntime must be seeded


def _committed(op, name):
    path = MODELS / op / name / "proof.json"
    assert path.exists(), f"no committed evidence for {op}/{name}: run torch-prover verify-all"
    return json.loads(path.read_text())


@pytest.mark.parametrize("op,name", SAMPLE)
def test_sample_records_are_current(op, name):
    committed = _committed(op, name)
    if committed["versions"] != versions():
        pytest.skip(f"evidence was made with {committed['versions']}, not the installed versions")
    fresh = evidence.dumps(prove_case(find_case(op, name)).record())
    assert json.loads(fresh) == committed, f"models/{op}/{name} is stale: rerun verify-all"


def test_every_case_has_self_consistent_evidence():
    for case in all_cases():
        rec = _committed(case.op, case.name)
        d = MODELS / case.op / case.name
        if rec["status"] == "error":
            continue
        assert rec["case"] == case.name and rec["op"] == case.op
        digest = hashlib.sha256((d / "model.onnx").read_bytes()).hexdigest()
        assert digest == rec["model"]["sha256"], f"{d}: model.onnx does not match proof.json"
        assert (d / "test_data_set_0").is_dir(), f"{d}: no test_data_set_0"


def test_index_lists_every_op():
    index = json.loads((MODELS / "index.json").read_text())
    assert [o["op"] for o in index["ops"]] == list(all_ops())
    assert all(o["reason"] for o in index["ops"])
    assert (MODELS / "README.md").read_text().count("\n| ") >= len(all_ops())
