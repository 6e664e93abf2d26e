"""``coverage`` says how each op and schema version is decided -- by a case, case-free (ONNX's
node tests), by type, or not at all -- and the cached collection of ONNX's tests reads back
what was collected.

Expectations come from outside the code under test: ONNX's own collector
(``onnx.backend.test.case.node.collect_testcases``, called here directly), the schemas in
``onnx.defs`` (tags, the ``seed`` attribute of a sampling op), and the values a test puts
in. Every op of the catalogue has a case, so an op "without one" is the catalogue seen
without that op's cases (monkeypatched), as a new op's would be on the day it is proposed.
"""
import json

import ml_dtypes
import numpy as np
import onnx
import onnx.defs
import pytest

import torch_prover.cases as cases
from docs_examples import assert_example
from torch_prover import cli
from torch_prover.engine.onnx_points import source, store
from torch_prover.output import coverage as coverage_mod


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One result cache for the module: ONNX's tests are collected once (about 8 s)."""
    return tmp_path_factory.mktemp("coverage_cache")


def _onnx_tests(op):
    """The names of ONNX's single-node node tests of ``op``, from ONNX's own collector (its
    generators warn as numpy casts overflow, which the suite's filter would raise: ignored,
    as the tool's own collection does -- a run now imports only the generators it needs)."""
    import warnings
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    return {c.name for c in cases if c.model is not None
            and len(c.model.graph.node) == 1 and c.model.graph.node[0].op_type == op
            and "_expanded" not in c.name}


def _tag(op, io, name):
    s = onnx.defs.get_schema(op)
    p = next(p for p in (s.inputs if io == "input" else s.outputs) if p.name == name)
    cat = onnx.defs.OpSchema.DifferentiationCategory
    return {cat.Differentiable: "differentiable",
            cat.NonDifferentiable: "non-differentiable"}.get(p.differentiation_category, "unknown")


def _without_cases(monkeypatch, cache, *ops):
    real_all, real_for = coverage_mod.all_cases, cases.cases_for
    monkeypatch.setattr(coverage_mod, "all_cases",
                        lambda: [c for c in real_all() if c.op not in ops])
    monkeypatch.setattr(cases, "cases_for", lambda op: [] if op in ops else real_for(op))
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))


def test_an_op_without_a_case_is_decided_case_free_at_onnx_tests(monkeypatch, capsys, cache):
    """Shrink seen without its cases: ONNX ships single-node Shrink tests, whose inputs lie
    on both sides of the dead zone, so both parameters are smooth there: decided case-free,
    each agreeing with ONNX's tag, from ONNX's tests only."""
    _without_cases(monkeypatch, cache / "xdg", "Shrink")
    assert cli.main(["coverage", "--format", "json", "Shrink"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["ops"]
    assert entry["decided"] == entry["status"] == "case-free" and "cases" not in entry
    free = entry["case_free"]
    assert free["version"] == onnx.defs.get_schema("Shrink").since_version
    assert free["tests"] and set(free["tests"]) <= _onnx_tests("Shrink")
    for c in free["cells"]:
        assert c["supports"] == c["tag"] == _tag("Shrink", c["io"], c["name"])
        assert c["verdict"] == "agree" and set(c["tests"]) <= set(free["tests"])
    assert cli.main(["coverage", "Shrink"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Shrink: decided case-free, no case")
    assert "every parameter decided at ONNX's node tests" in text
    assert cli.main(["coverage"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "1 case-free" in head


def test_a_version_whose_onnx_tests_give_no_points_stays_undecided(monkeypatch, capsys, cache):
    """Bernoulli-15: no case reaches it (coverage --versions' plan), and ONNX's Bernoulli
    tests sample (the schema's ``seed`` attribute): none gives points, and coverage says so
    with their number (ONNX's collector)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache / "xdg"))
    assert "seed" in onnx.defs.get_schema("Bernoulli").attributes
    assert cli.main(["coverage", "Bernoulli", "--versions", "all", "--format", "json"]) == 0
    (op,) = json.loads(capsys.readouterr().out)["versions"]
    row = next(r for r in op["versions"] if r["version"] == 15)
    assert row["decided"] == "none" and row["case_free"]["decided"] is None
    n = len(_onnx_tests("Bernoulli"))
    assert n and f"{n} of Bernoulli's tests give no points ({n} random)" in row["reason"]
    args = ["coverage", "Bernoulli", "Optional", "OptionalHasElement", "--versions", "all"]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "  Bernoulli-15: none: " in out
    assert_example("coverage-case-free", "$ torch-prover " + " ".join(args) + "\n" + out)


def test_a_version_without_a_case_is_case_free_in_the_versions_plan(monkeypatch, capsys, cache):
    """Shrink seen without its cases, per schema version: its latest version (ONNX's tests'
    opset) is ``cf``; no earlier Shrink version exists to be left undecided."""
    _without_cases(monkeypatch, cache / "xdg", "Shrink")
    versions = sorted({s.since_version for s in onnx.defs.get_all_schemas_with_history()
                       if s.name == "Shrink"})
    assert cli.main(["coverage", "Shrink", "--versions", "all"]) == 0
    out = capsys.readouterr().out
    assert f"Shrink: {versions[-1]}:cf" in out.splitlines()[1]
    assert f"  Shrink-{versions[-1]}: case-free: every parameter decided" in out


def test_coverage_with_every_op_cased_collects_nothing(monkeypatch, capsys, tmp_path):
    """The real catalogue decides every op by a case or by type: plain ``coverage`` never
    reads ONNX's tests (it stays as cheap as before)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(store, "installed", lambda: pytest.fail("collected ONNX's tests"))
    assert cli.main(["coverage"]) == 0
    assert "0 case-free" in capsys.readouterr().out.splitlines()[0]
    assert not list(tmp_path.rglob("onnx-node-tests-*"))


def test_the_cached_collection_keeps_every_type_onnx_tests_hold(tmp_path, monkeypatch):
    """Strings and TensorProto in object arrays, bfloat16 and int4 (ml_dtypes), 0-d and
    empty arrays: read back with their dtype, shape and values, from a file numpy opens
    without pickle (format 1 pickled them, so every read was a miss)."""
    proto = onnx.numpy_helper.from_array(np.array([1, -2], dtype=np.int8), "zp")
    zero_d = np.empty((), dtype=object)
    zero_d[()] = proto
    values = (np.array(["a", "bé"], dtype=object), np.empty((2, 0), dtype=object), zero_d,
              np.asarray(ml_dtypes.bfloat16(1.5)),
              np.arange(6, dtype=ml_dtypes.bfloat16).reshape(2, 3).T,
              np.array([1, -3], dtype=ml_dtypes.int4), np.array([[1.5]], dtype=np.float32))
    made = [source.NodeTest("test_t", "Identity", 21, 21, b"model", ((values[:4], values[4:]),))]
    monkeypatch.setattr(store, "installed", lambda: made)
    store.installed_tests(tmp_path)
    (path,) = tmp_path.glob("onnx-node-tests-*.npz")
    with np.load(path, allow_pickle=False) as z:   # no object array in the file
        assert all(z[k].dtype.kind != "O" for k in z.files)
    monkeypatch.setattr(store, "installed", lambda: pytest.fail("not read from the cache"))
    ((ins, outs),) = store.installed_tests(tmp_path)[0][0].data_sets
    for want, got in zip(values, ins + outs):
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        if want.dtype.kind == "O":
            assert got.tolist() == want.tolist() if want.ndim else got[()] == proto
        else:
            assert got.tobytes() == want.tobytes()
