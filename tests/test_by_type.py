"""Ops without a case, decided from their schema's types alone (issue 14).

Every expectation here is read from onnx.defs (the installed schema) or from a copy of
ONNX's real Operators.md, with this file's own reading of the type strings, never from
torch_prover's by-type code: which parameters the types decide, the tag each is judged
against, and so the verdict. The rules (docs/DefineDifferentiability.md): a parameter
none of whose types is a float/complex tensor (or a sequence/optional of one) carries no
gradient; an input of an op none of whose outputs can carry one has no derivative to
be the variable of, and an output of an op none of whose inputs can carry one (and with
no subgraph reading outer tensors) has no Jacobian.
"""
import json
import re
from pathlib import Path

import onnx.defs
import pytest

from torch_prover import cli

CASE_LESS = ("ImageDecoder", "RegexFullMatch", "StringConcat", "StringNormalizer",
             "StringSplit", "TfIdfVectorizer", "NonMaxSuppression")
REAL_DOCS = Path(__file__).parent / "data" / "Operators.md"
CATEGORY = {onnx.defs.OpSchema.DifferentiationCategory.Differentiable: "differentiable",
            onnx.defs.OpSchema.DifferentiationCategory.NonDifferentiable: "non-differentiable",
            onnx.defs.OpSchema.DifferentiationCategory.Unknown: "unknown"}
# tensor(float), tensor(double), tensor(float16), tensor(bfloat16), tensor(complex64/128),
# inside seq(...)/optional(...) too; not float8*/float4* (storage types: no arithmetic)
GRADIENT_TYPE = re.compile(r"tensor\((float|double|float16|bfloat16|complex64|complex128)\)")


def _types(schema, formal):
    allowed = {c.type_param_str: c.allowed_type_strs for c in schema.type_constraints}
    return list(allowed.get(formal.type_str, [formal.type_str]))


def _can_carry(schema, formal) -> bool:
    return any(GRADIENT_TYPE.search(t) for t in _types(schema, formal))


def expected_by_type(op: str) -> dict[tuple[str, int], str]:
    """(io, position) -> schema tag, for every parameter the schema's types decide."""
    s = onnx.defs.get_schema(op)
    graph = any(a.type in (onnx.defs.OpSchema.AttrType.GRAPH, onnx.defs.OpSchema.AttrType.GRAPHS)
                for a in s.attributes.values())
    no_grad_out = bool(s.outputs) and not any(_can_carry(s, f) for f in s.outputs)
    no_grad_in = not any(_can_carry(s, f) for f in s.inputs) and not graph
    out = {}
    for io, formals, whole in (("input", s.inputs, no_grad_out), ("output", s.outputs, no_grad_in)):
        for i, f in enumerate(formals):
            if whole or not _can_carry(s, f):
                out[(io, i)] = CATEGORY[f.differentiation_category]
    return out


def verdict_for(tag: str) -> str:
    """A by-type row supports non-differentiable; judged against the schema's tag."""
    return {"non-differentiable": "agree", "differentiable": "disagree",
            "unknown": "proposed"}[tag]


