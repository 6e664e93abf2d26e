"""operators_md reads the tags ONNX's generated Operators.md documents.

The real file (onnx 1.23 docs) must agree with onnx.defs; random edits to its
annotations must show up as exactly those tag changes and nothing else.
"""
from __future__ import annotations

import hashlib

import random
import re
from pathlib import Path

import pytest

from torch_prover.tags.operators_md import MissingFromDocs, OperatorsMd, OperatorsMdError
from torch_prover.tags.schema import UnknownOpError, schema_tags

REAL = Path(__file__).parent / "data" / "Operators.md"
pytestmark = pytest.mark.skipif(not REAL.exists(), reason=f"{REAL} not available")

ANNOTATED = re.compile(r"^<dt><tt>([^<]+)</tt> \(([^)]*\b(?:non-)?differentiable)\)")


@pytest.fixture(scope="module")
def doc() -> OperatorsMd:
    return OperatorsMd.from_file(REAL)


def _key(tags):
    return [(f.io, f.position, f.name, f.option, f.tag) for f in tags.inputs + tags.outputs]


def _all_tags(doc: OperatorsMd) -> dict:
    out = {}
    for domain in ("", "ai.onnx.preview", "ai.onnx.preview.training"):
        for op in doc.ops(domain):
            try:
                t = doc.tags(op, domain=domain)
            except MissingFromDocs:  # deprecated ops document no inputs/outputs
                continue
            for f in t.inputs + t.outputs:
                out[(domain, op, f.io, f.position)] = f
    return out


def test_real_file_agrees_with_onnx_defs(doc):
    """Doc tags vs onnx.defs's latest schema. Found on onnx 1.23.2: all 201 ops with
    documented parameters agree on every tag (Scatter, Upsample: deprecated, no parameters)."""
    same, mismatches = [], []
    for op in doc.ops():
        try:
            documented = doc.tags(op)
        except MissingFromDocs:
            continue
        (same if _key(documented) == _key(schema_tags(op)) else mismatches).append(op)
    assert len(same) >= 150, f"{len(same)} ops agree; mismatches: {mismatches}"
    assert mismatches == [], f"tags differ from onnx.defs for {mismatches}"


def test_documented_version_matches_onnx_defs_at_that_version(doc):
    """The docs can lag the installed onnx: on onnx 1.23.2, 17 ops (BitShift, Cast, Compress,
    DepthToSpace, DequantizeLinear, Einsum, Mod, OneHot, Optional, OptionalGetElement,
    OptionalHasElement, QuantizeLinear, ReduceLogSum, ReduceLogSumExp, ReverseSequence,
    SpaceToDepth, Unique) have a newer schema (28) than the one documented. At the documented
    version, names, options, tags and types all match."""
    for op in doc.ops():
        try:
            documented = doc.tags(op)
        except MissingFromDocs:
            continue
        at_version = schema_tags(op, documented.since_version)
        assert at_version.since_version == documented.since_version, op
        assert documented.inputs == at_version.inputs and documented.outputs == at_version.outputs, op


def test_real_file_shape(doc):
    assert "Reshape" in doc.ops() and "Adam" not in doc.ops()
    assert doc.ops("ai.onnx.preview.training") == ["Adagrad", "Adam", "Gradient", "Momentum"]
    digest = hashlib.sha256(REAL.read_text(encoding="utf-8").encode()).hexdigest()[:16]
    assert doc.source == f"Operators.md (Operators.md, sha256 {digest})"   # no machine path
    t = doc.tags("TopK", 25)
    assert t.source == doc.source and t.since_version == 24 and t.domain == ""
    assert [(f.name, f.tag) for f in t.inputs] == [("X", "differentiable"), ("K", "non-differentiable")]
    assert t.inputs[1].types == ("tensor(int64)",) and t.inputs[1].non_differentiable_by_type
    assert t.inputs[0].types == tuple(sorted(schema_tags("TopK", 24).inputs[0].types))
    concat = doc.tags("Concat")
    assert concat.inputs[0].option == "variadic" and concat.formal("input", 5).name == "inputs"
    conv = doc.tags("Conv")
    assert conv.inputs[2].option == "optional" and conv.inputs[2].tag == "differentiable"
    loop = doc.tags("Loop")  # heterogeneous variadic, no tag
    assert loop.inputs[-1].option == "variadic" and loop.inputs[-1].tag == "unknown"
    adam = doc.tags("Adam", domain="ai.onnx.preview.training")
    assert adam.domain == "ai.onnx.preview.training" and adam.since_version == 1
    assert doc.tags("Abs", domain="ai.onnx") == doc.tags("Abs")


