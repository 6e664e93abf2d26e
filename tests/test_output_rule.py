"""The two rules every command keeps (docs/safety.md; issue 28, finding 18 and its "done
when"):

- an output path is never an input, never inside an input tree (or torch-prover's own
  package), and never a file this command did not create, derived names included: one
  helper, ``preflight.outputs_checked``, called by every command that writes;
- every record read back -- a cache entry, a shard given to ``merge``, a report given to
  ``fix-tags``, a ``proof.json`` given to ``check-evidence`` -- goes through one re-check,
  ``engine.recheck.record_problem``.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_lines import one_line_exit_2
from fix_report import SRC

from torch_prover import cli, preflight
from torch_prover.errors import UsageError

PACKAGE = Path(preflight.__file__).resolve().parent


def _writing_commands(tmp: Path) -> dict[str, list[str]]:
    script = tmp / "proof.py"
    script.write_text("print('never run')\n")
    report = tmp / "in.json"
    report.write_text("{}")
    return {
        "verify-all": ["verify-all", "--ops", "Relu", "--no-cache", "--out", str(tmp / "o"),
                       "--report", str(tmp / "r.txt")],
        "merge": ["merge", str(report), str(report), "--report", str(tmp / "r.txt")],
        "script": ["script", "Relu", "-o", str(tmp / "s.py")],
        "fix-tags": ["fix-tags", "--onnx-src", str(SRC), "--report", str(report), "-o",
                     str(tmp / "fix.patch")],
        "run": ["run", str(script), "--out", str(tmp / "o")],
        "prove": ["prove", "Relu", "--out", str(tmp / "o")],
    }


@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("command", ["verify-all", "merge", "script", "fix-tags", "run",
                                     "prove"])
def test_every_writing_command_checks_its_outputs_with_the_one_helper(
        tmp_path, capsys, monkeypatch, command):
    seen = []

    def spy(outputs, inputs=(), trees=()):
        seen.append(([Path(o.path).name for o in outputs], list(inputs), list(trees)))
        raise UsageError("checked by the one helper")
    monkeypatch.setattr(preflight, "outputs_checked", spy)
    code = cli.main(_writing_commands(tmp_path)[command])
    one_line_exit_2(capsys, code, "checked by the one helper")
    assert len(seen) == 1
    if command == "fix-tags":   # derived names are outputs too, and the sources a tree
        names, inputs, trees = seen[0]
        assert names == ["fix.patch", "fix.md", "fix-evidence.md"]
        assert ("--report", str(tmp_path / "in.json")) in inputs
        assert ("--onnx-src", Path(str(SRC))) in [(w, Path(str(p))) for w, p in trees]


# ----------------------------------------------------------------------------- the rule
@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("argv_of", [
    lambda p: ["verify-all", "--ops", "Relu", "--no-write", "--no-cache", "--report", p],
    lambda p: ["script", "Relu", "-o", p],
    lambda p: ["merge", "a.json", "b.json", "--report", p],
    lambda p: ["fix-tags", "--onnx-src", str(SRC), "--report", "a.json", "-o", p],
])
def test_no_output_inside_torch_provers_own_package(capsys, argv_of):
    target = PACKAGE / "not-ours-to-write.txt"
    one_line_exit_2(capsys, cli.main(argv_of(str(target))), "own package")
    assert not target.exists()


@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize("argv_of, name", [
    (lambda p: ["verify-all", "--ops", "Relu", "--no-write", "--no-cache", "--report", p],
     "notes.txt"),
    (lambda p: ["script", "Relu", "-o", p], "helper.py"),
    (lambda p: ["merge", "a.json", "b.json", "--report", p], "notes.md"),
    (lambda p: ["fix-tags", "--onnx-src", str(SRC), "--report", "a.json", "-o", p],
     "notes.patch"),
])
def test_a_file_the_command_did_not_write_is_left_alone(tmp_path, capsys, argv_of, name):
    mine = tmp_path / name
    mine.write_text("someone's own text\n")
    one_line_exit_2(capsys, cli.main(argv_of(str(mine))), str(mine), "left alone")
    assert mine.read_text() == "someone's own text\n"


def test_a_report_it_wrote_is_replaced_in_any_format(real_report, tmp_path, capsys):
    """The same --report path, written again in each of the four formats in turn: each
    time the file holds a report torch-prover wrote, so it is replaced."""
    shards = [str(real_report("Abs,Clip,Pad,Relu", "--shard", f"{k}/2")) for k in (1, 2)]
    target = tmp_path / "report"
    formats = ["text", "json", "markdown", "html", "text", "markdown", "json", "html", "json"]
    for fmt in formats:
        assert cli.main(["merge", *shards, "--report", str(target), "--format", fmt]) in (0, 1)
        text = target.read_text()
        assert text.startswith({"json": "{", "html": "<!DOCTYPE html>", "markdown": "# ",
                                "text": "op "}[fmt]), text[:80]
    capsys.readouterr()


def test_a_script_it_wrote_is_replaced(tmp_path, capsys):
    target = tmp_path / "relu_proof.py"
    assert cli.main(["script", "Relu", "-o", str(target)]) == 0
    first = target.read_text()
    assert cli.main(["script", "Relu", "-o", str(target)]) == 0
    assert target.read_text() == first
    capsys.readouterr()


# ----------------------------------------------------------------------------- one re-check
@pytest.fixture
def recheck_calls(monkeypatch):
    """Every call of engine.recheck.record_problem, by the case it was about."""
    from torch_prover.engine import recheck
    calls: list[str] = []
    original = recheck.record_problem

    def counted(rec, case, tags, *run):
        calls.append(rec.get("case") if isinstance(rec, dict) else repr(rec))
        return original(rec, case, tags, *run)
    monkeypatch.setattr(recheck, "record_problem", counted)
    return calls


def test_the_cache_rechecks_its_entry(recheck_calls, proof_of):
    from torch_prover.batch.cache import cache_check
    from torch_prover.batch.one_case import BatchOptions
    from torch_prover.cases import find_case
    rec = proof_of("relu_basic").record()
    assert cache_check({"record": rec, "files": None}, find_case("Relu"),
                       BatchOptions()) == rec
    assert recheck_calls == ["relu_basic"]


def test_merge_rechecks_every_record(recheck_calls, real_report, capsys):
    shards = [real_report("Abs,Clip,Pad,Relu", "--shard", f"{k}/2") for k in (1, 2)]
    names = sorted(r["case"] for s in shards for r in json.loads(s.read_text())["cases"])
    assert cli.main(["merge", *map(str, shards)]) in (0, 1)
    assert sorted(recheck_calls) == names
    capsys.readouterr()


def test_fix_tags_rechecks_every_record(recheck_calls, real_report, tmp_path, capsys):
    report = real_report("If,Relu")
    names = sorted(r["case"] for r in json.loads(report.read_text())["cases"])
    assert cli.main(["fix-tags", "--onnx-src", str(SRC), "--report", str(report),
                     "-o", str(tmp_path / "fix.patch")]) == 0
    assert sorted(recheck_calls) == names
    capsys.readouterr()


def test_check_evidence_rechecks_every_record(recheck_calls, proof_of, tmp_path, capsys):
    from torch_prover.output import evidence
    for name in ("relu_basic", "reshape_basic"):
        evidence.write_proof(tmp_path, proof_of(name))
    assert cli.main(["check-evidence", str(tmp_path)]) == 0
    assert sorted(recheck_calls) == ["relu_basic", "reshape_basic"]
    capsys.readouterr()
