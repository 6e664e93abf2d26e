"""Every real ONNX docs file reads whole, and a handful of its tags are what its text says.

The expectations are the files' own lines (cited by line number in tests/data/), not the
parser's output: e.g. Changelog.md line 10553 is ``<dt><tt>min</tt> (optional) : T</dt>``
under ``Clip-11``, so Clip's ``min`` is unknown at opsets 11 and 12.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from torch_prover.tags.changelog_md import ChangelogMd
from torch_prover.tags.docs import load
from torch_prover.tags.markdown import MissingFromDocs
from torch_prover.tags.operators_md import OperatorsMd
from torch_prover.tags.schema import schema_tags

DATA = Path(__file__).parent / "data"
CHANGELOG = DATA / "Changelog.md"
D, N, U = "differentiable", "non-differentiable", "unknown"


def _tags(t) -> dict[str, str]:
    return {f.name: f.tag for f in t.inputs + t.outputs}


# file -> op -> (since_version, {parameter: tag}); the line of each "#### Version" text and
# of the <dt> entries is in the comment. Einsum's text holds the inline ```...``` span that
# an older reader took for a code fence (1.8.0 line 4877, 1.10.0 and 1.13.0 likewise).
RELEASES = {
    "releases/Operators-v1.8.0.md": {
        "Einsum": (12, {"Inputs": D, "Output": D}),                      # 4903, 4915, 4922
        "Pad": (13, {"data": D, "pads": N, "constant_value": N, "output": D}),  # 12481-12506
        "Resize": (13, {"X": D, "roi": N, "scales": N, "sizes": N, "Y": D}),    # 15650-15706
        "ScatterElements": (13, {"updates": D}),                          # 17469, 17487
        "Round": (11, {"X": N, "Y": N}),                                  # 16969, 16974
        "Sign": (13, {"input": N, "output": N}),                          # 18277, 18284
        "Clip": (13, {"input": D, "min": N}),                             # 2465, 2472, 2474
    },
    "releases/Operators-v1.10.0.md": {
        "Einsum": (12, {"Inputs": D, "Output": D}),                       # 5335
        "Pad": (13, {"pads": N}), "ScatterElements": (13, {"updates": D}),  # 13250, 18309/18327
        "Round": (11, {"X": N}), "Sign": (13, {"input": N}),              # 17809/17814, 19157/19164
        "Clip": (13, {"min": N}),                                         # 2804, 2813
    },
    "releases/Operators-v1.13.0.md": {
        "Einsum": (12, {"Inputs": D}), "Pad": (18, {"pads": N}),          # 7012, 16907
        "ScatterElements": (18, {"updates": D}), "Round": (11, {"X": N}),  # 23693/23713, 23024
        "Sign": (13, {"input": N}), "Clip": (13, {"min": N}),             # 25257, 3716/3725
    },
    "releases/Operators-v1.16.0.md": {
        "Pad": (21, {"pads": N}), "ScatterElements": (18, {"updates": D}),  # 19573, 27655/27675
        "Round": (11, {"X": N}), "Sign": (13, {"input": N}), "Clip": (13, {"min": N}),
    },
    "releases/Operators-v1.19.0.md": {
        "Pad": (24, {"pads": N}), "Round": (22, {"X": N}),                # 22713, 30786/30793
        "ScatterElements": (18, {"updates": D}), "Sign": (13, {"input": N}),
        "Clip": (13, {"input": D, "min": N}),                             # 6986, 6993, 6995
    },
    "releases/Operators-v1.22.0.md": {
        "Einsum": (12, {"Inputs": D, "Output": D}),                       # 12455-12474
        "Pad": (25, {"data": D, "pads": N, "constant_value": N, "axes": N, "output": D}),
        "Resize": (19, {"X": D, "roi": N, "scales": N, "sizes": N, "Y": D}),    # 29944-30054
        "Round": (22, {"X": N, "Y": N}), "ScatterElements": (18, {"updates": D}),
        "Sign": (13, {"input": N}), "Clip": (13, {"input": D, "min": N}),  # 35310/35317, 7905/7912/7914
    },
    "Operators.md": {
        "Pad": (25, {"pads": N}), "Round": (22, {"X": N}),                # 26304, 34626/34633
        "ScatterElements": (18, {"updates": D}), "Sign": (13, {"input": N}),  # 35352/35372
        "Clip": (13, {"input": D, "min": N}),                             # 9244, 9251, 9253
    },
}


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_operators_md_reads_whole_with_its_tags(name):
    doc = load(DATA / name)
    assert isinstance(doc, OperatorsMd)
    for op, (version, tags) in RELEASES[name].items():
        t = doc.tags(op, 9)   # Operators.md: the documented (latest) version, whatever the opset
        assert t.since_version == version, (name, op)
        assert {k: v for k, v in _tags(t).items() if k in tags} == tags, (name, op)
    # Scatter's section says "deprecated since version 11" and lists no inputs
    with pytest.raises(MissingFromDocs, match="deprecated since version 11"):
        doc.tags("Scatter")
    # ai.onnx.preview.training.Gradient: "<dt><tt>Inputs</tt> (variadic, heterogeneous) : T1</dt>"
    g = doc.tags("Gradient", domain="ai.onnx.preview.training")
    assert (g.inputs[0].name, g.inputs[0].option, g.inputs[0].tag) == ("Inputs", "variadic", U)


@pytest.fixture(scope="module")
def changelog() -> ChangelogMd:
    doc = load(CHANGELOG)
    assert isinstance(doc, ChangelogMd)
    return doc


@pytest.mark.parametrize("op, opset, version, tags", [
    # Clip-11 (line 10538): "min (optional) : T" -- no differentiability word: unknown
    ("Clip", 11, 11, {"input": U, "min": U, "max": U, "output": U}),
    ("Clip", 12, 12, {"min": U}),                                         # Clip-12, 14087
    # Clip-13 (15186): input differentiable, min/max "(optional, non-differentiable)"
    ("Clip", 13, 13, {"input": D, "min": N, "max": N, "output": D}),
    ("Clip", 25, 13, {"min": N}),
    ("Clip", 10, 6, {"input": U}),
    # ScatterElements' updates: untagged at 11 (line 13043), differentiable from 13 (17945),
    # the tag ONNX added to it; every Operators.md release (1.8.0 on) documents 13 or later
    ("ScatterElements", 11, 11, {"data": U, "indices": U, "updates": U, "output": U}),
    ("ScatterElements", 12, 11, {"updates": U}),
    ("ScatterElements", 13, 13, {"data": D, "indices": N, "updates": D, "output": D}),
    ("ScatterElements", 17, 16, {"updates": D}),                          # 20734
    ("ScatterElements", 25, 18, {"updates": D}),                          # 22465
    ("Scatter", 10, 9, {"updates": U}),                                   # Scatter-9, 8965
    # Sign: untagged at 9 (9078), "(non-differentiable)" from 13 (18128, 18135)
    ("Sign", 12, 9, {"input": U, "output": U}),
    ("Sign", 13, 13, {"input": N, "output": N}),
    # Round: non-differentiable in both versions it has (12799/12806, 28035/28042)
    ("Round", 21, 11, {"X": N, "Y": N}),
    ("Round", 22, 22, {"X": N, "Y": N}),
])
def test_changelog_version_in_force(changelog, op, opset, version, tags):
    t = changelog.tags(op, opset)
    assert t.since_version == version
    assert {k: v for k, v in _tags(t).items() if k in tags} == tags


def test_changelog_history_and_edges(changelog):
    # "### <a name="Clip-1">", Clip-6, Clip-11, Clip-12, Clip-13: the headings in the file
    assert changelog.history("Clip") == [1, 6, 11, 12, 13]
    assert changelog.tags("Clip").since_version == 13   # no opset: the latest
    with pytest.raises(MissingFromDocs, match="deprecated since version 11"):
        changelog.tags("Scatter", 11)                    # "Scatter-11 (deprecated)", 12983
    with pytest.raises(MissingFromDocs, match="no version at or below opset 11"):
        changelog.tags("Einsum", 11)                     # Einsum-12 is its first
    # the preview domains: "# ai.onnx.preview" (33377), "# ai.onnx.preview.training" (33466)
    assert changelog.ops("ai.onnx.preview") == ["FlexAttention"]
    adagrad = changelog.tags("Adagrad", 1, "ai.onnx.preview.training")
    assert (adagrad.domain, adagrad.since_version) == ("ai.onnx.preview.training", 1)
    with pytest.raises(MissingFromDocs, match="documented in domain ai.onnx.preview.training"):
        changelog.tags("Adagrad", 1)


def test_changelog_agrees_with_onnx_defs_at_every_version(changelog):
    """Changelog.md and onnx.defs come from the same schemas (gen_doc writes one from the
    other): every documented version reads as onnx.defs gives it, tags, options and types."""
    compared = 0
    for domain in ("", "ai.onnx.preview", "ai.onnx.preview.training"):
        for op in changelog.ops(domain):
            for version in changelog.history(op, domain):
                try:
                    theirs = schema_tags(op, version, domain)
                    ours = changelog.tags(op, version, domain)
                except MissingFromDocs:
                    continue   # deprecated without inputs/outputs
                except LookupError:
                    continue   # an op this onnx build does not register
                if theirs.since_version != version:
                    continue
                compared += 1
                assert ours.since_version == theirs.since_version
                assert ours.inputs == theirs.inputs and ours.outputs == theirs.outputs, (op, version)
    assert compared == 614   # 617 version headings, 3 of them deprecated without inputs


def test_kind_comes_from_content_not_name(tmp_path):
    """A PR branch's file may have any name: Changelog.md saved as Operators.md is still read
    as a Changelog (every version), and the other way round."""
    as_ops = tmp_path / "Operators.md"
    shutil.copy(CHANGELOG, as_ops)
    doc = load(as_ops)
    assert isinstance(doc, ChangelogMd) and doc.tags("Clip", 11).since_version == 11
    as_log = tmp_path / "Changelog.md"
    shutil.copy(DATA / "Operators.md", as_log)
    doc = load(as_log)
    assert isinstance(doc, OperatorsMd) and doc.tags("Clip", 11).since_version == 13


def test_an_older_signature_in_the_docs_is_no_tags_not_a_broken_case(capsys):
    """ONNX 1.8.0 documents ReduceMean-13, whose axes are an attribute (line 17173 of that
    file: one input, ``data``); the catalogue's ReduceMean cases export at opset 25, where
    axes is input 1. Those cases get no tags from the file (reported, exit 0), rather than
    failing as broken; the case whose node has one input is compared as usual."""
    import json
    from torch_prover import cli
    text = (DATA / "releases" / "Operators-v1.8.0.md").read_text()
    section = text[text.index('<a name="ReduceMean">'):]
    section = section[:section.index("#### Outputs")]
    assert "<dt><tt>data</tt>" in section and "axes</tt> (" not in section.split("#### Inputs")[1]
    code = cli.main(["verify-all", "--ops", "ReduceMean", "--no-write", "--jobs", "1",
                     "--format", "json", "--tags-from",
                     str(DATA / "releases" / "Operators-v1.8.0.md")])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    by_case = {r["case"]: r for r in report["cases"]}
    # the catalogue says which cases pass axes: the full reduction does not (its notes)
    assert set(by_case) == {"reducemean_dim1", "reducemean_keepdim", "reducemean_all"}
    for name in ("reducemean_dim1", "reducemean_keepdim"):
        assert by_case[name]["status"] == "no-tags"
        assert "documents ReduceMean-13, which has no input 1" in by_case[name]["error"]
    compared = by_case["reducemean_all"]
    assert compared["status"] not in ("no-tags", "error", "invalid")
    assert compared["schema_version"] == 13


# Scatter-9 (Changelog.md line 8965) and Upsample-9 (9217) document their parameters
# (lines 9013-9024, 9237-9246); Scatter-11 (12983) and Upsample-10 (10314) are their
# deprecation stubs: "(deprecated)" in the heading, no #### Inputs or Outputs.
_TAGGED = {   # the lines ONNX's tensor PR writes (tag words added, nothing else)
    "Scatter-9": {"<dt><tt>data</tt> : T</dt>": "<dt><tt>data</tt> (differentiable) : T</dt>",
                  "<dt><tt>indices</tt> : Tind</dt>":
                      "<dt><tt>indices</tt> (non-differentiable) : Tind</dt>",
                  "<dt><tt>updates</tt> : T</dt>":
                      "<dt><tt>updates</tt> (differentiable) : T</dt>",
                  "<dt><tt>output</tt> : T</dt>": "<dt><tt>output</tt> (differentiable) : T</dt>"},
    "Upsample-9": {"<dt><tt>X</tt> : T</dt>": "<dt><tt>X</tt> (differentiable) : T</dt>",
                   "<dt><tt>Y</tt> : T</dt>": "<dt><tt>Y</tt> (differentiable) : T</dt>"},
}


def tag_deprecated_ops_older_versions(text: str) -> str:
    """Changelog.md ``text`` with Scatter-9's and Upsample-9's parameter lines tagged as
    ``_TAGGED`` says (each line replaced once, inside its own section)."""
    for anchor, lines in _TAGGED.items():
        start = text.index(f'<a name="{anchor}"></a>')
        end = text.index("\n### ", start)
        section = text[start:end]
        for old, new in lines.items():
            assert section.count(old) == 1, (anchor, old)
            section = section.replace(old, new)
        text = text[:start] + section + text[end:]
    return text


def test_a_deprecated_op_keeps_its_older_versions_tags(changelog, tmp_path):
    """The stub of a deprecated op's last version hides none of its older versions: at
    opset 10 Scatter's tags are Scatter-9's, as its section states them (untagged in the
    real file, lines 9013-9024; tagged in a PR's copy); its latest is Scatter-11, named as
    that version, with no documented parameter; at opset 11 there are none to read."""
    for op, opset, version, names in (("Scatter", 10, 9, ["data", "indices", "updates",
                                                           "output"]),
                                      ("Upsample", 9, 9, ["X", "scales", "Y"])):
        assert changelog.tags(op, opset).since_version == version
        assert _tags(changelog.tags(op, opset)) == dict.fromkeys(names, U)
    assert changelog.history("Scatter") == [9, 11]
    assert changelog.history("Upsample") == [1, 7, 9, 10]
    for op, stub in (("Scatter", 11), ("Upsample", 10)):
        latest = changelog.tags(op)
        assert (latest.since_version, latest.inputs, latest.outputs) == (stub, (), ())
        with pytest.raises(MissingFromDocs, match=f"deprecated since version {stub}"):
            changelog.tags(op, stub)
    pr = tmp_path / "Changelog.md"
    pr.write_text(tag_deprecated_ops_older_versions(CHANGELOG.read_text(encoding="utf-8")),
                  encoding="utf-8")
    tagged = load(pr)
    assert _tags(tagged.tags("Scatter", 10)) == {"data": D, "indices": N, "updates": D,
                                                 "output": D}
    assert _tags(tagged.tags("Upsample", 9)) == {"X": D, "scales": U, "Y": D}
    assert tagged.tags("Upsample", 8).since_version == 7    # Upsample-7 (7447) untouched
    assert tagged.tags("Scatter").since_version == 11 and not tagged.tags("Scatter").inputs
