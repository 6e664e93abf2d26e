"""ONNX's node tests as the third numeric witness (engine/onnx_points, batch/onnx_points).

Expectations come from outside the code under test: ONNX's own files (tests/data/onnx-node-tests,
a real subset committed at onnx 6be0677f, its README), the schemas' tags and versions in
onnx.defs, onnxruntime run directly, and the math (|x| has derivative +-1 away from 0).
"""
import json
from pathlib import Path

import numpy as np
import onnx
import onnx.defs
import onnxruntime as ort
import pytest

from json_contract import problems
from torch_prover import cli
from torch_prover.batch import onnx_points as batch_points
from torch_prover.engine.onnx_points import source, store
from torch_prover.engine.onnx_points.judge import cell_state, supports_at_points
from torch_prover.engine.onnx_points.witness import choose, measure_test
from torch_prover.vocab import NumericOutcome as N, PointsSkip, PointsState as S

CHECKOUT = Path(__file__).parent / "data" / "onnx-node-tests"
NODE = CHECKOUT / "onnx" / "backend" / "test" / "data" / "node"


@pytest.fixture(scope="module")
def tests():
    return {t.name: t for t in source.from_checkout(CHECKOUT)}


def test_a_checkout_is_read_test_by_test(tests):
    assert set(tests) == {p.name for p in NODE.iterdir()}
    skipped = tests["test_clip_example_expanded"]
    assert isinstance(skipped, source.Skipped) and skipped.reason == PointsSkip.EXPANDED
    for name, t in tests.items():
        if isinstance(t, source.Skipped):
            continue
        model = onnx.load(str(NODE / name / "model.onnx"))
        node = model.graph.node[0]
        opset = next(i.version for i in model.opset_import if i.domain in ("", "ai.onnx"))
        assert (t.op, t.opset) == (node.op_type, opset)
        assert t.version == onnx.defs.get_schema(node.op_type, opset).since_version
        pb = onnx.TensorProto()
        pb.ParseFromString((NODE / name / "test_data_set_0" / "input_0.pb").read_bytes())
        np.testing.assert_array_equal(t.data_sets[0][0][0], onnx.numpy_helper.to_array(pb))


def test_no_checkout_data_is_one_error(tmp_path):
    with pytest.raises(source.NodeTestsError, match="no onnx/backend/test/data/node"):
        source.from_checkout(tmp_path)


def test_fidelity_a_runtime_that_does_not_reproduce_onnx_gives_no_points(tests):
    t = tests["test_dft"]
    model = onnx.load(str(NODE / "test_dft" / "model.onnx"))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = sess.run(None, dict(zip([i.name for i in model.graph.input], t.data_sets[0][0])))
    assert not np.allclose(got[0], t.data_sets[0][1][0], rtol=t.rtol, atol=t.atol)
    w = measure_test(t)
    assert w.skip == PointsSkip.MISMATCH and w.params == ()
    assert "does not compute DFT-20 as ONNX's tests say" in w.detail


def test_the_witness_at_onnx_points_follows_the_math(tests):
    by = {(p.io, p.name): p.outcome for p in measure_test(tests["test_abs"]).params}
    assert np.all(tests["test_abs"].data_sets[0][0][0] != 0)   # away from the kink at 0
    assert by == {("input", "X"): N.SMOOTH, ("output", "Y"): N.SMOOTH}
    floor = {(p.io, p.name): p.outcome for p in measure_test(tests["test_floor"]).params}
    assert floor[("input", "X")] == N.FLAT   # floor is piecewise constant
    cumprod = {(p.io, p.name): p.outcome for p in measure_test(tests["test_cumprod_1d"]).params}
    assert cumprod[("input", "x")] == N.SMOOTH and cumprod[("input", "axis")] == N.INTEGER


@pytest.mark.parametrize("supports, outcomes, state", [
    ("non-differentiable", [N.SMOOTH], S.CONTRADICT),
    ("non-differentiable", [N.FLAT, N.SMOOTH], S.CONTRADICT),
    ("non-differentiable", [N.FLAT, N.JUMP], S.AGREE),
    ("differentiable", [N.FLAT, N.SMOOTH], S.AGREE),
    ("differentiable", [N.FLAT], S.NOT_EXERCISED),
    ("differentiable", [N.INTEGER, N.ABSENT, N.NOT_RUN], S.NOT_AVAILABLE),
    ("non-differentiable", [], S.NOT_AVAILABLE),
])
def test_cell_states_are_the_documented_rule(supports, outcomes, state):
    assert cell_state(supports, outcomes) == state


