"""The other domains' reference cases (cases/other_domains.py: ai.onnx.ml,
ai.onnx.preview.training, ai.onnx.preview): their committed evidence is what proving them writes, and what the table says of them is the math's."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnx.defs
import onnx.numpy_helper
import pytest

from torch_prover.cases.other_domains import DOMAIN_CASES
from torch_prover.engine.prove import prove_case
from torch_prover.output import evidence, table

MODELS = Path(__file__).resolve().parents[1] / "models"

D, N = "differentiable", "non-differentiable"
MATH = {
    # op: {parameter: (the tag the math supports, why)}
    "LinearRegressor": {"X": (D, "dY/dX = W, the coefficients (nonzero)"), "Y": (D, "")},
    "Scaler": {"X": (D, "dY/dX = diag(scale) (nonzero)"), "Y": (D, "")},
    "Normalizer": {"X": (D, "L2: dY/dX = (I - y y^T) / |x|, nonzero off the ray of x"),
                   "Y": (D, "")},
    "Binarizer": {"X": (N, "a step: derivative 0 wherever it exists"), "Y": (N, "")},
    "Imputer": {"X": (D, "Y = X off the replaced value: the identity"), "Y": (D, "")},
    "ArrayFeatureExtractor": {"X": (D, "Z = X[..., Y]: a selection, 1 on the chosen"),
                              "Y": (N, "int64 indices"), "Z": (D, "")},
    "LinearClassifier": {"X": (D, "Z = X W^T + b"), "Y": (N, "int64 labels"), "Z": (D, "")},
    "SVMRegressor": {"X": (D, "linear kernel: dY/dX = sum c_i sv_i = [-0.0625, -2.375, "
                              "1.9375] here"), "Y": (D, "")},
    "LabelEncoder": {"X": (N, "a lookup: constant between its keys"), "Y": (N, "")},
    "OneHotEncoder": {"X": (N, "Y = [trunc(X) == category]: constant between integers"),
                      "Y": (N, "")},
    "FeatureVectorizer": {"X": (D, "Y = [X_1, X_2]: a concatenation, 1 on each input's "
                               "block"), "Y": (D, "")},
    "TreeEnsembleClassifier": {"X": (N, "a tree: its scores constant between thresholds"),
                               "Y": (N, "int64 labels"), "Z": (N, "")},
    "SVMClassifier": {"X": (D, "linear mode: Z = X W^T + rho"), "Y": (N, "int64 labels"),
                      "Z": (D, "")},
    "TreeEnsemble": {"X": (N, "a tree: constant between its splits"), "Y": (N, "")},
    "TreeEnsembleRegressor": {"X": (N, "a tree: constant between its thresholds"),
                              "Y": (N, "")},
    # ai.onnx.preview.training: one tensor's update, G' = norm_coefficient X + G
    "Momentum": {"R": (D, "X_new = X - R V_new: dX_new/dR = -V_new"),
                 "T": (N, "int64 update count"),
                 "inputs": (D, "dX_new/dX = 1 - R beta' norm_coefficient"),
                 "outputs": (D, "")},
    "Adagrad": {"R": (D, "X_new = X - R/(1 + T decay) G'/(sqrt(H_new) + eps)"),
                "T": (N, "int64 update count"),
                "inputs": (D, "dH_new/dH = 1"), "outputs": (D, "")},
    "Adam": {"R": (D, "X_new = X - R V_new/(sqrt(H_new) + eps) at T = 0"),
             "T": (N, "int64 update count"),
             "inputs": (D, "dV_new/dV = alpha, dH_new/dH = beta"), "outputs": (D, "")},
    # ai.onnx.preview: Y = softmax(Q K^T scale) V (test_flexattention_... measures it)
    "FlexAttention": {"Q": (D, "through the scores' softmax"), "K": (D, "likewise"),
                      "V": (D, "dY/dV = the attention probabilities (positive)"),
                      "Y": (D, "")},
}


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _close(a: bytes, b: bytes) -> bool:
    """Test data: PyTorch's samples, whose last bits may differ between CPUs (the rule
    test_models_current.py holds the catalogue's evidence to)."""
    x = onnx.numpy_helper.to_array(onnx.load_tensor_from_string(a))
    y = onnx.numpy_helper.to_array(onnx.load_tensor_from_string(b))
    if x.dtype != y.dtype or x.shape != y.shape or x.dtype.kind not in "fc":
        return False
    scale = max(np.abs(x).max(initial=0), np.abs(y).max(initial=0))
    return bool(np.abs(x - y).max(initial=0) <= 1000 * np.finfo(x.dtype).eps * scale)