def test_missing_ops_and_parameters(doc):
    with pytest.raises(MissingFromDocs, match="did you mean Reshape"):
        doc.tags("Reshap")
    with pytest.raises(UnknownOpError, match="ai.onnx.preview.training"):
        doc.tags("Adam")
    with pytest.raises(MissingFromDocs, match="deprecated"):
        doc.tags("Scatter")
    assert doc.missing_parameters("Reshape") == []
    assert doc.missing_parameters("Scatter") == [
        "input 0 (data)", "input 1 (indices)", "input 2 (updates)", "output 0 (output)"]


def _flip(marks: str) -> str:
    return re.sub(r"\b(non-)?differentiable$",
                  lambda m: "differentiable" if m.group(1) else "non-differentiable", marks)


def _owner(lines: list[str], i: int) -> tuple[str, str, str]:
    """(domain, op, io) of the <dt> at line index i, read backwards from the headings."""
    io = op = domain = None
    for j in range(i, -1, -1):
        ln = lines[j]
        if io is None and ln.startswith("#### "):
            io = "input" if ln.startswith("#### Inputs") else "output"
        elif op is None and ln.startswith("### "):
            op = re.search(r"\*\*([^*]+)\*\*", ln).group(1)
        elif ln.startswith("## "):
            domain = ln[3:].split(" (")[0]
            break
    domain = "" if domain == "ai.onnx" else domain
    return domain, op.removeprefix(domain + ".") if domain else op, io


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_flips_change_exactly_those_tags(doc, tmp_path, seed):
    lines = REAL.read_text(encoding="utf-8").splitlines(keepends=True)
    candidates = [i for i, ln in enumerate(lines) if ANNOTATED.match(ln)]
    assert len(candidates) > 400
    flipped = random.Random(seed).sample(candidates, 40)
    expected = {}
    for i in flipped:
        m = ANNOTATED.match(lines[i])
        lines[i] = lines[i].replace(f"({m.group(2)})", f"({_flip(m.group(2))})", 1)
        was_nondiff = m.group(2).endswith("non-differentiable")
        expected[(*_owner(lines, i), m.group(1))] = ("differentiable" if was_nondiff
                                                     else "non-differentiable")
    path = tmp_path / "Operators.md"
    path.write_text("".join(lines), encoding="utf-8")

    before, after = _all_tags(doc), _all_tags(OperatorsMd.from_file(path))
    assert before.keys() == after.keys()
    changed = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
    got = {(dom, op, io, a.name): a.tag for (dom, op, io, _), (b, a) in changed.items()}
    assert got == expected
    for b, a in changed.values():  # only the tag moved
        assert (b.name, b.option, b.types, b.position) == (a.name, a.option, a.types, a.position)
        assert {b.tag, a.tag} == {"differentiable", "non-differentiable"}


def _edit_in_section(text: str, op: str, old: str, new: str) -> str:
    start = text.index(f'### <a name="{op}"></a>')
    at = text.index(old, start)
    return text[:at] + new + text[at + len(old):]


def test_removed_annotation_reads_unknown(doc, tmp_path):
    text = REAL.read_text(encoding="utf-8")
    text = _edit_in_section(text, "Reshape", "<dt><tt>data</tt> (differentiable) : T</dt>",
                            "<dt><tt>data</tt> : T</dt>")
    text = _edit_in_section(text, "Conv", "<dt><tt>B</tt> (optional, differentiable) : T</dt>",
                            "<dt><tt>B</tt> (optional) : T</dt>")
    path = tmp_path / "Operators.md"
    path.write_text(text, encoding="utf-8")
    edited = OperatorsMd.from_file(path)
    data = edited.tags("Reshape").inputs[0]
    assert (data.name, data.option, data.tag) == ("data", "single", "unknown")
    b = edited.tags("Conv").inputs[2]
    assert (b.name, b.option, b.tag) == ("B", "optional", "unknown")
    before, after = _all_tags(doc), _all_tags(edited)
    assert {k for k in before if before[k] != after[k]} == {
        ("", "Reshape", "input", 0), ("", "Conv", "input", 2)}