def test_points_alone_support_what_one_numeric_witness_does():
    assert supports_at_points([N.FLAT, N.SMOOTH]) == "differentiable"
    assert supports_at_points([N.FLAT, N.NONE]) == "non-differentiable"
    assert supports_at_points([N.INTEGER]) is None


def _fake(name, dtypes):
    ins = tuple(np.zeros(2, dtype=d) for d in dtypes)
    return source.NodeTest(name, "Clip", 13, 13, b"", ((ins, ()),))


def test_choose_covers_the_parameters_first_then_fills():
    only_x = _fake("test_a", ["float32", "float32", "int64"])
    all_three = _fake("test_b", ["float32", "float32", "float32"])
    ints = _fake("test_c", ["int8", "int8", "int8"])
    more_x = _fake("test_d", ["float32"])
    assert [t.name for t in choose([only_x, ints, all_three, more_x], 2)] == ["test_b", "test_a"]
    assert len(choose([only_x, ints, all_three, more_x], 4)) == 4


def test_the_collected_tests_are_cached_and_read_back(tmp_path, monkeypatch, tests):
    real = list(tests.values())
    calls = []
    monkeypatch.setattr(store, "installed", lambda: calls.append(1) or real)
    first, _ = store.installed_tests(tmp_path)
    again, _ = store.installed_tests(tmp_path)
    assert len(calls) == 1 and [t.name for t in again] == [t.name for t in real]
    for a, b in zip(real, again):
        assert type(a) is type(b)
        if isinstance(a, source.NodeTest):
            assert (a.op, a.opset, a.version, a.model, a.rtol, a.atol) == \
                   (b.op, b.opset, b.version, b.model, b.rtol, b.atol)
            for (ia, oa), (ib, ob) in zip(a.data_sets, b.data_sets):
                for x, y in zip(ia + oa, ib + ob):
                    np.testing.assert_array_equal(x, y)
                    assert x.dtype == y.dtype
    (next(tmp_path.glob("onnx-node-tests-*.npz"))).write_bytes(b"not a zip")
    store.installed_tests(tmp_path)
    assert len(calls) == 2   # a damaged cache is a miss, never a crash


def test_prefetched_tests_are_the_ones_a_run_then_reads(tmp_path, monkeypatch):
    """verify-all collects ONNX's tests beside its workers (issue 43): what ``prefetch``
    writes is what ``installed_tests`` then returns, without collecting again; an op name
    no ONNX op could have is never a file."""
    built = source.installed(["Relu"])
    store.prefetch(tmp_path, ["Relu", "../x"])
    assert [p.name.endswith("-Relu.npz") for p in tmp_path.iterdir()] == [True]
    monkeypatch.setattr(store, "installed", lambda ops=None: pytest.fail("collected again"))
    read, warning = store.installed_tests(tmp_path, ["Relu"])
    assert warning is None and [t.name for t in read] == [t.name for t in built]
    assert {t.name for t in built} >= {"test_relu"}
    store.prefetch(tmp_path, ["Relu"])   # cached: nothing built


def _tag(op, version, io, name):
    s = onnx.defs.get_schema(op, version)
    params = s.inputs if io == "input" else s.outputs
    p = next(p for p in params if p.name == name)
    cat = onnx.defs.OpSchema.DifferentiationCategory
    return {cat.Differentiable: "differentiable", cat.NonDifferentiable: "non-differentiable"}.get(
        p.differentiation_category, "unknown")