@pytest.mark.parametrize("case", DOMAIN_CASES, ids=lambda c: c.name)
def test_committed_evidence_is_what_proving_writes(case, tmp_path):
    proof = prove_case(case)
    assert proof.record()["status"] == "proved"
    evidence.write_proof(tmp_path, proof)
    fresh = _files(tmp_path / case.op / case.name)
    committed = _files(MODELS / case.op / case.name)
    assert sorted(fresh) == sorted(committed), "rerun `python scripts/domain_evidence.py`"
    changed = [k for k in fresh if fresh[k] != committed[k]
               and not (k.endswith(".pb") and _close(fresh[k], committed[k]))]
    assert changed == [], "rerun `python scripts/domain_evidence.py`"


def test_each_record_names_the_version_its_node_ran():
    """A record's schema version is the one in force at the model's own ai.onnx.ml import
    (LabelEncoder at ml opset 2 is LabelEncoder-2, whatever ai.onnx's opset is): read here
    from model.onnx and onnx.defs, not from the engine."""
    for case in DOMAIN_CASES:
        d = MODELS / case.op / case.name
        model = onnx.load(d / "model.onnx")
        (ml,) = [o.version for o in model.opset_import if o.domain == case.domain]
        in_force = onnx.defs.get_schema(case.op, ml, case.domain).since_version
        assert json.loads((d / "proof.json").read_text())["schema_version"] == in_force


def test_the_table_says_the_math_of_every_domain_case():
    """Each case's op: every parameter's row supports what the math says, proposed against
    ONNX's unknown tag (no ai.onnx.ml parameter is tagged), with the case named when a
    witness decided it."""
    rows = table.load()["rows"]
    for case in DOMAIN_CASES:
        record = json.loads((MODELS / case.op / case.name / "proof.json").read_text())
        version = record["schema_version"]
        mine = {r["name"]: r for r in rows if r["op"] == case.op and r["version"] == version
                and r["domain"] == case.domain}
        assert set(mine) == set(MATH[case.op]), case.op
        for name, (supports, why) in MATH[case.op].items():
            r = mine[name]
            assert (r["supports"], r["verdict"]) == (supports, "proposed"), (case.op, name, why)
            assert case.name in r["cases"] or r["rule"] == "by type", (case.op, name)


def test_verify_all_keeps_the_domain_cases_evidence(tmp_path):
    """A full verify-all prunes case directories the catalogue no longer has, but not these
    (it does not prove them): the quickstart leaves them, and git status, as they are."""
    from torch_prover.batch.verify import _evidence_kept
    from torch_prover.output.evidence import prune
    kept = _evidence_kept()
    assert {(c.op, c.name) for c in DOMAIN_CASES} <= kept
    case = DOMAIN_CASES[0]
    evidence.write_proof(tmp_path, prove_case(case))
    assert prune(tmp_path, kept) == []
    assert (tmp_path / case.op / case.name / "proof.json").is_file()
    assert prune(tmp_path, kept - {(case.op, case.name)}) == [tmp_path / case.op / case.name]


# Momentum-1, Adagrad-1, Adam-1 by hand (onnx's Operators.md, ai.onnx.preview.training) at R = 0.1,
# X = 1, G = 0.5, V = 0.2, H = 0.25, norm_coefficient = 0.01: G' = 0.51
_OPTIMIZERS = [
    # Momentum standard, T = 1, alpha 0.9, beta 0.5: V_new = 0.18 + 0.255, X_new = 1 - 0.1 V_new
    ("training_momentum_standard", "Momentum", 2, [0.2], [1 - 0.1 * 0.435, 0.435]),
    # Adagrad, T = 1, decay 0.1: r = 0.1/1.1, H_new = 0.25 + 0.51^2
    ("training_adagrad", "Adagrad", 2, [0.25],
     [1 - 0.1 / 1.1 * 0.51 / ((0.25 + 0.2601) ** 0.5 + 1e-6), 0.5101]),
    # Adam, T = 0, alpha 0.9, beta 0.999: V_new = 0.18 + 0.051, H_new = 0.24975 + 0.0002601
    ("training_adam_first_step", "Adam", 3, [0.2, 0.25],
     [1 - 0.1 * 0.231 / ((0.2500101) ** 0.5 + 1e-6), 0.231, 0.2500101]),
]


