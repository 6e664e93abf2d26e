"""fix-tags on the other domains: ai.onnx.ml (onnx/defs/traditionalml/),
ai.onnx.preview.training (onnx/defs/training/) and ai.onnx.preview (onnx/defs/preview/), from their decided cells, through the same
plan and patch as ai.onnx's.

The sources are ONNX's own files, byte for byte (tests/data/onnx-src-domains, gzipped;
tests/data/README.md). The expected tag of each parameter comes from outside the code
under test: the math each reference case declares (``test_domain_cases.MATH``), and for a
parameter no case decides, the schema's types (no float tensor type among the parameter's,
or among every parameter's on the other side of the op: non-differentiable).
"""
from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import onnx.defs
import pytest
from test_domain_cases import MATH

from torch_prover.cases.other_domains import DOMAIN_CASES
from torch_prover.fix import patch
from torch_prover.fix.locate import TAG_ARG, TAG_TEXT, read_tree
from torch_prover.fix.plan import findings, plan, report_records
from torch_prover.fix.settled import domain_report
from torch_prover.vocab import Tag

FIXTURE = Path(__file__).parent / "data" / "onnx-src-domains"
MODELS = Path(__file__).resolve().parents[1] / "models"
FLOATS = ("tensor(float", "tensor(double", "tensor(bfloat16")


def _sources(tmp: Path) -> Path:
    """A checkout root holding onnx/defs/traditionalml/{defs,old}.cc, training/defs.cc and
    preview/defs.cc."""
    root = tmp / "onnx-src"
    for gz in FIXTURE.rglob("*.cc.gz"):
        out = root / gz.relative_to(FIXTURE).with_suffix("")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(gzip.decompress(gz.read_bytes()))
    return root


def _records(domain: str) -> list[dict]:
    """The committed proof records of the domain's reference cases (models/)."""
    return [json.loads((MODELS / c.op / c.name / "proof.json").read_text(encoding="utf-8"))
            for c in DOMAIN_CASES if c.domain == domain]


def _floating(types) -> bool:
    return any(t.startswith(FLOATS) for t in types)


def _expected(domain: str) -> dict[tuple[str, int, str, int], str]:
    """(op, version, io, index) -> the tag every decided parameter must read after the
    patch: the case's declared math where a case of that op decides it, else by type (none
    of its types floating, or none of the other side's: an input of an op with no float
    output, an output of one with no float input). The versions no case can
    run (TreeEnsemble*-5, Gradient-1) keep what they have for the parameters neither
    decides."""
    ran = {(r["op"], r["schema_version"]) for r in _records(domain)}
    out = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain != domain:
            continue
        types = {c.type_param_str: c.allowed_type_strs for c in s.type_constraints}
        floats = {io: any(_floating(types.get(p.type_str, [p.type_str])) for p in formals)
                  for io, formals in (("input", s.inputs), ("output", s.outputs))}
        for io, formals in (("input", s.inputs), ("output", s.outputs)):
            for i, p in enumerate(formals):
                math = MATH.get(s.name, {}).get(p.name)
                own = types.get(p.type_str, [p.type_str])
                if (s.name, s.since_version) in ran and math is not None:
                    out[(s.name, s.since_version, io, i)] = math[0]
                elif not _floating(own) or not floats["output" if io == "input" else "input"]:
                    out[(s.name, s.since_version, io, i)] = "non-differentiable"
    return out


def _tags(tree) -> dict[tuple[str, int, str, int], str]:
    return {(b.op, b.version, d.io, d.index): d.tag.value for b in tree.blocks
            for d in b.declarations if d.tag is not None}


@pytest.mark.parametrize("domain,decided", [("ai.onnx.ml", 52),
                                            ("ai.onnx.preview.training", 12),
                                            ("ai.onnx.preview", 4)])
