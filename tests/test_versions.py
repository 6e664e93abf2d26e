"""verify-all --versions: every schema version proved against its own tags.

Expectations come from the math and ONNX's schemas, not from the tool: GridSample's output
is a bilinear interpolation at the grid's coordinates, so it is differentiable in ``grid``
(tagged non-differentiable in 16, 20 and 22); Clip's output is differentiable in ``min``
and ``max`` where they bind (Clip-11 and -12 leave them unknown); Pad's ``constant_value``
is copied into the output (tagged non-differentiable from 13 on); ``Mod``'s remainder
``A - B*floor(A/B)`` (fmod) is differentiable in ``B`` almost everywhere; an RNN's output
is differentiable in its initial hidden state.
"""
import json
import subprocess
import sys

import onnx.defs
import pytest

from torch_prover.batch import versions as v
from torch_prover.cases import find_case

OPS = "Clip,GridSample,Pad,Mod,RNN,Hardmax,Softmax,Resize,Abs"


def _verify(tmp, *extra):
    cp = subprocess.run([sys.executable, "-m", "torch_prover", "verify-all", "--no-write",
                         "--cache-dir", str(tmp / "cache"), "--format", "json", *extra],
                        capture_output=True, text=True, timeout=1800)
    assert cp.returncode in (0, 1), cp.stderr[-2000:]
    return json.loads(cp.stdout), cp.returncode


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    rep, code = _verify(tmp_path_factory.mktemp("versions"), "--ops", OPS, "--versions", "all")
    return rep, code


def _cell(rep, op, version, name, io="input"):
    entry = next(o for o in rep["versions"]["ops"] if o["op"] == op)
    ver = next(e for e in entry["versions"] if e["version"] == version)
    return next((c for c in ver["cells"] if c["io"] == io and c["name"] == name), None), ver


def _tag(op, version, name, io="input"):
    s = onnx.defs.get_schema(op, version, "")
    formals = s.inputs if io == "input" else s.outputs
    cat = next(p for p in formals if p.name == name).differentiation_category
    return {onnx.defs.OpSchema.DifferentiationCategory.Differentiable: "differentiable",
            onnx.defs.OpSchema.DifferentiationCategory.NonDifferentiable: "non-differentiable",
            onnx.defs.OpSchema.DifferentiationCategory.Unknown: "unknown"}[cat]


def test_every_version_of_the_selected_ops_is_listed(table):
    rep, _ = table
    for op in OPS.split(","):
        listed = [e["version"] for o in rep["versions"]["ops"] if o["op"] == op
                  for e in o["versions"]]
        assert listed == [s.version for s in v.schema_versions(op)], op


@pytest.mark.parametrize("version", [11, 12])
@pytest.mark.parametrize("name", ["min", "max"])
def test_clip_11_and_12_bounds_are_proposed_differentiable(table, version, name):
    rep, _ = table
    assert _tag("Clip", version, name) == "unknown"
    cell, ver = _cell(rep, "Clip", version, name)
    assert ver["decided_by"] == "proved"
    assert (cell["verdict"], cell["supports"]) == ("proposed", "differentiable")


@pytest.mark.parametrize("version", [16, 20, 22])
def test_gridsample_grid_disagrees_in_every_version(table, version):
    """GridSample-16 names its modes bilinear/bicubic, which onnx.reference (GridSample-20's
    linear/cubic) refuses, and onnxruntime runs it in float32 only: without a float32 run
    the cell stays open, naming the failed variants -- never an answer from 20."""
    rep, _ = table
    assert _tag("GridSample", version, "grid") == "non-differentiable"
    cell, _ = _cell(rep, "GridSample", version, "grid")
    if version == 16 and cell["verdict"] == "inconclusive":
        assert cell["rule"] == "variant failed" and "gridsample_bilinear@" in cell["reason"]
        return
    assert (cell["verdict"], cell["supports"]) == ("disagree", "differentiable")


def test_pad_constant_value_disagrees_in_every_version_from_13():
    """Pad-13 ... Pad-25: the versions that tag it non-differentiable."""
    versions = [s.version for s in v.schema_versions("Pad") if 13 <= s.version <= 25]
    assert versions == [13, 18, 19, 21, 23, 24, 25]


@pytest.mark.parametrize("version", [13, 18, 19, 21, 23, 24, 25])
def test_pad_constant_value_disagrees(table, version):
    rep, _ = table
    assert _tag("Pad", version, "constant_value") == "non-differentiable"
    cell, _ = _cell(rep, "Pad", version, "constant_value")
    assert (cell["verdict"], cell["supports"]) == ("disagree", "differentiable")