@pytest.mark.parametrize("name,op,n_out,state,expected", _OPTIMIZERS,
                         ids=[o[0] for o in _OPTIMIZERS])
def test_an_optimizer_case_is_its_update_rule_and_runs_its_real_node(name, op, n_out, state,
                                                                     expected):
    """The PyTorch formula gives the update computed by hand from the op's definition; the
    committed model holds one real node of the training domain with one output per
    updated tensor (the variadic output written out, which onnx.checker accepts), and the
    record says onnx.reference computed the numeric witness (onnxruntime has no kernel of
    ai.onnx.preview.training)."""
    import onnx.checker
    import torch
    (case,) = [c for c in DOMAIN_CASES if c.name == name]
    one = lambda v: torch.tensor([v], dtype=torch.float32)  # noqa: E731
    args = [torch.tensor(0.1), one(1.0), one(0.5)] + [one(v) for v in state]
    got = [float(t) for t in case.model(*args)]
    assert got == pytest.approx(expected, rel=1e-5)
    d = MODELS / op / name
    model = onnx.load(d / "model.onnx")
    onnx.checker.check_model(model, full_check=True)
    nodes = [n for n in model.graph.node if n.domain == "ai.onnx.preview.training"]
    assert [(n.op_type, len(n.output)) for n in nodes] == [(op, n_out)]
    assert len(nodes[0].input) == 4 + len(state)   # R, T, X, G and the state
    assert '"runtime": "onnx.reference"' in (d / "proof.json").read_text()


@pytest.mark.parametrize("domain,ops", [
    ("ai.onnx.preview.training", {"Momentum", "Adagrad", "Adam"}),
    ("ai.onnx.preview", {"FlexAttention"})])
def test_verify_all_domain_proves_the_cases_in_the_run_path(domain, ops, tmp_path):
    """verify-all --domain ai.onnx.preview.training (or ai.onnx.preview): the worker pool
    proves that domain's cases (and only them) and writes what scripts/domain_evidence.py
    committed; it writes no index and prunes nothing (another domain's, or ai.onnx's,
    evidence stays)."""
    from torch_prover.batch import verify
    other = tmp_path / "Abs" / "abs_basic"
    other.mkdir(parents=True)
    (other / "proof.json").write_text("{}")
    prepared = verify.prepare(verify.Request(domain=domain, jobs=1,
                                             out=str(tmp_path), onnx_points=0))
    assert {c.op for c in prepared.cases} == ops
    outcome = verify.run(prepared)
    assert outcome.exit_code == 0 and outcome.removed == ()
    assert sorted(r["status"] for r in outcome.report["cases"]) == ["proved"] * len(ops)
    assert (other / "proof.json").read_text() == "{}"
    assert not (tmp_path / "index.json").exists()
    for case in prepared.cases:
        fresh = _files(tmp_path / case.op / case.name)
        committed = _files(MODELS / case.op / case.name)
        assert sorted(fresh) == sorted(committed)
        assert [k for k in fresh if fresh[k] != committed[k]
                and not (k.endswith(".pb") and _close(fresh[k], committed[k]))] == []


@pytest.mark.parametrize("argv,says", [
    (["verify-all", "--domain", "ai.onnx.nope"], "--domain ai.onnx.nope: no cases in that "
                                                 "domain (known: ai.onnx, ai.onnx.ml, "
                                                 "ai.onnx.preview, "
                                                 "ai.onnx.preview.training)"),
    (["verify-all", "--domain", "ai.onnx.ml", "--versions", "all"], "--versions all plans"),
    (["verify-all", "--domain", "ai.onnx.ml", "--ops", "Adam"], "no case for op Adam in "
                                                               "domain ai.onnx.ml"),
    (["verify-all", "--domain", "ai.onnx.ml", "--changed-from", "main"], "--changed-from"),
    (["coverage", "--domain", "ai.onnx.nope"], "the table has no op of that domain"),
    (["coverage", "--domain", "ai.onnx.ml", "Adam"], "no op Adam in domain ai.onnx.ml"),
])
def test_a_domain_a_run_cannot_take_is_one_line_and_exit_2(argv, says, capsys, tmp_path):
    from torch_prover.cli import main
    assert main(argv + (["--no-write"] if argv[0] == "verify-all" else [])) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err


