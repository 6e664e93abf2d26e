"""The all-versions run (conftest ``versions_run``, the suite's one): no version proved by a
run of another, failed variants counted and shown, by-type decisions in the table.

Expectations from the schemas and the math: Sum/Mean/Max/Min-6 take inputs of one shape
only ("All inputs and outputs must have the same shape"), and the *_three_broadcast cases
feed [2, 3], [3] and [1, 3]; Hardmax-1 and -11 coerce the input to 2-D at ``axis``, so at
axis=0 a [3, 4] input gets one hardmax over all twelve elements where the module (and
Hardmax-13) takes one per column; Pad's ``wrap`` mode exists from Pad-19 only (Pad-11 and
-13 list constant, reflect, edge); Resize-10's linear mode samples at x / scale, not at
F.interpolate's (x + 0.5) / scale - 0.5.
"""
from __future__ import annotations

import pytest

from torch_prover.engine.versions import runtimes
from torch_prover.output.batch_render import render_batch

NOT_RUNS = ["sum_three_broadcast@7", "mean_three_broadcast@7", "max_three_broadcast@7",
            "min_three_broadcast@7", "hardmax_axis0@10", "hardmax_axis0@12", "pad_wrap@12",
            "pad_wrap@17", "resize_bilinear_scale@10"]


def _variants(run):
    return {r["case"]: r for r in run["report"]["versions"]["cases"]}


def _decided(rec):
    return [p for p in rec.get("parameters", [])
            if p["verdict"] != "inconclusive" and p["rule"] != "by type"]


@pytest.mark.parametrize("case", NOT_RUNS)
def test_a_variant_that_cannot_run_its_version_proves_nothing_of_it(versions_run, case):
    rec = _variants(versions_run)[case]
    assert rec["status"] != "proved" and not _decided(rec), rec["status"]
    failed = {f["case"]: f for f in versions_run["report"]["versions"]["summary"][
        "failed_variants"]}
    assert failed[case]["reason"] and failed[case]["declared"]   # a limit, with its reason


def test_no_decision_rests_on_a_runtime_that_does_not_implement_its_version(versions_run):
    rep = versions_run["report"]
    for rec in rep["cases"] + rep["versions"]["cases"]:
        if not _decided(rec):
            continue
        runtime = (rec.get("numeric") or {}).get("runtime")
        assert runtime is not None, rec["case"]
        if runtime == runtimes.REFERENCE:
            assert runtimes.reference_follows(rec["op"], rec["schema_version"]), rec["case"]
        assert not rec.get("fidelity"), rec["case"]


def test_failed_variants_are_exactly_the_variants_that_carry_an_error(versions_run):
    section = versions_run["report"]["versions"]
    carrying = {r["case"] for r in section["cases"]
                if r["status"] in ("error", "no-tags", "failed", "invalid") or r.get("fidelity")}
    listed = [f["case"] for f in section["summary"]["failed_variants"]]
    assert sorted(listed) == sorted(carrying) and len(listed) == len(set(listed))
    assert section["summary"]["undeclared_failures"] == sum(
        not f["declared"] for f in section["summary"]["failed_variants"])


@pytest.mark.parametrize("fmt", ["text", "markdown", "html"])
def test_every_format_lists_each_failed_variant_with_its_reason(versions_run, fmt):
    rep = versions_run["report"]
    r = render_batch(rep, fmt, 100)
    page = r.text + (r.details or "")   # Markdown past GitHub's limit: body + details file
    for f in rep["versions"]["summary"]["failed_variants"]:
        assert f["case"] in page and f["kind"] in page, (fmt, f["case"])


def test_resize_roi_rests_only_on_the_case_that_uses_it(versions_run):
    """roi "only takes effect when coordinate_transformation_mode is tf_crop_and_resize":
    in every version the cell is decided by resize_crop_roi's variant, or names its
    failure -- never decided by the cases whose mode ignores roi."""
    rep = versions_run["report"]
    resize = next(o for o in rep["versions"]["ops"] if o["op"] == "Resize")
    for e in resize["versions"]:
        roi = next((c for c in e["cells"] if c["name"] == "roi"), None)
        if roi is None:
            continue
        crop = [c for c in roi["cases"] if c.startswith("resize_crop_roi")]
        assert crop, (e["version"], roi)
        if roi["verdict"] == "inconclusive":
            assert roi["rule"] in ("variant failed", "versions disagree"), roi
        else:
            assert roi["supports"] == "differentiable", roi


def test_every_by_type_decision_of_the_ops_section_is_in_the_versions_table(versions_run):
    rep = versions_run["report"]
    table = {(o["op"], e["version"]): e for o in rep["versions"]["ops"] for e in o["versions"]}
    rows = [(o["op"], o["schema_version"], p) for o in rep["ops"]
            for p in o.get("parameters", []) if p["rule"] == "by type"]
    assert any(op == "NonMaxSuppression" for op, _, _ in rows)
    for op, version, p in rows:
        cells = table[(op, version)]["cells"]
        assert any((c["io"], c["name"], c["supports"]) == (p["io"], p["name"], p["supports"])
                   for c in cells), (op, version, p["name"])
    for version in (10, 11):
        entry = table[("NonMaxSuppression", version)]
        assert entry["decided_by"] == "by type" and "undecided" not in entry