def test_mod_13_b_disagrees(table):
    rep, _ = table
    assert _tag("Mod", 13, "B") == "non-differentiable"
    cell, _ = _cell(rep, "Mod", 13, "B")
    assert (cell["verdict"], cell["supports"]) == ("disagree", "differentiable")


def test_rnn_14_initial_h_disagrees(table):
    rep, _ = table
    assert _tag("RNN", 14, "initial_h") == "non-differentiable"
    cell, _ = _cell(rep, "RNN", 14, "initial_h")
    assert (cell["verdict"], cell["supports"]) == ("disagree", "differentiable")


def test_pad_wrap_is_declared_not_to_prove_the_versions_before_19(table):
    """Pad's wrap mode exists from Pad-19 (Pad-2 ... -18 list constant, reflect, edge):
    pad_wrap's variants there fail, declared (Case.fails_at) and listed with the reason,
    and the versions are proved by the op's other cases (docs/versions.md's example)."""
    from docs_examples import assert_example
    from torch_prover.batch.version_table import _summary
    from torch_prover.output.versions_report import versions_text
    rep, _ = table
    failed = [f for f in rep["versions"]["summary"]["failed_variants"] if f["op"] == "Pad"]
    assert sorted(f["version"] for f in failed) == [2, 11, 13, 18]
    assert all(f["case"].startswith("pad_wrap@") and f["declared"] for f in failed)
    for version in (2, 11, 13, 18):
        assert "wrap" not in onnx.defs.get_schema("Pad", version, "").attributes[
            "mode"].description
        _, ver = _cell(rep, "Pad", version, "data")
        assert ver["decided_by"] == "proved"
    pad = [o for o in rep["versions"]["ops"] if o["op"] == "Pad"]
    summary = {**_summary(pad), "failed_variants": failed, "undeclared_failures": 0}
    text = versions_text({"selection": "all", "summary": summary, "ops": pad})
    shown = text.split("\n\n", 1)[1].splitlines()
    table_lines = [line for line in shown if not line.startswith(("below", "opsets", "failing"))]
    assert_example("versions-table-pad", "\n".join(table_lines).strip() + "\n")


@pytest.mark.parametrize("op", ["Hardmax", "Softmax"])
@pytest.mark.parametrize("version", [1, 11])
def test_hardmax_and_softmax_old_versions_propose_what_13_supports(table, op, version):
    """On the cases' nodes (Softmax over axis 1, Hardmax over the last axis of a 2-D input)
    versions 1 and 11 coerce to 2-D at that axis, which is 13's per-axis function: the
    same support, from a run of the old version. onnxruntime runs Softmax-1/-11 in float64;
    Hardmax-1/-11 it runs in float32 only, and onnx.reference computes Hardmax-13: without
    a float32 run the cell stays open, naming the failed variant, never taking 13's."""
    rep, _ = table
    for io, name in (("input", "input"), ("output", "output")):
        assert _tag(op, version, name, io) == "unknown"
        old, _ = _cell(rep, op, version, name, io)
        new, _ = _cell(rep, op, 13, name, io)
        assert new["supports"] is not None
        if op == "Hardmax" and old["verdict"] == "inconclusive":
            assert old["rule"] == "variant failed" and "hardmax_last@" in old["reason"]
            continue
        assert (old["verdict"], old["supports"]) == ("proposed", new["supports"])


@pytest.mark.parametrize("op,version,absent", [
    ("Clip", 6, "min"),         # attributes in Clip-6, inputs from Clip-11
    ("Pad", 2, "pads"),         # an attribute in Pad-2, an input from Pad-11
])
def test_a_version_whose_signature_differs_has_its_own_verdicts(table, op, version, absent):
    rep, _ = table
    cell, ver = _cell(rep, op, version, absent)
    assert cell is None
    names = {p.name for p in onnx.defs.get_schema(op, version, "").inputs}
    assert absent not in names
    assert ver["decided_by"] == "proved" and ver["cells"]
    data = ver["cells"][0]
    assert data["verdict"] in ("agree", "proposed") and data["supports"] == "differentiable"
    assert all("@" in c for c in data["cases"])   # variants: the cases at an older opset


