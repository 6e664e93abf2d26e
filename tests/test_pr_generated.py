"""A new op decided on today's main, without a C++ build (issue 40, item 2).

ONNX stopped committing ``onnx/backend/test/data/node`` (onnx #7959, a8f77b5b9,
2026-08-04): a checkout of main holds only the tests' generators. The replay: onnx #8202
(928f94127, "Add SwiGLU as a function-op", 2026-07-20), the last new op before #7959, as it
would land today -- its generator ``onnx/backend/test/case/node/swiglu.py`` byte for byte
(``tests/data/onnx-swiglu-928f9412``) in a checkout without node data, the PR's docs
ONNX's Changelog.md of main (``tests/data/Changelog.md``, which documents SwiGLU-28 as the
commit wrote it) and the base the same docs without SwiGLU-28's section (what the commit
added to docs/Changelog.md). The expectations are the math: SwiGLU(A, B) = A * sigmoid(alpha
* A) * B is smooth in A and in B, so the PR's differentiable tags on A, B and Y hold.

The generators are the PR's code: they run in a child process with a timeout, write only
tests into our scratch directory, and what they fail to make is named, never replaced by
the installed onnx's tests.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gate_fixture import drop_section
from json_contract import validate_text
from torch_prover import cli
from torch_prover.engine.onnx_points.generators import generate

DATA = Path(__file__).resolve().parent / "data"
CHECKOUT = DATA / "onnx-swiglu-928f9412"
D = "differentiable"


def _docs(tmp: Path) -> None:
    text = (DATA / "Changelog.md").read_text(encoding="utf-8")
    (tmp / "base.md").write_text(drop_section(text, "SwiGLU-28"), encoding="utf-8")
    (tmp / "pr.md").write_text(text, encoding="utf-8")


def test_a_new_op_is_decided_from_the_prs_generators(tmp_path):
    _docs(tmp_path)
    assert not (CHECKOUT / "onnx" / "backend" / "test" / "data").exists()   # post-#7959
    done = subprocess.run(
        [sys.executable, "-m", "torch_prover", "verify-all", "--changed-from", "base.md",
         "--tags-from", "pr.md", "--case-free", "--onnx-src", str(CHECKOUT), "--no-write",
         "--cache-dir", str(tmp_path / "cache"), "--format", "json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900,
        env={**os.environ, "COLUMNS": "100"})
    doc = validate_text(done.stdout)
    assert done.returncode == 0, done.stderr
    assert doc["points"]["origin"] == "the PR's generators"
    assert "swiglu.py" in doc["points"]["source"] and doc["points"]["problems"] == []
    found = {(c["op"], c["version"], p["name"]): p for c in doc["changes"]
             for p in c["parameters"]}
    assert set(found) == {("SwiGLU", 28, "A"), ("SwiGLU", 28, "B"), ("SwiGLU", 28, "Y")}
    for p in found.values():
        assert (p["pr"], p["verdict"], p["supports"]) == (D, "confirmed", D), p["why"]
        w = p["witnesses"][0]
        assert w["case"] == "case-free" and "the PR's generators" in w["reason"]
        assert "test_swiglu" in w["reason"]
    from torch_prover.gate.comment import markdown
    assert "the PR's generators: `ONNX checkout" in markdown(doc)


def test_a_checkout_with_no_node_tests_and_no_generators_is_refused_saying_what_is_missing(
        tmp_path, no_work, capsys, monkeypatch):
    _docs(tmp_path)
    (tmp_path / "onnx" / "defs").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    code = cli.main(["verify-all", "--changed-from", "base.md", "--tags-from", "pr.md",
                     "--case-free", "--onnx-src", str(tmp_path), "--no-write"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "neither onnx/backend/test/data/node" in err and "onnx/backend/test/case/node" in err
    assert "#7959" in err


def _checkout(tmp: Path, source: str) -> Path:
    d = tmp / "co" / "onnx" / "backend" / "test" / "case" / "node"
    d.mkdir(parents=True)
    (d / "relu.py").write_text(source, encoding="utf-8")
    return tmp / "co"


HEAD = """
import numpy as np
import onnx
from onnx.backend.test.case.base import Base
from onnx.backend.test.case.node import expect
"""


def test_a_generator_that_hangs_is_stopped_and_named(tmp_path):
    co = _checkout(tmp_path, "import time\ntime.sleep(600)\n")
    made = generate(co, ["Relu"], timeout=3)
    assert made.tests == () and made.files == ("relu.py",)
    assert made.problems == ("the PR's generators ran past 3 s: stopped, nothing of them used",)


def test_a_generators_bad_names_and_failures_are_named_the_rest_kept(tmp_path):
    co = _checkout(tmp_path, HEAD + '''
class Relu(Base):
    @staticmethod
    def export() -> None:
        node = onnx.helper.make_node("Relu", inputs=["x"], outputs=["y"])
        x = np.array([-1.0, 2.0, 3.0], dtype=np.float32)
        expect(node, inputs=[x], outputs=[np.maximum(x, 0)], name="test_relu_ok")
        expect(node, inputs=[x], outputs=[np.maximum(x, 0)], name="test_../../escape")
        bad = onnx.helper.make_node("NoSuchOp", inputs=["x"], outputs=["y"])
        expect(bad, inputs=[x], outputs=[x], name="test_no_such_op")
''')
    made = generate(co, ["Relu"])
    assert [t.name for t in made.tests] == ["test_relu_ok"]
    assert made.tests[0].op == "Relu"
    assert any(p.startswith("test_../../escape") and "not a test name" in p
               for p in made.problems)
    assert any(p.startswith("test_no_such_op: ") for p in made.problems)
    assert not (tmp_path / "escape").exists() and not (co.parent / "escape").exists()


def test_a_version_the_installed_onnx_lacks_is_not_decided_from_generators(
        tmp_path, no_work, capsys, monkeypatch):
    """--case-free on a PR adding a version the installed onnx lacks (Relu past its newest
    opset): its tests cannot be built without its schema, so it is "not proved: build the
    PR's onnx", and no generator runs for it (``points`` null: none consulted)."""
    import onnx.defs
    from gate_fixture import section_span
    text = (DATA / "Changelog.md").read_text(encoding="utf-8")
    later = onnx.defs.onnx_opset_version() + 1
    start, end = section_span(text, "Relu-14")
    relu = text[start:end].replace("Relu-14", f"Relu-{later}").replace(
        "since version 14 of", f"since version {later} of")
    at = text.index("\n# ai.onnx.preview\n")
    (tmp_path / "base.md").write_text(text, encoding="utf-8")
    (tmp_path / "pr.md").write_text(
        text[:at] + f"\n## Version {later} of the default ONNX operator set\n" + relu + text[at:],
        encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code = cli.main(["verify-all", "--changed-from", "base.md", "--tags-from", "pr.md",
                     "--case-free", "--onnx-src", str(CHECKOUT), "--no-write",
                     "--format", "json"])
    doc = validate_text(capsys.readouterr().out)
    assert code == 0 and doc["points"] is None
    assert {p["verdict"] for c in doc["changes"] for p in c["parameters"]} == \
        {"not proved: build the PR's onnx"}
    assert doc["summary"]["needs_build"] == 1


def test_a_doc_only_pr_on_todays_main_has_nothing_to_prove(tmp_path, no_work, capsys,
                                                         monkeypatch):
    """onnx #8335 (41e74c50e, "docs: clarify spurious unknown variable in 'Slice' operator",
    2026-08-20) edits Slice's description and no tag: the base is today's Changelog.md with
    the commit's diff reversed (``tests/data/onnx-doc-only-41e74c50.patch``), the PR today's.
    Nothing to prove, exit 0, no proof started (no_work), no node test consulted."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "Changelog.md").write_bytes((DATA / "Changelog.md").read_bytes())
    subprocess.run(["git", "apply", "-R", str(DATA / "onnx-doc-only-41e74c50.patch")],
                   cwd=tmp_path, check=True)
    (tmp_path / "base.md").write_bytes((docs / "Changelog.md").read_bytes())
    assert (tmp_path / "base.md").read_bytes() != (DATA / "Changelog.md").read_bytes()
    monkeypatch.chdir(tmp_path)
    code = cli.main(["verify-all", "--changed-from", "base.md", "--tags-from",
                     str(DATA / "Changelog.md"), "--onnx-src", str(CHECKOUT), "--no-write",
                     "--format", "json"])
    doc = validate_text(capsys.readouterr().out)
    assert code == 0 and doc["changes"] == [] and doc["points"] is None
    assert doc["reason"].startswith("nothing to prove")


def test_what_a_generator_says_reaches_the_comment_inert(tmp_path):
    """A test name and an exception text are the PR's: control characters and backquotes
    are dropped, and the comment shows them in a code span."""
    co = _checkout(tmp_path, HEAD + '''
class Relu(Base):
    @staticmethod
    def export() -> None:
        node = onnx.helper.make_node("Relu", inputs=["x"], outputs=["y"])
        raise ValueError("@maintainer `x` \\x1b]8;;http://evil\\x07 \\n::error::forged")
''')
    made = generate(co, ["Relu"])
    assert len(made.problems) == 1
    line = made.problems[0]
    assert "\n" not in line and "\x1b" not in line and "\x07" not in line and "`" not in line
    from torch_prover.gate.comment import MD, TEXT, _notes
    doc = {"failed": [], "changes": [], "also": [], "removed": [], "absent": [],
           "points": {"origin": "the PR's generators", "source": "s", "problems": [line]}}
    (_, lines), = _notes(doc, MD)
    assert lines[1] == f"not made: `{line}`"
    (_, lines), = _notes(doc, TEXT)
    assert lines[1] == f"not made: {line}"


def test_an_op_the_installed_onnx_lacks_is_measured_with_the_prs_reference(tmp_path):
    """A fixture built from #8202's real files, renamed so the installed onnx (which has
    SwiGLU) lacks the op: SwiGLU -> SwiGLUNew in its docs section, its generator
    (``swiglunew.py``) and its reference implementation (``op_swiglunew.py``). ONNX's
    ``expect`` cannot build its tests without a schema: the child builds them and measures
    them with the PR's ``OpRun`` class as the runtime. The math (SwiGLU(A, B) = A *
    sigmoid(A) * B, smooth in A and B) confirms A, B and Y; the witness names the PR's
    reference implementation as its runtime; nothing needs the build."""
    text = (DATA / "Changelog.md").read_text(encoding="utf-8")
    from gate_fixture import section_span
    start, end = section_span(text, "SwiGLU-28")
    renamed = text[:start] + text[start:end].replace("SwiGLU", "SwiGLUNew") + text[end:]
    (tmp_path / "base.md").write_text(drop_section(text, "SwiGLU-28"), encoding="utf-8")
    (tmp_path / "pr.md").write_text(renamed, encoding="utf-8")
    co = tmp_path / "co"
    for rel, name in (("onnx/backend/test/case/node", "swiglu.py"),
                      ("onnx/reference/ops", "op_swiglu.py")):
        (co / rel).mkdir(parents=True)
        source = (CHECKOUT / rel / name).read_text(encoding="utf-8")
        (co / rel / name.replace("swiglu", "swiglunew")).write_text(
            source.replace("SwiGLU", "SwiGLUNew"), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "torch_prover", "verify-all", "--changed-from", "base.md",
         "--tags-from", "pr.md", "--onnx-src", str(co), "--no-write",
         "--cache-dir", str(tmp_path / "cache"), "--format", "json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900,
        env={**os.environ, "COLUMNS": "100"})
    doc = validate_text(done.stdout)
    assert done.returncode == 0, done.stderr
    found = {(c["op"], c["version"], p["name"]): p for c in doc["changes"]
             for p in c["parameters"]}
    assert set(found) == {("SwiGLUNew", 28, "A"), ("SwiGLUNew", 28, "B"),
                          ("SwiGLUNew", 28, "Y")}, doc["reason"]
    for p in found.values():
        assert (p["verdict"], p["supports"]) == ("confirmed", D), (p["why"], doc["points"])
        reason = p["witnesses"][0]["reason"]
        assert "the PR's generators" in reason and "test_swiglu" in reason
        assert "test_swiglu (the PR's reference implementation (SwiGLUNew)): smooth" in reason
    assert doc["summary"]["needs_build"] == 0 and doc["points"]["origin"] == "the PR's generators"