def test_coverage_domain_lists_every_op_with_its_cases(capsys):
    """Every op onnx registers in the domain (onnx.defs), each with its cases and how each
    schema version is decided."""
    from torch_prover.cli import main
    assert main(["coverage", "--domain", "ai.onnx.preview.training", "--format", "json"]) == 0
    entries = {e["op"]: e for e in json.loads(capsys.readouterr().out)}
    ops = {s.name for s in onnx.defs.get_all_schemas_with_history()
           if s.domain == "ai.onnx.preview.training"}
    assert set(entries) == ops
    assert entries["Momentum"]["cases"] == ["training_momentum_standard"]
    assert [v["decided_by"] for v in entries["Momentum"]["versions"]] == ["proved"]
    # no case: ONNX's model tests of Gradient decide it (tests/test_gradient_witness.py)
    assert entries["Gradient"]["cases"] == ["test_gradient_of_add",
                                            "test_gradient_of_add_and_mul"]
    assert entries["Gradient"]["versions"][0]["undecided"] == []


def _flex_attention_node(shapes: dict[str, tuple[int, ...]]) -> onnx.ModelProto:
    """One FlexAttention-1 node (ai.onnx.preview), default attributes, float64, built by
    hand here (not from the case); onnx.checker accepts it."""
    from onnx import TensorProto, helper
    b, h, s, _ = shapes["Q"]
    y_shape = (b, h, s, shapes["V"][-1])
    value = lambda n, shape: helper.make_tensor_value_info(  # noqa: E731
        n, TensorProto.DOUBLE, shape)
    node = helper.make_node("FlexAttention", ["Q", "K", "V"], ["Y"], domain="ai.onnx.preview")
    model = helper.make_model(
        helper.make_graph([node], "flex", [value(n, shapes[n]) for n in "QKV"],
                          [value("Y", y_shape)]),
        opset_imports=[helper.make_opsetid("", 25), helper.make_opsetid("ai.onnx.preview", 1)],
        ir_version=11)
    onnx.checker.check_model(model, full_check=True)
    return model


def test_flexattention_case_is_the_node_and_the_table_says_its_finite_differences():
    """FlexAttention-1 (ai.onnx.preview): the node, run by onnx.reference (onnxruntime does
    not register the op), computes the case's formula softmax(Q K^T / sqrt(head_size)) V,
    K/V heads shared by groups of query heads, on random inputs; the node's own central
    differences in float64 are nonzero for each of Q, K and V (so Y is too), which is
    what the table's four rows must support; the record says onnx.reference computed its
    numeric witness."""
    import onnxruntime as ort
    import torch
    from onnx.reference import ReferenceEvaluator
    (case,) = [c for c in DOMAIN_CASES if c.op == "FlexAttention"]
    shapes = {"Q": (1, 4, 3, 4), "K": (1, 2, 5, 4), "V": (1, 2, 5, 6)}
    model = _flex_attention_node(shapes)
    with pytest.raises(Exception, match="FlexAttention.*not a registered"):
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    node = ReferenceEvaluator(model)
    rng = np.random.default_rng(7)
    feeds = {n: rng.standard_normal(shape) for n, shape in shapes.items()}
    (y,) = node.run(None, feeds)
    formula = case.model(*(torch.tensor(feeds[n], dtype=torch.float32) for n in "QKV"))
    np.testing.assert_allclose(formula.numpy(), y, atol=1e-5)
    w = rng.standard_normal(y.shape)   # a random cotangent: <w, dY/dX> by central differences
    measured = {}
    for name in "QKV":
        grad = np.zeros(shapes[name])
        for i in np.ndindex(*shapes[name]):
            up, down = dict(feeds), dict(feeds)
            up[name], down[name] = feeds[name].copy(), feeds[name].copy()
            up[name][i] += 1e-6
            down[name][i] -= 1e-6
            grad[i] = np.sum(w * (node.run(None, up)[0] - node.run(None, down)[0])) / 2e-6
        measured[name] = D if np.abs(grad).max() > 1e-3 else N
    measured["Y"] = D if D in measured.values() else N
    rows = {r["name"]: r for r in table.load()["rows"] if r["op"] == "FlexAttention"}
    assert {n: r["supports"] for n, r in rows.items()} == measured == {n: D for n in "QKVY"}
    assert all(r["cases"] == [case.name] and r["verdict"] == "proposed" for r in rows.values())
    record = json.loads((MODELS / case.op / case.name / "proof.json").read_text())
    assert (record["domain"], record["schema_version"]) == ("ai.onnx.preview", 1)
    assert record["test_data"]["runtime"] == "onnx.reference"
    assert "not a registered" in record["numeric"]["why"]