def _verify_all(capsys, *args) -> tuple[int, dict]:
    code = cli.main(["verify-all", *args, "--no-write", "--no-cache", "--jobs", "1",
                     "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


# ------------------------------------------------------------------ (a) verify-all --ops OP
@pytest.mark.parametrize("op", CASE_LESS)
def test_a_case_less_op_is_decided_by_type_against_the_schema(op, capsys):
    s = onnx.defs.get_schema(op)
    expected = expected_by_type(op)
    every = {("input", i) for i in range(len(s.inputs))} | {("output", i)
                                                            for i in range(len(s.outputs))}
    assert set(expected) == every, "each of these ops is decided whole by its types"
    code, rep = _verify_all(capsys, "--ops", op)
    assert rep["cases"] == []                     # no case ran: the types alone decided
    entry = next(o for o in rep["ops"] if o["op"] == op)
    rows = {(p["io"], p["index"]): p for p in entry["parameters"]}
    assert set(rows) == set(expected)
    names = {("input", i): f.name for i, f in enumerate(s.inputs)}
    names |= {("output", i): f.name for i, f in enumerate(s.outputs)}
    for key, p in rows.items():
        assert p["name"] == names[key]
        assert p["tag"] == expected[key]
        assert p["verdict"] == verdict_for(expected[key])
        assert p["supports"] == "non-differentiable" and p["rule"] == "by type"
    verdicts = [verdict_for(t) for t in expected.values()]
    assert entry["status"] == ("disagrees" if "disagree" in verdicts else "by type")
    by_type = rep["summary"]["by_type"]
    assert by_type["ops"] == (0 if "disagree" in verdicts else 1)
    assert by_type["parameters"] == {v: verdicts.count(v) for v in
                                     ("agree", "disagree", "proposed", "inconclusive")}
    assert code == (1 if "disagree" in verdicts else 0)


def test_nms_float_inputs_are_decided_by_its_int64_output(capsys):
    """NonMaxSuppression's float boxes and scores: its only output is tensor(int64)."""
    s = onnx.defs.get_schema("NonMaxSuppression")
    assert [_types(s, f) for f in s.outputs] == [["tensor(int64)"]]
    assert _can_carry(s, s.inputs[0]) and _can_carry(s, s.inputs[1])
    _, rep = _verify_all(capsys, "--ops", "NonMaxSuppression")
    rows = next(o for o in rep["ops"] if o["op"] == "NonMaxSuppression")["parameters"]
    assert {p["name"] for p in rows} >= {"boxes", "scores"}


def test_text_report_names_the_case_less_op(capsys):
    assert cli.main(["verify-all", "--ops", "StringSplit", "--no-write", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"StringSplit\s+by type", out), out


def test_a_full_run_decides_every_case_less_op_the_types_decide():
    """verify-all without --ops: every ai.onnx op with no catalogue case whose schema's
    types decide a parameter gets its by-type rows (the batch's cases aside)."""
    from torch_prover.batch.summary import batch_report, case_less
    from torch_prover.cases import all_cases
    from torch_prover.output.coverage import coverage
    entries = coverage()
    with_case = {c.op for c in all_cases() if c.domain in ("", "ai.onnx")}
    case_less_ops = {op for op in (e["op"] for e in entries) if op not in with_case}
    decided = case_less(entries, None)
    assert {c["op"] for c in decided} == {op for op in case_less_ops if expected_by_type(op)}
    assert set(CASE_LESS) <= {c["op"] for c in decided}
    for c in decided:
        assert {(p["io"], p["index"]): p["tag"] for p in c["parameters"]} == \
            expected_by_type(c["op"]), c["op"]
    rep = batch_report([], entries, 0.0, case_less_ops=decided)
    status = {o["op"]: o["status"] for o in rep["ops"]}
    for op in case_less_ops:
        s = onnx.defs.get_schema(op)
        whole = len(expected_by_type(op)) == len(s.inputs) + len(s.outputs)
        verdicts = {verdict_for(t) for t in expected_by_type(op).values()}
        assert status[op] == ("disagrees" if "disagree" in verdicts else
                              "by type" if whole else "missing"), op


# ------------------------------------------------------------------ (b) coverage --format json
def test_coverage_json_says_how_every_op_is_decided(capsys):
    assert cli.main(["coverage", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    schemas = {s.name: s for s in onnx.defs.get_all_schemas() if s.domain in ("", "ai.onnx")}
    ops = {s.name for s in onnx.defs.get_all_schemas_with_history()
           if s.domain in ("", "ai.onnx")}
    names = [e["op"] for e in doc["ops"]]
    assert len(names) == len(set(names)) and set(names) == ops
    for e in doc["ops"]:
        assert e["decided"] in ("natural", "reference", "by type", "missing"), e
        assert e["deprecated"] == bool(schemas[e["op"]].deprecated), e["op"]
        if e["decided"] in ("natural", "reference"):
            assert e["status"] == "covered" and e["cases"]
            assert any(c["kind"] == "natural" for c in e["cases"]) == (e["decided"] == "natural")
            continue
        assert "cases" not in e
        # a case-less op: decided by type exactly when the schema's types decide every parameter
        s = schemas[e["op"]]
        whole = len(expected_by_type(e["op"])) == len(s.inputs) + len(s.outputs)
        assert e["decided"] == ("by type" if whole else "missing"), e["op"]
        decided = {(p["io"], p["index"]): p["tag"] for p in e.get("by_type", ())}
        assert decided == expected_by_type(e["op"]), e["op"]
        if e["decided"] == "missing":
            assert e["reason"].strip() and e["reason_category"].strip(), e["op"]
    assert {e["op"] for e in doc["ops"] if e["decided"] == "by type"} >= set(CASE_LESS)
    old = {e["op"] for e in doc["ops"] if e["deprecated"]}
    assert old == {op for op, s in schemas.items() if s.deprecated}
    # deprecated ops are counted apart from the current ones
    d = doc["summary"]["decided"]
    assert d["ops"] == len(ops) - len(old) and d["deprecated"]["ops"] == len(old)
    for group, members in ((d, [e for e in doc["ops"] if not e["deprecated"]]),
                           (d["deprecated"], [e for e in doc["ops"] if e["deprecated"]])):
        for how in ("natural", "reference", "by type", "missing"):
            assert group[how] == sum(e["decided"] == how for e in members)


# ------------------------------------------------------------------ (c) a by-type disagreement
def _flip_string_split_input(tmp_path) -> Path:
    text = REAL_DOCS.read_text(encoding="utf-8")
    start = text.index('### <a name="StringSplit"></a>')
    end = text.index("\n### ", start + 1)
    section = text[start:end]
    line = "<dt><tt>X</tt> (non-differentiable) : T1</dt>"
    assert section.count(line) == 1
    path = tmp_path / "Operators.md"
    path.write_text(text[:start] + section.replace(line, line.replace("(non-", "("))
                    + text[end:], encoding="utf-8")
    return path


def test_a_by_type_disagreement_fails_the_run(tmp_path, capsys):
    docs = _flip_string_split_input(tmp_path)
    code, rep = _verify_all(capsys, "--ops", "StringSplit", "--tags-from", str(docs))
    assert code == 1
    rows = next(o for o in rep["ops"] if o["op"] == "StringSplit")["parameters"]
    assert [(p["io"], p["name"]) for p in rows if p["verdict"] == "disagree"] == [("input", "X")]
    assert rep["summary"]["by_type"]["unwaived_disagreements"] == 1


def test_a_waiver_without_a_case_covers_a_by_type_disagreement(tmp_path, capsys):
    docs = _flip_string_split_input(tmp_path)
    waivers = tmp_path / "waivers.toml"
    waivers.write_text('[[waiver]]\nop = "StringSplit"\nparameter = "X"\n'
                       'reason = "the docs copy flips it on purpose"\n')
    code, rep = _verify_all(capsys, "--ops", "StringSplit", "--tags-from", str(docs),
                            "--waivers", str(waivers))
    assert code == 0
    assert rep["summary"]["by_type"]["disagreements"] == 1
    assert rep["summary"]["by_type"]["unwaived_disagreements"] == 0
    assert rep["summary"]["stale_waivers"] == []