def test_resize_10_has_its_own_parameters_and_no_answer_from_another_version(table):
    """Resize-10 has X and scales only, and its linear mode is not Resize-11's: its cells
    are its own parameters, each decided by a run of Resize-10 (a variant at opset 10, or a
    case declared there) or naming why none was. scales is decided (issue 33): the
    asymmetric reference case moves it at a fixed output size, under Resize's label."""
    rep, _ = table
    _, ver = _cell(rep, "Resize", 10, "X")
    schema = onnx.defs.get_schema("Resize", 10, "")
    assert [c["name"] for c in ver["cells"]] == [p.name for p in schema.inputs + schema.outputs]
    at_10 = {"resize_linear_scales_10"}
    assert find_case("Resize", "resize_linear_scales_10").opset == 10
    for c in ver["cells"]:
        assert all("@" in case or case in at_10 for case in c["cases"])
        if c["verdict"] == "inconclusive":
            assert c["rule"] in ("variant failed", "not exercised"), c
        else:
            assert c["rule"] not in ("autograd only",), c   # never autograd alone
    scales, _ = _cell(rep, "Resize", 10, "scales")
    assert (scales["verdict"], scales["convention"]) == ("proposed", "shape-setting input")
    assert scales["cases"] == ["resize_linear_scales_10"]


def test_versions_below_opset_7_are_decided_by_a_recorded_equivalence(table):
    """Abs-1 is in force at opsets 1-5 only; Abs-6 is the version at opset 7."""
    rep, _ = table
    cell, ver = _cell(rep, "Abs", 1, "X")
    assert ver["band"] == v.Band.BELOW_RUNTIME.value and ver["decided_by"] == "equivalence"
    assert cell["basis"] == "Abs-6" and cell["rule"] == "same parameter as Abs-6"
    six, _ = _cell(rep, "Abs", 6, "X")
    assert cell["supports"] == six["supports"] == "differentiable"


def test_a_range_selects_the_versions_in_force_there(tmp_path):
    rep, _ = _verify(tmp_path, "--ops", "Clip", "--versions", "11..12")
    listed = [e["version"] for o in rep["versions"]["ops"] for e in o["versions"]]
    assert listed == [11, 12, 13]   # 13: the case's own proof, in force from 13


def test_default_run_has_no_versions_section(tmp_path):
    rep, _ = _verify(tmp_path, "--ops", "Relu", "--no-numeric")
    assert "versions" not in rep


