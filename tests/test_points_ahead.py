"""ONNX's points measured beside verify-all's batch (batch/points_ahead.py, issue 43): what the
parent takes from the process beside the workers is exactly what measuring the run's own
schema versions after the batch gives (the stock path is the expectation), and whatever that
process did not measure, the parent measures itself."""
import json

import pytest

from torch_prover.batch import onnx_points, points_ahead
from torch_prover.cases import cases_for

OPS = ("Relu", "Clip", "Dropout")   # Dropout: tests skipped as random


@pytest.fixture(scope="module")
def ahead(tmp_path_factory):
    """What the process beside the batch sends back, through JSON as the pipe carries it."""
    cases = [c for op in OPS for c in cases_for(op)]
    made = onnx_points.collecting(tmp_path_factory.mktemp("beside"), cases, 4)()
    return cases, json.loads(json.dumps(made))


def test_taken_ahead_is_what_measuring_after_the_batch_gives(ahead, tmp_path, monkeypatch):
    cases, payload = ahead
    keys = points_ahead.predicted(cases)
    assert {op for op, _ in keys} == set(OPS)
    stock = onnx_points.installed_tests
    for wanted in (keys, keys[:1]):
        monkeypatch.setattr(onnx_points, "installed_tests", stock)
        direct = onnx_points.measure_installed(tmp_path / "direct", 4, False, wanted)
        monkeypatch.setattr(onnx_points, "installed_tests",
                            lambda *a: pytest.fail("collected and measured again"))
        taken = onnx_points.measure_installed(tmp_path / "taken", 4, False, wanted, ahead=payload)
        assert taken == direct
        assert direct.by_version and bool(direct.skipped.get("random")) == (wanted == keys)
        cached = [sorted(p.read_text() for p in (tmp_path / d).glob("onnx-points-*.json"))
                  for d in ("direct", "taken")]
        assert cached[0] == cached[1]   # the warm run reads the same file either way


def test_what_it_did_not_measure_the_parent_measures(ahead):
    cases, payload = ahead
    keys = points_ahead.predicted(cases)
    assert points_ahead.take(payload, keys, 4, False) is not None
    assert points_ahead.take(payload, keys + [("Abs", 13)], 4, False) is None  # not collected
    assert points_ahead.take(payload, keys, 3, False) is None    # another count per version
    assert points_ahead.take(payload, keys, 4, True) is None     # the function-body witness
    assert points_ahead.take(None, keys, 4, False) is None       # the process gave nothing
    some = {**payload, "by_version": payload["by_version"][1:]}  # a version it did not measure
    assert points_ahead.take(some, keys, 4, False) is None


DIGEST = """
import hashlib, sys
from torch_prover.engine.onnx_points import source
from onnx.backend.test.case import base
if sys.argv[1] == "bare":
    with source.without_snippets():
        tests = source.installed(["Clip", "LpPool"])
    assert base.process_snippet.__module__ == base.__name__   # put back
else:
    tests = source.installed(["Clip", "LpPool"])
h = hashlib.sha256()
for t in tests:
    h.update(repr((t.name, t.op, getattr(t, "version", None))).encode())
    h.update(getattr(t, "model", b""))
    for ins, outs in getattr(t, "data_sets", ()):
        for x in (*ins, *outs):
            h.update(str((x.dtype, x.shape)).encode() + x.tobytes())
print(len(tests), h.hexdigest())
"""


def test_tests_collected_without_snippets_are_the_same_tests():
    """The process beside the batch collects without onnx's docs snippets
    (``source.without_snippets``): each in a fresh process (a generator module is built
    once per process), the same tests, models and values, byte for byte."""
    import subprocess
    import sys
    got = [subprocess.run([sys.executable, "-c", DIGEST, how], capture_output=True, text=True,
                          check=True).stdout.split() for how in ("bare", "stock")]
    assert got[0] == got[1] and int(got[0][0]) > 10