def test_verify_all_reports_onnx_points_per_cell(capsys, tmp_path):
    code = cli.main(["verify-all", "--ops", "Abs,Floor,Sign", "--no-write", "--format", "json",
                     "--cache-dir", str(tmp_path), "--jobs", "1",
                     "--onnx-src", str(CHECKOUT), "--no-github"])
    rep = json.loads(capsys.readouterr().out)
    assert code == 0 and problems(rep) == []
    sec = rep["onnx_points"]
    cells = {(c["op"], c["version"], c["io"], c["name"]): c for c in sec["cells"]}
    # ONNX tags Abs D and Floor/Sign N; the catalogue agrees; ONNX's points agree with both
    for key, c in cells.items():
        assert c["supports"] == _tag(*key)
        assert c["state"] == S.AGREE
        assert c["tests"] == [f"test_{key[0].lower()}"]
    assert set(cells) == {("Abs", 13, "input", "X"), ("Abs", 13, "output", "Y"),
                          ("Floor", 13, "input", "X"), ("Floor", 13, "output", "Y"),
                          ("Sign", 13, "input", "input"), ("Sign", 13, "output", "output")}
    # only the asked ops' versions are measured (issue 43): the checkout's test_dft, which
    # the runtime does not reproduce, and its Clip test's expanded form are not Abs/Floor/Sign
    assert sec["mismatches"] == [] and sec["summary"]["skipped_tests"] == {}
    assert (sec["summary"]["versions_with_tests"], sec["summary"]["tests_measured"]) == (3, 3)


def test_a_measured_mismatch_is_listed_with_its_reason(tests):
    dft = measure_test(tests["test_dft"])
    run = batch_points.PointsRun("fixture", 4, {("DFT", dft.version): (dft,)}, {})
    sec = batch_points.section(run, [batch_points.Cell("DFT", dft.version, "input", "input",
                                                       "differentiable")])
    assert [m["test"] for m in sec["mismatches"]] == ["test_dft"]
    assert "does not compute DFT" in sec["mismatches"][0]["reason"]
    assert sec["cells"][0]["state"] == S.NOT_AVAILABLE


def test_a_contradiction_is_flagged_never_an_override(tests):
    run = batch_points.PointsRun("fixture", 4, {("Abs", 13): (measure_test(tests["test_abs"]),)}, {})
    sec = batch_points.section(run, [batch_points.Cell("Abs", 13, "input", "X", "non-differentiable")])
    assert sec["cells"][0]["state"] == S.CONTRADICT and sec["summary"]["contradict"] == 1
    assert sec["cells"][0]["supports"] == "non-differentiable"   # the verdict stays


def test_onnx_points_off_and_bad_counts(capsys, tmp_path):
    assert cli.main(["verify-all", "--ops", "Abs", "--no-write", "--format", "json",
                     "--cache-dir", str(tmp_path), "--jobs", "1", "--onnx-points", "0"]) == 0
    assert "onnx_points" not in json.loads(capsys.readouterr().out)
    assert cli.main(["verify-all", "--ops", "Abs", "--no-write", "--onnx-points", "-1"]) == 2
    assert cli.main(["verify-all", "--ops", "Abs", "--no-write", "--no-github",
                     "--onnx-src", str(tmp_path)]) == 2


def test_case_free_decides_a_recent_op_from_onnx_tests_alone(capsys, tmp_path):
    """SwiGLU-28 and CumProd-26: ONNX tags their data inputs differentiable (onnx.defs), and
    their committed node tests exercise them; --case-free decides them with no case."""
    code = cli.main(["verify-all", "--case-free", "--ops", "SwiGLU,CumProd", "--format", "json",
                     "--cache-dir", str(tmp_path), "--onnx-src", str(CHECKOUT), "--no-github"])
    rep = json.loads(capsys.readouterr().out)
    assert code == 0 and problems(rep) == [] and rep["cases"] == []
    ops = {o["op"]: o["versions"] for o in rep["case_free"]["ops"]}
    assert set(ops) == {"SwiGLU", "CumProd"}
    for op, (v,) in ops.items():
        assert v["version"] == onnx.defs.get_schema(op).since_version
        for c in v["cells"]:
            assert c["tag"] == _tag(op, v["version"], c["io"], c["name"])
            assert c["verdict"] == "agree", c
    axis = next(c for c in ops["CumProd"][0]["cells"] if c["name"] == "axis")
    assert axis["rule"] == "by type"   # int32/int64 only (the schema's types)
    a = next(c for c in ops["SwiGLU"][0]["cells"] if c["name"] == "A")
    assert a["rule"] == "case-free: ONNX's points and the function body"   # SwiGLU has a body


