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


HASH = """
import hashlib
def digest(tests):
    h = hashlib.sha256()
    for t in tests:
        h.update(repr((t.name, t.op, getattr(t, "version", None))).encode())
        h.update(getattr(t, "model", b""))
        for ins, outs in getattr(t, "data_sets", ()):
            for x in (*ins, *outs):
                h.update(str((x.dtype, x.shape)).encode() + x.tobytes())
    return len(tests), h.hexdigest()
"""

DIGEST = HASH + """
import sys
from torch_prover.engine.onnx_points import source
from onnx.backend.test.case import base
if sys.argv[1] == "bare":
    with source.without_snippets():
        tests = source.installed(["Clip", "LpPool"])
    assert base.process_snippet.__module__ == base.__name__   # put back
else:
    tests = source.installed(["Clip", "LpPool"])
print(*digest(tests))
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


# ONNX's tests built from the start of verify-all (batch/points_early.py)

def _digest(cache_dir, ops):
    """The tests the cache holds for ``ops``, read back (nothing built), as one digest."""
    from torch_prover.engine.onnx_points import store
    stock = store.installed
    store.installed = lambda ops=None: pytest.fail("not in the cache: collected again")
    try:
        tests, warning = store.installed_tests(cache_dir, ops)
    finally:
        store.installed = stock
    space: dict = {}
    exec(HASH, space)
    return (warning, *space["digest"](tests))


PREFETCH = """
import sys
from pathlib import Path
from torch_prover.engine.onnx_points import store
store.prefetch(Path(sys.argv[1]), sys.argv[2].split(","))
"""


def test_the_early_process_writes_what_collecting_writes(tmp_path):
    """Forked with a guess wider than the run (Abs too), told the run's ops: it writes
    those ops' files only, and they hold the tests a fresh process's ``prefetch`` (the
    stock path, snippets and all) writes, byte for byte once read back."""
    import subprocess
    import sys

    from torch_prover.batch import points_early
    early, stock = tmp_path / "early", tmp_path / "stock"
    points_early.start(str(early), "Abs,Clip,Relu")
    points_early.go(["Clip", "Relu"])
    points_early.stop()
    subprocess.run([sys.executable, "-c", PREFETCH, str(stock), "Clip,Relu"], check=True)
    assert sorted(p.name.rsplit("-", 1)[1] for p in early.iterdir()) == ["Clip.npz", "Relu.npz"]
    got = _digest(early, ["Clip", "Relu"])
    assert got == _digest(stock, ["Clip", "Relu"]) and got[1] > 10


def test_an_early_process_never_told_writes_nothing(tmp_path):
    """A run that stops before its selection is checked (a bad one, exit 2) or that needs
    none of it (a warm run): the process is killed having written nothing."""
    from torch_prover.batch import points_early
    points_early.start(str(tmp_path / "c"), None)
    proc = points_early._EARLY[0]
    points_early.stop()
    assert proc.exitcode is not None and not (tmp_path / "c").exists()
    assert points_early.wait() is None


def test_a_killed_early_process_leaves_the_collecting_to_the_process_beside(ahead, tmp_path):
    """Killed before it wrote: the process beside the batch waits no longer than its EOF and
    collects and measures itself, the same payload as without it."""
    from torch_prover.batch import points_early
    cases, payload = ahead
    points_early.start(str(tmp_path), ",".join(OPS))
    points_early._EARLY[0].kill()
    made = onnx_points.collecting(tmp_path, cases, 4)()   # sends go: the pipe is dead
    points_early.stop()
    assert made.pop("early") is None and payload.get("early") is None
    assert json.loads(json.dumps(made)) == {k: v for k, v in payload.items() if k != "early"}


def test_the_guess_covers_the_catalogue_in_collecting_order():
    """The default run's guess names every ai.onnx op the catalogue has a case of (the
    catalogue is the expectation), so the modules it imports ahead are the run's, in the
    order collecting imports them; a module out of that order is refused."""
    from torch_prover.batch import points_early
    from torch_prover.cases import all_cases
    from torch_prover.engine.onnx_points import source
    ops = {c.op for c in all_cases() if c.domain == ""}
    guessed = points_early.guess(None)
    assert ops <= set(guessed)
    assert points_early._in_order(source.modules_naming(guessed), source.modules_naming(ops))
    assert points_early.guess(" Relu,Clip ,") == ["Clip", "Relu"]
    assert points_early._in_order(["a", "x", "b"], ["a", "b", "c"])
    assert not points_early._in_order(["a", "c"], ["a", "b", "c"])   # b would come after c


@pytest.mark.parametrize("extra, forks", [
    ([], True), (["--jobs", "1"], False), (["--onnx-points", "0"], False),
    (["--no-cache"], False), (["--no-numeric"], False), (["--case-free"], False),
    (["--domain", "ai.onnx.ml"], False)])
def test_the_early_process_only_for_runs_that_measure_points_beside(extra, forks,
                                                                    monkeypatch, tmp_path):
    from torch_prover import cli
    from torch_prover.batch import points_early
    from torch_prover.cli.commands import verify_all
    started = []
    monkeypatch.setattr(points_early, "start", lambda *a: started.append(a))
    args = cli.build_parser().parse_args(
        ["verify-all", "--jobs", "2", "--cache-dir", str(tmp_path), *extra])
    verify_all._tests_ahead(args)
    assert bool(started) == forks


def test_a_bad_selection_still_fails_before_any_work(tmp_path, capsys):
    """The process forked at once writes nothing: ``--ops`` naming no op fails in one line,
    exit 2, and the cache directory is as it was."""
    from torch_prover import cli
    code = cli.main(["verify-all", "--ops", "NoSuchOp", "--jobs", "2", "--cache-dir",
                     str(tmp_path / "c"), "--out", str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "NoSuchOp" in err
    assert not (tmp_path / "c").exists() or not any((tmp_path / "c").iterdir())