def _one_line_error(path: Path) -> str:
    with pytest.raises(OperatorsMdError) as info:
        OperatorsMd.from_file(path)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"{path}:"), msg
    return msg


@pytest.mark.parametrize("fraction", [0.001, 0.003, 0.2, 0.5, 0.77, 0.985, 0.9995])
def test_truncated_file_is_an_error(tmp_path, fraction):
    text = REAL.read_text(encoding="utf-8")
    path = tmp_path / "Operators.md"
    path.write_text(text[:int(len(text) * fraction)], encoding="utf-8")
    _one_line_error(path)


@pytest.mark.parametrize("content", [
    b"", b"\x00\xff\xfe\x89PNG garbage", b"# README\n\nhello\n",
    b"<!DOCTYPE html><html><body>Operators</body></html>\n", b"## Operator Schemas\n"])
def test_garbage_file_is_an_error(tmp_path, content):
    path = tmp_path / "Operators.md"
    path.write_bytes(content)
    assert "not an Operators.md" in _one_line_error(path)


def test_malformed_entry_names_the_line(tmp_path):
    lines = REAL.read_text(encoding="utf-8").splitlines(keepends=True)
    i = next(i for i, ln in enumerate(lines) if ln.startswith("<dt><tt>X</tt> (differentiable)"))
    lines[i] = lines[i].replace("(differentiable)", "(differentiabel)")
    path = tmp_path / "Operators.md"
    path.write_text("".join(lines), encoding="utf-8")
    assert f":{i + 1}:" in _one_line_error(path)


def test_missing_file_is_an_error(tmp_path):
    _one_line_error(tmp_path / "nope.md")


def test_ml_domain_is_not_ai_onnx(tmp_path):
    """An ai.onnx.ml section with an ai.onnx op's name must not shadow the ai.onnx op."""
    ml = ("\n## ai.onnx.ml\n"
          '### <a name="ai.onnx.ml.Abs"></a><a name="ai.onnx.ml.abs">**ai.onnx.ml.Abs**</a>\n\n'
          "#### Version\n\nThis version of the operator has been available since version 3 "
          "of the 'ai.onnx.ml' operator set.\n\n#### Inputs\n\n<dl>\n"
          "<dt><tt>X</tt> (non-differentiable) : T</dt>\n<dd>x</dd>\n</dl>\n\n#### Outputs\n\n"
          "<dl>\n<dt><tt>Y</tt> : tensor(int64)</dt>\n<dd>y</dd>\n</dl>\n\n"
          "#### Type Constraints\n\n<dl>\n<dt><tt>T</tt> : tensor(float), tensor(double)</dt>\n"
          "<dd>t</dd>\n</dl>\n")
    path = tmp_path / "Operators.md"
    path.write_text(REAL.read_text(encoding="utf-8") + ml, encoding="utf-8")
    doc = OperatorsMd.from_file(path)
    assert doc.ops("ai.onnx.ml") == ["Abs"]
    assert doc.tags("Abs").inputs[0].tag == "differentiable"
    t = doc.tags("Abs", domain="ai.onnx.ml")
    assert (t.since_version, t.inputs[0].tag, t.outputs[0].tag) == (3, "non-differentiable", "unknown")
    assert t.inputs[0].types == ("tensor(double)", "tensor(float)")


def test_prove_case_accepts_doc_tags(doc):
    from torch_prover.cases import all_cases
    from torch_prover.engine.prove import prove_case
    case = next(c for c in all_cases() if c.name == "reshape_basic")
    rec = prove_case(case, numeric=False, tags=doc.tags, tag_source=doc.source).record()
    assert rec["tags_from"] == doc.source
    assert [p["tag"] for p in rec["parameters"]] == ["differentiable", "non-differentiable",
                                                     "differentiable"]
    assert {p["verdict"] for p in rec["parameters"]} == {"agree"}