def test_case_free_refuses_what_it_cannot_do():
    for extra in (["--onnx-points", "0"], ["--no-numeric"], ["--shard", "1/2"], ["--ops", "Nope"]):
        assert cli.main(["verify-all", "--case-free", "--no-write", *extra]) == 2


def test_the_schema_names_every_state_and_rule():
    from json_contract import schemas
    from torch_prover.engine.onnx_points.judge import CaseFreeRule
    props = schemas()["batch-report"]["properties"]
    cell = props["onnx_points"]["properties"]["cells"]["items"]["properties"]
    assert set(cell["state"]["enum"]) == {s.value for s in S}
    rule = schemas()["defs"]["$defs"]["case_free_rule"]
    assert set(rule["enum"]) == {r.value for r in CaseFreeRule}


def _base_without(tmp_path, ops):
    """tmp_path/Changelog.md: the installed onnx's generated docs without ``ops`` (new in
    the PR)."""
    from gate_fixture import drop_section, generate_docs
    docs = generate_docs(tmp_path / "gen")
    text = (docs / "Changelog.md").read_text(encoding="utf-8")
    for op in ops:
        for v in sorted({s.since_version for s in onnx.defs.get_all_schemas_with_history()
                         if s.name == op}):
            text = drop_section(text, f"{op}-{v}")
    (tmp_path / "Changelog.md").write_text(text, encoding="utf-8")


def test_pr_mode_case_free_decides_a_new_op_from_the_prs_node_tests(tmp_path, monkeypatch, capsys):
    """A base without SwiGLU (new in opset 28) and Shrink: the PR adds both. --case-free with
    --onnx-src reads the PR's committed node tests (the fixture checkout has test_swiglu, not
    Shrink's): SwiGLU's tags (onnx.defs: A, B, Y differentiable) are confirmed at ONNX's
    points; Shrink is not proved, for want of a node test."""
    from json_contract import validate_text
    _base_without(tmp_path, ("SwiGLU", "Shrink"))
    monkeypatch.chdir(tmp_path)
    code = cli.main(["verify-all", "--changed-from", "Changelog.md", "--case-free", "--no-write",
                     "--format", "json", "--cache-dir", str(tmp_path / "cache"),
                     "--onnx-src", str(CHECKOUT), "--no-github"])
    doc = validate_text(capsys.readouterr().out)
    assert code == 0
    by_op = {c["op"]: c for c in doc["changes"]}
    assert set(by_op) == {"SwiGLU", "Shrink"}
    version = onnx.defs.get_schema("SwiGLU").since_version
    for p in by_op["SwiGLU"]["parameters"]:
        assert _tag("SwiGLU", version, p["io"], p["name"]) == "differentiable"
        assert p["verdict"] == "confirmed" and p["supports"] == "differentiable", p
        assert p["witnesses"][0]["case"] == "case-free"
        # what was measured, as a case's line says it: the fixture's test, its runtime
        # (onnx's reference: onnxruntime has no SwiGLU-28) and outcome (SwiGLU is smooth in
        # A, B and Y: a product of smooth functions)
        assert "ONNX's node tests measured test_swiglu (reference): smooth" in \
            p["witnesses"][0]["reason"], p
    assert {p["verdict"] for p in by_op["Shrink"]["parameters"]} == {"not proved"}
    assert all(p["why"] == "not proved: no case and no ONNX node test (the PR's committed tests)"
               for p in by_op["Shrink"]["parameters"])


