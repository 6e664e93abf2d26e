"""fix-tags' docs edit (fix/docs_edit.py) against gen_doc itself: tags flipped in a copy of the
installed onnx's schemas, gen_doc run on that copy, and the tool's edit of the unflipped docs
must equal gen_doc's output byte for byte. The expectation is gen_doc's (ONNX's own
generator), the flips are declared here; nothing is derived from the code under test."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import defs

from tests.gate_fixture import generate_docs
from torch_prover.fix.docs_edit import FILES, DocsMismatch, edited_docs, line_diff, retagged
from torch_prover.vocab import Tag

RUNNER = '''
import json, runpy, sys
from onnx import defs
flips = {(f[0], f[1], f[2], f[3]): f[4] for f in json.load(open(sys.argv[1]))}
CAT = {"differentiable": defs.OpSchema.DifferentiationCategory.Differentiable,
       "non-differentiable": defs.OpSchema.DifferentiationCategory.NonDifferentiable}
class Param:
    def __init__(self, p, cat): self._p, self.differentiation_category = p, cat
    def __getattr__(self, name): return getattr(self._p, name)
class Schema:
    def __init__(self, s): self._s = s
    def __getattr__(self, name): return getattr(self._s, name)
    def _io(self, io, params):
        return [Param(p, CAT[flips[(self._s.name, self._s.since_version, io, i)]])
                if (self._s.name, self._s.since_version, io, i) in flips else p
                for i, p in enumerate(params)]
    inputs = property(lambda self: self._io("input", self._s.inputs))
    outputs = property(lambda self: self._io("output", self._s.outputs))
real = defs.get_all_schemas_with_history
defs.get_all_schemas_with_history = lambda: [Schema(s) if s.domain == "" else s for s in real()]
runpy.run_path(sys.argv[2], run_name="__main__")
'''

# (op, schema version, io, index, new tag): an old version and a latest one, a shared
# version, an optional and a variadic parameter, an output, a tag added where there was none
FLIPS = [("Abs", 13, "input", 0, "non-differentiable"),
         ("Abs", 6, "output", 0, "non-differentiable"),
         ("Concat", 13, "input", 0, "non-differentiable"),
         ("Clip", 13, "input", 1, "non-differentiable"),
         ("Gemm", 13, "input", 2, "non-differentiable"),
         ("Add", 7, "input", 1, "non-differentiable")]


def _untagged() -> tuple:
    """A parameter of the installed onnx with no tag (unknown), to be tagged differentiable."""
    for s in defs.get_all_schemas_with_history():
        if s.domain == "":
            for i, p in enumerate(s.inputs):
                if p.differentiation_category == defs.OpSchema.DifferentiationCategory.Unknown:
                    return (s.name, s.since_version, "input", i, "differentiable")
    raise AssertionError("every parameter of the installed onnx is tagged")


def _tag(p) -> Tag | None:
    cat = defs.OpSchema.DifferentiationCategory
    return {cat.Differentiable: Tag.DIFF, cat.NonDifferentiable: Tag.NONDIFF}.get(
        p.differentiation_category)


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return generate_docs(tmp_path_factory.mktemp("base"))


def _gen_doc_with(flips: list, root: Path) -> Path:
    """gen_doc's docs of the installed schemas with ``flips`` applied to a copy of them."""
    here = root / "onnx" / "defs"
    here.mkdir(parents=True)
    shutil.copyfile(Path(onnx.__file__).parent / "defs" / "gen_doc.py", here / "gen_doc.py")
    (root / "docs").mkdir()
    (root / "flips.json").write_text(json.dumps(flips))
    (root / "runner.py").write_text(RUNNER)
    subprocess.run([sys.executable, "-W", "ignore", "runner.py", "flips.json",
                    str(here / "gen_doc.py")], cwd=root, check=True, capture_output=True)
    return root / "docs"


def test_edited_docs_equal_gen_docs_of_the_flipped_schemas(base, tmp_path):
    flips = FLIPS + [_untagged()]
    changes: dict = {}
    for op, version, io, index, tag in flips:
        schema = defs.get_schema(op, version, "")
        assert schema.since_version == version, f"{op}-{version} is not a schema version"
        p = (schema.inputs if io == "input" else schema.outputs)[index]
        changes.setdefault((op, "", version), {})[(io, index)] = (p.name, _tag(p), Tag(tag))
    want = _gen_doc_with(flips, tmp_path / "flipped")
    docs = {n: (base / n).read_text(encoding="utf-8") for n in FILES}
    got = edited_docs(docs, changes)
    for name in FILES:
        expected = (want / name).read_text(encoding="utf-8")
        assert expected != docs[name], f"the flips change nothing in {name}"
        assert got[name] == expected, name


def test_the_diff_applies_and_gives_the_edited_file(base, tmp_path):
    old = (base / "Changelog.md").read_text(encoding="utf-8")
    name = "Abs-13"
    changes = {("Abs", "", 13): {("input", 0): ("X", Tag.DIFF, Tag.NONDIFF)},
               ("Abs", "", 6): {("output", 0): ("Y", None, Tag.NONDIFF)}}   # untagged at 6
    new = edited_docs({"Changelog.md": old, "Operators.md": (base / "Operators.md").read_text(
        encoding="utf-8")}, changes)["Changelog.md"]
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "Changelog.md").write_text(old, encoding="utf-8")
    (tmp_path / "d.patch").write_text(line_diff("docs/Changelog.md", old, new))
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "apply", "../d.patch"], cwd=repo, check=True)
    assert (repo / "docs" / "Changelog.md").read_text(encoding="utf-8") == new
    assert new.count("(non-differentiable) : T") - old.count("(non-differentiable) : T") == 2, name


def test_docs_not_of_the_sources_are_refused(base):
    docs = {n: (base / n).read_text(encoding="utf-8") for n in FILES}
    for change, says in (({("Abs", "", 13): {("input", 0): ("X", Tag.NONDIFF, Tag.DIFF)}},
                          "reads differentiable, the sources non-differentiable"),
                         ({("Abs", "", 13): {("input", 0): ("A", Tag.DIFF, Tag.NONDIFF)}},
                          "is not `A`"),
                         ({("Abs", "", 12): {("input", 0): ("X", Tag.DIFF, Tag.NONDIFF)}},
                          "no section Abs-12"),
                         ({("Abs", "", 13): {("input", 3): ("X", Tag.DIFF, Tag.NONDIFF)}},
                          "no input 3")):
        with pytest.raises(DocsMismatch, match=says):
            edited_docs(docs, change)


def test_retagged_keeps_the_other_words():
    line = "<dt><tt>inputs</tt> (variadic, heterogeneous, differentiable) : T</dt>"
    assert retagged(line, Tag.NONDIFF) == \
        "<dt><tt>inputs</tt> (variadic, heterogeneous, non-differentiable) : T</dt>"
    assert retagged("<dt><tt>X</tt> : T</dt>", Tag.DIFF) == "<dt><tt>X</tt> (differentiable) : T</dt>"