# ----------------------------------------------------------------------------- float32 copies
# Versions onnxruntime runs only in float32 (it has no float64 kernel of them: the NOT_IMPLEMENTED
# and "does not support double" refusals of onnxruntime 1.31.1) and onnx.reference does not
# follow (engine/versions/runtimes.py: it implements these ops at their newest version only): each
# variant runs onnxruntime's kernel of its version on a float32 copy (engine/versions/float32_copy.py).
# The math of each op is smooth in these inputs, and the cases' declarations (expect=) stand.
COPIED = ["conv2d_bias@10", "conv2d_bias@21", "conv_no_bias@10", "conv_grouped_bias@21",
          "convtranspose_bias@10", "convtranspose_bias@21", "averagepool_2d@9",
          "averagepool_2d@10", "averagepool_2d@18", "averagepool_2d@21", "averagepool_pad@9",
          "maxpool_2d@7", "lppool_2d@21", "lppool_1d@21", "maxunpool_2d@10", "maxunpool_2d@21",
          "det_3x3@21", "det_batched@21", "instancenormalization_affine@21", "gru_h0_bias@13",
          "gru_h0_bias@21", "lstm_h0_c0_bias@13", "lstm_h0_c0_bias@21", "lstm_peephole_p@21",
          "gridsample_bilinear@19", "gridsample_bicubic_border@19", "hardmax_last@10",
          "hardmax_last@12", "resize_nearest_size@10", "nonzero_float@12",
          "prelu_slope_input@8", "prelu_slope_input@15", "prelu_module@15"]
ANOTHER_FUNCTION = ["resize_bilinear_scale@10", "maxunpool_output_shape@10",
                    "maxunpool_output_shape@21"]
"""Run in float32 at their version, these compute another function than the module:
Resize-10's linear mode is asymmetric, onnxruntime's MaxUnpool reads the indices in the
output_shape grid (ONNX's backend test: in the inferred grid, padded)."""
NO_ADAPTER = ["hardmax_axis0@10", "hardmax_axis0@12"]
"""Hardmax-1 and -11 coerce the input to 2-D at ``axis``: no node of theirs computes
Hardmax-13's per-axis function at axis 0 of a [3, 4] input, so the relabelled model is
refused before any run (engine/versions/adapter_table.py), and the case declares it."""


@pytest.mark.parametrize("case", NO_ADAPTER)
def test_a_version_no_node_of_which_computes_the_module_is_a_declared_no_model(versions_run,
                                                                              case):
    failed = {f["case"]: f for f in versions_run["report"]["versions"]["summary"][
        "failed_variants"]}[case]
    assert failed["kind"] == "no model" and failed["declared"], failed
    assert case not in _variants(versions_run) or not _decided(_variants(versions_run)[case])


@pytest.mark.parametrize("case", COPIED)
def test_a_version_only_onnxruntime_runs_in_float32_is_proved_on_its_float32_copy(
        versions_run, case):
    rec = _variants(versions_run)[case]
    failed = {f["case"] for f in versions_run["report"]["versions"]["summary"][
        "failed_variants"]}
    assert case not in failed and rec["status"] in ("proved", "disagree"), rec["status"]
    n, data = rec["numeric"], rec["test_data"]
    assert not runtimes.reference_follows(rec["op"], rec["schema_version"])
    assert (n["runtime"], n["copy"]["dtype"], data["runtime"], data["copy"]) == (
        "onnxruntime", "float32", "onnxruntime", "float32")
    assert n["precision"]["computed"] == "float32" and n["step"] == 1e-3
    assert n["copy"]["op"] == rec["op"] and n["copy"]["version"] == rec["schema_version"]
    assert "float32 copy" in n["precision"]["why"]
    assert n["forward_ok"] and not rec.get("fidelity")      # a run of its version
    # NonZero-9 is decided by type (its output is int64); the others by both witnesses
    decided = _decided(rec)
    assert bool(decided) == (rec["op"] != "NonZero")
    assert all("float32 copy" in p["reason"] for p in decided if p["rule"] == "both witnesses")


@pytest.mark.parametrize("case", ANOTHER_FUNCTION)
def test_a_float32_run_of_another_function_is_a_declared_forward_mismatch(versions_run, case):
    rec = _variants(versions_run)[case]
    failed = {f["case"]: f for f in versions_run["report"]["versions"]["summary"][
        "failed_variants"]}[case]
    assert failed["kind"] == "forward mismatch" and failed["declared"], failed
    assert "onnxruntime's float32 copy" in failed["reason"]
    assert rec["numeric"]["copy"] and rec["numeric"]["forward_ok"] is False
    assert not _decided(rec)