def test_pr_mode_falls_back_to_onnx_tests_for_an_op_no_case_reaches(tmp_path, monkeypatch,
                                                                   capsys):
    """Without --case-free, a new op no case reaches is decided case-free where the PR's
    node tests decide it: with the catalogue seen without SwiGLU's and Shrink's cases,
    SwiGLU's tags (onnx.defs: differentiable) are confirmed at the fixture checkout's
    test_swiglu points; Shrink, which has no test there, stays not proved with the command
    that starts its case."""
    import torch_prover.cases as cases
    from json_contract import validate_text
    _base_without(tmp_path, ("SwiGLU", "Shrink"))
    real = cases.cases_for
    monkeypatch.setattr(cases, "cases_for",
                        lambda op: [] if op in ("SwiGLU", "Shrink") else real(op))
    monkeypatch.chdir(tmp_path)
    code = cli.main(["verify-all", "--changed-from", "Changelog.md", "--no-write",
                     "--format", "json", "--cache-dir", str(tmp_path / "cache"),
                     "--onnx-src", str(CHECKOUT), "--no-github"])
    doc = validate_text(capsys.readouterr().out)
    assert code == 0
    by_op = {c["op"]: c for c in doc["changes"]}
    assert by_op["SwiGLU"]["no_case"] and by_op["Shrink"]["no_case"]
    version = onnx.defs.get_schema("SwiGLU").since_version
    for p in by_op["SwiGLU"]["parameters"]:
        assert _tag("SwiGLU", version, p["io"], p["name"]) == "differentiable"
        assert p["verdict"] == "confirmed" and p["witnesses"][0]["case"] == "case-free", p
    assert {p["verdict"] for p in by_op["Shrink"]["parameters"]} == {"not proved"}
    assert all("torch-prover new-case Shrink" in p["why"]
               for p in by_op["Shrink"]["parameters"])


def test_pr_mode_case_free_judges_the_prs_docs_tags(tmp_path, monkeypatch, capsys):
    """--case-free with --tags-from: the PR's docs retag Relu-14's X non-differentiable;
    ONNX's node tests show Relu smooth off zero, so the PR's tag is refuted (judged against
    the installed onnx's tag it would be 'confirmed': the PR's change would pass unseen)."""
    from gate_fixture import generate_docs, retag
    from json_contract import validate_text
    docs = generate_docs(tmp_path / "gen")
    text = (docs / "Changelog.md").read_text(encoding="utf-8")
    (tmp_path / "base.md").write_text(text, encoding="utf-8")
    (tmp_path / "pr.md").write_text(retag(text, "Relu-14", "X", "non-differentiable"),
                                    encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code = cli.main(["verify-all", "--changed-from", "base.md", "--tags-from", "pr.md",
                     "--case-free", "--no-write", "--format", "json",
                     "--cache-dir", str(tmp_path / "cache")])
    doc = validate_text(capsys.readouterr().out)
    assert code == 1
    (change,) = doc["changes"]
    x = next(p for p in change["parameters"] if p["name"] == "X")
    assert (change["op"], change["version"]) == ("Relu", 14)
    assert x["verdict"] == "refuted" and x["supports"] == "differentiable", x
    assert x["witnesses"][0]["case"] == "case-free"


def test_a_cell_a_convention_decides_is_not_checked():
    """Hardmax's case declares its input and output piecewise-constant (a convention with
    precedents -- Floor, Ceil, Round, Sign -- that sets aside a derivative that is zero
    wherever it exists): ONNX's points, which measure the math, do not check those cells, and
    check every other decided one of the committed records. LayerNormalization's Mean and
    InvStdDev, whose 'state output' precedent the catalogue refutes (issue 41), are the
    math's under the label: checked like any decided cell."""
    from torch_prover.cases import all_cases
    models = Path(__file__).resolve().parents[1] / "models"
    case = next(c for c in all_cases() if c.op == "Hardmax" and c.conventions)
    rec = json.loads((models / case.op / case.name / "proof.json").read_text())
    declared = {p["name"] for p in rec["parameters"]
                if f"{p['io']} {p['index']}" in case.conventions}
    assert declared
    checked = {c.name for c in batch_points.record_cells([rec])}
    assert not checked & declared
    assert checked == {p["name"] for p in rec["parameters"]
                       if p["name"] not in declared and p.get("supports") in batch_points.DECIDES
                       and p["verdict"] in ("agree", "disagree", "proposed")}
    ln = next(c for c in all_cases() if c.op == "LayerNormalization" and c.conventions)
    rec = json.loads((models / ln.op / ln.name / "proof.json").read_text())
    assert {"Mean", "InvStdDev"} <= {c.name for c in batch_points.record_cells([rec])}
