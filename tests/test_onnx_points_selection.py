"""A run pays for the ops it asks for (issue 43): ONNX's node tests of a selection are built
by importing only the generator modules that name its ops, kept per op, and a run measures
only the schema versions its cells are of.

Expectations come from outside the code under test: onnx's own generator modules imported one
by one (what each builds is what onnx's ``_Exporter`` appends), onnx's whole collection
(``collect_testcases``), and the schemas' versions in onnx.defs.
"""
import json
import pickle
import subprocess
import sys

import numpy as np
import onnx.defs
import pytest

from torch_prover.engine.onnx_points import source, store

_SOME = ["Clip", "Relu", "Scan", "Cast", "LSTM", "Dropout"]

# in one fresh process: a selection's tests (its modules alone), then every other module
# imported alone -- the ops whose one-node tests each builds (an _expanded test is the op's
# function body: no points, left out of a selection) --, then onnx's whole collection
_FRESH = r"""
import contextlib, importlib, io, pickle, sys, warnings
import numpy as np
import onnx.backend.test.case.node as node
from torch_prover.engine.onnx_points import source
some = source.installed(%r)
built = {}
with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), np.errstate(all="ignore"):
    warnings.simplefilter("ignore")
    for name, _ in source.generator_modules():
        if name in sys.modules:
            continue
        before = len(node._NodeTestCases)
        importlib.import_module(name)
        built[name] = sorted({c.model.graph.node[0].op_type for c in node._NodeTestCases[before:]
                              if c.model is not None and len(c.model.graph.node) == 1
                              and "_expanded" not in c.name})
sys.stdout.buffer.write(pickle.dumps((some, built, source.installed())))
""" % (_SOME,)


@pytest.fixture(scope="module")
def fresh():
    return pickle.loads(subprocess.run([sys.executable, "-c", _FRESH], check=True,
                                       capture_output=True).stdout)


def test_every_modules_tests_are_of_ops_it_names(fresh):
    _, built, _ = fresh
    assert len(built) > 150
    for module, ops in built.items():
        for op in ops:
            assert module in source.modules_naming([op]), (module, op)


def _same(a, b):
    assert [t.name for t in a] == [t.name for t in b]
    for x, y in zip(a, b):
        assert type(x) is type(y)
        if isinstance(x, source.NodeTest):
            assert (x.op, x.opset, x.version, x.model) == (y.op, y.opset, y.version, y.model)
            for (ia, oa), (ib, ob) in zip(x.data_sets, y.data_sets):
                for p, q in zip(ia + oa, ib + ob):
                    assert p.dtype == q.dtype
                    np.testing.assert_array_equal(p, q)


def test_a_selections_tests_are_the_whole_collections(fresh):
    some, _, every = fresh
    key = lambda t: t.name  # noqa: E731
    _same(sorted(some, key=key),
          sorted((t for t in every if t.op in _SOME and "_expanded" not in t.name), key=key))
    assert {t.op for t in some} == set(_SOME)


def test_a_selection_is_kept_per_op(tmp_path, monkeypatch):
    calls = []
    real = source.installed

    def counted(ops=None):
        calls.append(ops)
        return real(ops)
    monkeypatch.setattr(store, "installed", counted)
    first, _ = store.installed_tests(tmp_path, ["Relu"])
    assert calls == [["Relu"]] and {t.op for t in first} == {"Relu"}
    assert [p.name.rpartition("-")[2] for p in tmp_path.glob("onnx-node-tests-*.npz")] == \
        ["Relu.npz"]
    again, _ = store.installed_tests(tmp_path, ["Abs", "Relu"])
    assert calls == [["Relu"], ["Abs"]]   # Relu read back, only Abs built
    _same(sorted((t for t in again if t.op == "Relu"), key=lambda t: t.name),
          sorted(first, key=lambda t: t.name))
    # a name no op could have (PR mode reads names from a PR's docs) chooses no file
    files = sorted(tmp_path.rglob("*"))
    assert store.installed_tests(tmp_path, ["../../evil", "x/y"]) == ([], None)
    assert sorted(tmp_path.rglob("*")) == files and len(calls) == 2


def test_an_ops_run_measures_only_its_versions(real_report):
    """A real ``verify-all --ops Relu`` (the session's shared report: no run of its own)."""
    path = real_report("Relu")
    section = json.loads(path.read_text())["onnx_points"]
    cells = {(c["op"], c["version"]) for c in section["cells"]}
    assert cells == {("Relu", onnx.defs.get_schema("Relu").since_version)}
    assert section["summary"]["versions_with_tests"] == len(cells)
    assert {m["op"] for m in section["mismatches"]} <= {"Relu"}
    # its ops' tests kept one file per op; the whole collection never built nor written
    kept = [p.name for p in (path.parent / "cache").glob("onnx-node-tests-*.npz")]
    assert "Relu.npz" in {k.rpartition("-")[2] for k in kept}
    assert all(k.count("-") == 4 for k in kept), kept   # onnx-node-tests-DIGEST-OP.npz