def test_the_patched_sources_say_every_decided_cell(domain, decided, tmp_path):
    """Every decided cell of the domain is edited (none withheld or unlocated), the patch
    passes fix-tags' own check (git apply on a copy, every schema re-read), and the patched
    sources' tags are the math's and the types' -- no other tag changes."""
    root = _sources(tmp_path)
    tree = read_tree(root)
    assert not tree.errors
    records = report_records(domain_report({"cases": _records(domain)}, domain))
    found = findings(records)
    the_plan = plan(tree, found)
    assert not the_plan.unlocated and not the_plan.withheld
    want = _expected(domain)
    assert len(want) == decided
    edited = {(op, v, io, i) for e in the_plan.edits for op, v, io, i in e.users}
    assert edited == set(want)
    diff = patch.unified_diff(patch.edited_texts(tree, the_plan.edits))
    patch.check(tree, the_plan.edits, diff)
    copy = tmp_path / "applied"
    shutil.copytree(root, copy)
    (tmp_path / "fix.patch").write_text(diff, encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=copy, check=True)
    subprocess.run(["git", "apply", "../fix.patch"], cwd=copy, check=True)
    patched = read_tree(copy)
    before, after = _tags(tree), _tags(patched)
    assert {k: after[k] for k in want} == want
    assert {k: v for k, v in after.items() if k not in want} == \
        {k: v for k, v in before.items() if k not in want}
    # each edited call is well formed: ONNX's OpSchema::Input/Output signature (n, name,
    # description, type, param_option, is_homogeneous, min_arity, differentiation_category)
    # and ONNX's 120-column layout (patch.COLUMNS) on every line the patch adds
    for b in patched.blocks:
        for d in b.declarations:
            if (b.op, b.version, d.io, d.index) not in want:
                continue
            f = patched.files[d.site.path]
            args = [f.source(a) for a in f.arguments(d.site.token + 1)]
            assert len(args) == TAG_ARG + 1
            assert args[4] in ("OpSchema::Single", "OpSchema::Optional", "OpSchema::Variadic")
            assert args[5] in ("true", "false") and args[6].isdigit()
            assert args[TAG_ARG] == TAG_TEXT[Tag(want[(b.op, b.version, d.io, d.index)])]
    added = [line[1:] for line in diff.splitlines()
             if line.startswith("+") and not line.startswith("+++")]
    assert added and max(len(line) for line in added) <= patch.COLUMNS


def test_fix_tags_domain_from_a_verify_all_domain_report(tmp_path, capsys):
    """The command end to end: verify-all --domain ai.onnx.preview.training writes a
    report naming its domain, fix-tags --domain reads it back (re-checked as any report)
    and writes a patch whose hunks set the optimizers' R, inputs and outputs
    differentiable and T non-differentiable; the same report with another domain, or
    --pr-dir, is one line and exit 2."""
    from torch_prover.cli import main
    report = tmp_path / "training.json"
    assert main(["verify-all", "--domain", "ai.onnx.preview.training", "--no-write", "-q",
                 "--format", "json", "--report", str(report), "--jobs", "1",
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    assert json.loads(report.read_text())["provenance"]["request"]["domain"] == \
        "ai.onnx.preview.training"
    root = _sources(tmp_path)
    out = tmp_path / "fix.patch"
    capsys.readouterr()
    assert main(["fix-tags", "--onnx-src", str(root), "--domain", "ai.onnx.preview.training",
                 "--report", str(report), "-o", str(out)]) == 0
    assert "12 call sites edited" in capsys.readouterr().out
    text = out.read_text()
    assert "onnx/defs/training/defs.cc" in text and "traditionalml" not in text
    assert "preview/defs.cc" not in text
    for argv, says in (
            (["--domain", "ai.onnx.ml", "-o", str(tmp_path / "x.patch")],
             "--domain ai.onnx.ml: the report has no proved case of that domain"),
            (["--domain", "ai.onnx.ml", "--pr-dir", str(tmp_path / "prs")],
             "--pr-dir regenerates ai.onnx's"),
            (["--domain", "ai.onnx.nope", "-o", str(tmp_path / "x.patch")],
             "--domain ai.onnx.nope: no cases in that domain")):
        assert main(["fix-tags", "--onnx-src", str(root), "--report", str(report),
                     *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert says in err and "\n" not in err
    assert not (tmp_path / "x.patch").exists() and not (tmp_path / "prs").exists()


def test_a_domain_report_judged_against_ml_docs_is_read_back(tmp_path, capsys):
    """verify-all --domain ai.onnx.ml --tags-from Changelog-ml.md (the domain's docs, which
    an ai.onnx run refuses): its report carries that text and fix-tags re-checks every
    record against it; Binarizer-1's X and Y are then edited non-differentiable (a step)."""
    from torch_prover.cli import main
    report = tmp_path / "ml.json"
    assert main(["verify-all", "--domain", "ai.onnx.ml", "--ops", "Binarizer", "--no-write",
                 "-q", "--tags-from", str(Path(__file__).parent / "data" / "Changelog-ml.md"),
                 "--format", "json", "--report", str(report), "--jobs", "1",
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    assert json.loads(report.read_text())["provenance"]["tags"]["path"].endswith(
        "Changelog-ml.md")
    out = tmp_path / "fix.patch"
    capsys.readouterr()
    assert main(["fix-tags", "--onnx-src", str(_sources(tmp_path)), "--domain", "ai.onnx.ml",
                 "--report", str(report), "-o", str(out), "--format", "json"]) == 0
    copy = tmp_path / "applied"
    shutil.copytree(tmp_path / "onnx-src", copy)
    subprocess.run(["git", "init", "-q"], cwd=copy, check=True)
    subprocess.run(["git", "apply", str(out)], cwd=copy, check=True)
    after = _tags(read_tree(copy))
    assert [after[("Binarizer", 1, io, 0)] for io in ("input", "output")] == \
        [MATH["Binarizer"]["X"][0]] * 2