@pytest.mark.parametrize("bad", ["newest", "9..3", "0..5", "1..999", "7-9"])
def test_a_bad_selection_is_one_line_before_any_work(bad, capsys):
    from torch_prover import cli
    assert cli.main(["verify-all", "--ops", "Relu", "--versions", bad, "--no-write"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--versions" in err


def test_route_of_each_band():
    """Which exporter reaches which opset (versions.route), from the exporters' ranges."""
    relu = find_case("Relu")
    by_version = {s.version: s for s in v.schema_versions("Relu")}
    assert v.route(relu, by_version[1]) is v.Gap.BELOW_RUNTIME
    assert v.route(relu, by_version[6]) == v.Route(12, "torchscript")   # 6..12
    assert relu.opsets is None and v.covers(relu, by_version[14])


def test_shards_merged_equal_one_run(tmp_path):
    from torch_prover.output.coverage import coverage
    by_type = next(e["op"] for e in coverage() if e["status"] == "by type")
    ops = f"Clip,Relu,Abs,{by_type}"
    whole, code = _verify(tmp_path / "whole", "--ops", ops, "--versions", "all",
                          "--no-numeric")
    paths = []
    for k in (1, 2, 3):
        part, _ = _verify(tmp_path / f"s{k}", "--ops", ops, "--versions", "all",
                          "--no-numeric", "--shard", f"{k}/3")
        assert part["shard"]["index"] == k
        path = tmp_path / f"s{k}.json"
        path.write_text(json.dumps(part))
        paths.append(str(path))
    cp = subprocess.run([sys.executable, "-m", "torch_prover", "merge", *paths, "--format",
                         "json"], capture_output=True, text=True, timeout=600)
    merged = json.loads(cp.stdout)
    assert cp.returncode == code
    for rep in (whole, merged):
        rep["summary"].pop("wall_time_s")
        rep["summary"].pop("cache_hits")
    assert merged == whole


def test_merge_refuses_an_incomplete_set(tmp_path, capsys):
    from torch_prover import cli
    part, _ = _verify(tmp_path, "--ops", "Relu", "--no-numeric", "--shard", "1/2")
    path = tmp_path / "s1.json"
    path.write_text(json.dumps(part))
    assert cli.main(["merge", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "1..2" in err


# ----------------------------------------------------------------------------- pure parts
def _rec(op, case, version, params, variant_of=None):
    return {"op": op, "domain": "", "case": case, "schema_version": version, "status": "proved",
            "parameters": params, **({"variant_of": variant_of} if variant_of else {})}


def _p(io, index, name, tag, verdict, supports, rule="both witnesses"):
    return {"io": io, "index": index, "name": name, "tag": tag, "verdict": verdict,
            "supports": supports, "rule": rule, "reason": "r"}


def test_cases_supporting_different_tags_leave_the_cell_inconclusive_and_failing():
    from torch_prover.batch.version_table import table
    recs = [_rec("Abs", "a@12", 6, [_p("input", 0, "X", "unknown", "proposed",
                                       "differentiable")], "a"),
            _rec("Abs", "b@12", 6, [_p("input", 0, "X", "unknown", "proposed",
                                       "non-differentiable")], "b")]
    section = table(recs, [], v.Selection("range", 6, 12), ["Abs"])
    cell = next(c for o in section["ops"] for e in o["versions"] if e["version"] == 6
                for c in e["cells"] if c["name"] == "X")
    assert (cell["verdict"], cell["rule"], cell["failing"]) == ("inconclusive",
                                                                "cases conflict", True)


def test_equivalence_judges_the_old_version_against_its_own_tag():
    """Abs-1 (tag unknown) takes Abs-6's support, and is judged against its own tag."""
    from torch_prover.batch.version_table import table
    recs = [_rec("Abs", "a@12", 6, [_p("input", 0, "X", "unknown", "proposed",
                                       "differentiable"),
                                    _p("output", 0, "Y", "unknown", "proposed",
                                       "differentiable")], "a")]
    section = table(recs, [], v.Selection("all"), ["Abs"])
    one = next(e for o in section["ops"] for e in o["versions"] if e["version"] == 1)
    assert one["decided_by"] == "equivalence" and one["basis"] == "Abs-6"
    assert {(c["name"], c["verdict"], c["supports"]) for c in one["cells"]} == {
        ("X", "proposed", "differentiable"), ("Y", "proposed", "differentiable")}
    assert _tag("Abs", 1, "X") == "unknown"


def test_a_parameter_whose_types_differ_is_not_equivalent():
    """Split-1's 'split' input does not exist in Split-2 (an attribute there)."""
    from torch_prover.batch.version_table import _same_parameter
    from torch_prover.tags.schema import schema_tags
    one, two = schema_tags("Split", 1), schema_tags("Split", 2)
    assert _same_parameter(one.inputs[0], two.inputs[0])
    assert len(one.inputs) == 2 and len(two.inputs) == 1


def test_a_pr_text_past_githubs_limit_keeps_a_summary_and_names_the_evidence_file():
    from torch_prover.fix import pr_text
    from torch_prover.fix.locate import CallSite
    from torch_prover.fix.plan import CaseVerdict, Edit, Finding, Plan
    from torch_prover.vocab import Tag, Verdict
    edits = []
    for i in range(400):
        verdict = Verdict.DISAGREE if i % 3 == 0 else Verdict.PROPOSED
        f = Finding(f"Op{i:03d}", "", 13, "input", 0, "X",
                    Tag.NONDIFF if verdict is Verdict.DISAGREE else Tag.UNKNOWN,
                    (CaseVerdict("c", verdict, Tag.DIFF, ("grad", "x" * 80),
                                 ("smooth", "y" * 80), "both witnesses", "why"),))
        site = CallSite(f"onnx/defs/f{i}.cc", i, i)
        edits.append(Edit(site, Tag.DIFF, (f,), ((f.op, 13, "input", 0),), None))
    plan = Plan(tuple(edits), (), (), tuple(e.findings[0] for e in edits))
    body, extra = pr_text.pr_texts(plan, "fix.patch", "fix-evidence.md")
    assert len(body) <= pr_text.PR_BODY_LIMIT and extra is not None
    assert "fix-evidence.md" in body and "65,536" in body
    assert body.index("| correction |") < body.index("| proposal |")
    assert extra.index("## Corrections") < extra.index("## Proposals")
    assert extra.count("reproduce: `torch-prover prove") == 400
    small = Plan(tuple(edits[:3]), (), (), tuple(e.findings[0] for e in edits[:3]))
    body, extra = pr_text.pr_texts(small, "fix.patch", "fix-evidence.md")
    assert extra is None and "fix-evidence.md" not in body
