"""The CLI's contract: output shapes and exit codes (0 ok, 1 finding, 2 usage / broken case)."""
import dataclasses
import json

import pytest

from torch_prover import cli
from torch_prover.batch.progress import Progress
import importlib

prove_mod = importlib.import_module("torch_prover.engine.prove")  # the package re-exports prove()
from torch_prover.tags.schema import schema_tags


def test_prove_reshape_json(tmp_path, capsys):
    assert cli.main(["prove", "Reshape", "--format", "json", "--out", str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["kind"], doc["status"], doc["exit_code"], len(doc["cases"])) == (
        "prove", "ok", 0, 1)
    rec = doc["cases"][0]
    by = {(p["io"], p["index"]): p for p in rec["parameters"]}
    assert (by["input", 0]["name"], by["input", 0]["evidence"], by["input", 0]["verdict"]) == (
        "data", "grad", "agree")
    assert (by["input", 1]["name"], by["input", 1]["tag"], by["input", 1]["verdict"]) == (
        "shape", "non-differentiable", "agree")
    assert (by["output", 0]["name"], by["output", 0]["verdict"]) == ("reshaped", "agree")
    assert (rec["kind"], rec["format"], rec["op"]) == ("proof", 3, "Reshape")
    assert (tmp_path / "Reshape" / "reshape_basic" / "proof.json").exists()


def test_prove_text_names_every_parameter(tmp_path, capsys):
    assert cli.main(["prove", "topk", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for word in ("Values", "Indices", "integer", "status: proved"):
        assert word in out


def test_unknown_op_names_the_closest(capsys):
    assert cli.main(["prove", "Reshap"]) == 2
    err = capsys.readouterr().err
    assert "Reshape" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_prove_an_op_decided_by_type_points_to_verify_all(capsys):
    """StringConcat has no case and every parameter of its schema is a string (onnx.defs):
    prove cannot help, verify-all decides it; the one-line refusal says so."""
    types = {t for f in schema_tags("StringConcat").inputs + schema_tags("StringConcat").outputs
             for t in f.types}
    assert types == {"tensor(string)"}
    for argv in (["prove", "StringConcat"], ["prove", "StringConcat", "--all"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "decided by type" in err
        assert "`torch-prover verify-all --ops StringConcat`" in err


def test_unknown_case_lists_existing(capsys):
    assert cli.main(["prove", "Add", "--case", "nope"]) == 2
    assert "add_same_shape" in capsys.readouterr().err


def test_bad_usage_exits_2(capsys):
    assert cli.main(["prove"]) == 2
    assert cli.main([]) == 2


def test_disagreement_exits_1(tmp_path, monkeypatch, capsys):
    def flipped(op, opset, domain):
        tags = schema_tags(op, opset, domain)
        return dataclasses.replace(tags, inputs=(
            dataclasses.replace(tags.inputs[0], tag="non-differentiable"),) + tags.inputs[1:])
    monkeypatch.setattr(prove_mod, "default_tags", flipped)
    assert cli.main(["prove", "Reshape", "--no-write", "--no-numeric"]) == 1
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("input 0"))
    assert "disagree" in row.split() and "DISAGREE" not in out  # the record's word


def test_tags_command(capsys):
    assert cli.main(["tags", "TopK", "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert [p["tag"] for p in rec["parameters"]] == [
        "differentiable", "non-differentiable", "differentiable", "non-differentiable"]


# ----------------------------------------------------------------------------- coverage OP
def test_coverage_op_lists_cases_and_prove_commands(capsys):
    from torch_prover.cases import cases_for
    assert cli.main(["coverage", "Reshape"]) == 0
    out = capsys.readouterr().out
    names = [c.name for c in cases_for("Reshape")]
    assert names and out.startswith("Reshape: ")
    for name in names:
        assert name in out
        assert f"\n    torch-prover prove Reshape --case {name}\n" in out  # whole, copyable
    assert "Softmax" not in out


def test_coverage_several_ops_and_an_op_without_a_case(capsys):
    assert cli.main(["coverage", "reshape,StringConcat", "Max"]) == 0
    out = capsys.readouterr().out
    assert out.index("Reshape:") < out.index("StringConcat:") < out.index("Max:")
    # StringConcat has no case, but its schema's types (string) decide every parameter
    assert "StringConcat: decided by type, no case (string op): PyTorch has no string tensors" in out
    for label in ("input 0 X", "input 1 Y", "output 0 Z"):
        assert f"{label}: non-differentiable by type" in out
    assert "torch-prover prove Max --all" in out


def test_coverage_unknown_op_is_one_line_exit_2(capsys):
    assert cli.main(["coverage", "Sofmax"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1
    assert "Sofmax" in captured.err and "did you mean Softmax" in captured.err


def test_coverage_op_json(capsys):
    from torch_prover.cases import cases_for
    assert cli.main(["coverage", "--format", "json", "Reshape"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == 1 and [e["op"] for e in data["ops"]] == ["Reshape"]
    entry = data["ops"][0]
    assert entry["status"] == "covered"
    assert [c["name"] for c in entry["cases"]] == [c.name for c in cases_for("Reshape")]
    for c in entry["cases"]:
        assert set(c) == {"name", "kind", "exporter", "opset", "route", "command"}
        assert c["command"] == f"torch-prover prove Reshape --case {c['name']}"
        assert c["route"] == "direct"  # opset 25: the exporter itself produces it


def test_coverage_names_the_raised_route_of_ops_newer_than_the_exporter(capsys):
    """The ops new in 26-28 are covered through the private-domain route, and say so; the
    ops and their opsets come from onnx.defs, not from the catalogue."""
    import onnx.defs
    first = {}
    for v in onnx.defs.get_all_schemas_with_history():
        if v.domain == "":
            first[v.name] = min(first.get(v.name, v.since_version), v.since_version)
    new = sorted(op for op, since in first.items() if since > 25)
    assert {"CumProd", "BitCast", "SwiGLU", "LinearAttention", "CausalConvWithState"} <= set(new)
    assert cli.main(["coverage", "--format", "json", *new]) == 0
    for entry in json.loads(capsys.readouterr().out)["ops"]:
        assert entry["status"] == "covered", entry
        for c in entry["cases"]:
            since = onnx.defs.get_schema(entry["op"], 28).since_version
            assert (c["route"], c["opset"]) == ("raised", since), (entry["op"], c)
    assert cli.main(["coverage", "SwiGLU"]) == 0
    assert "route: exported at opset 25 with the node in torch_prover.next" in \
        capsys.readouterr().out.replace("\n    ", " ")


def test_coverage_without_op_still_lists_every_op(capsys):
    from torch_prover.tags.schema import all_ops
    assert cli.main(["coverage", "--format", "json"]) == 0
    assert [e["op"] for e in json.loads(capsys.readouterr().out)["ops"]] == list(all_ops())


# ----------------------------------------------------------------------------- progress
class _Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_progress_off_a_terminal_logs_periodic_lines_with_an_eta():
    import io
    stream, clock = io.StringIO(), _Clock()
    progress = Progress(stream, clock=clock)   # defaults: 10 cases and 5 s
    progress(0, 100, "")
    for done in range(1, 101):        # one case every 0.5 s: 10 cases take 5 s
        clock.now += 0.5
        progress(done, 100, f"case_{done}")
    lines = stream.getvalue().splitlines()
    assert lines[0] == "verify-all: 0/100 cases done, 100 to prove"
    assert lines[1] == "verify-all: 10/100 cases (10%), 5 s elapsed, ETA 45 s"
    assert len(lines) == 11 and all("ETA" in line for line in lines[1:-1])
    assert lines[-1] == "verify-all: 100/100 cases done in 50 s"
    assert "\r" not in stream.getvalue()


def test_progress_off_a_terminal_keeps_the_rarer_cadence():
    import io
    stream, clock = io.StringIO(), _Clock()
    progress = Progress(stream, clock=clock)
    progress(20, 300, "cached")
    for done in range(21, 301):       # fast cases: 5 s pass every 80 cases
        clock.now += 0.0625
        progress(done, 300, "c")
    lines = stream.getvalue().splitlines()
    assert lines[0] == "verify-all: 20/300 cases done (20 from cache), 280 to prove"
    assert [line.split()[1] for line in lines] == [
        "20/300", "100/300", "180/300", "260/300", "300/300"]
    assert lines[1] == "verify-all: 100/300 cases (33%), 5 s elapsed, ETA 12 s"
    slow, clock = io.StringIO(), _Clock()  # slow cases: every 15 cases (a twentieth of 300)
    progress = Progress(slow, clock=clock)
    for done in range(0, 46):
        progress(done, 300, "c")
        clock.now += 10
    assert [line.split()[1] for line in slow.getvalue().splitlines()] == [
        "0/300", "15/300", "30/300", "45/300"]


def test_progress_on_a_terminal_redraws_one_line_with_an_eta():
    import io

    class Tty(io.StringIO):
        def isatty(self):
            return True

    stream, clock = Tty(), _Clock()
    progress = Progress(stream, clock=clock, width=70)
    progress(0, 4, "")
    for done in range(1, 5):
        clock.now += 2
        progress(done, 4, "a_case_name_that_is_long_enough_to_need_cutting_" * 2)
    out = stream.getvalue()
    frames = out.split("\r")[1:]
    assert len(frames) == 5 and out.endswith("\n") and out.count("\n") == 1
    assert all(len(f.rstrip("\n")) == 69 for f in frames)   # padded, never wider
    assert "2/4  4 s elapsed  ETA 4 s" in frames[2]
    assert frames[-1].startswith("[####################] 4/4  8 s elapsed  ETA 0 s")


class _Tty:
    """A stream that says it is a terminal (os.get_terminal_size cannot size it)."""

    def __init__(self):
        import io
        self.buf = io.StringIO()
        self.write, self.flush = self.buf.write, self.buf.flush

    def isatty(self):
        return True


@pytest.mark.parametrize("columns", ["40", "132"])
def test_progress_honours_columns(monkeypatch, columns):
    """Issue 42: the progress line is cut to ``$COLUMNS`` (it used to take the terminal's
    width whatever COLUMNS said, and 100 where there is none); so is run's stage line."""
    from torch_prover.pr.runner import StageLine
    monkeypatch.setenv("COLUMNS", columns)
    stream, clock = _Tty(), _Clock()
    progress = Progress(stream, clock=clock)
    for done in range(3):
        clock.now += 1
        progress(done, 2, "a_case_name_" * 20)
    frames = stream.buf.getvalue().split("\r")[1:]
    assert frames and all(len(f.rstrip("\n")) == int(columns) - 1 for f in frames)
    stage = _Tty()
    StageLine(stage)("proving " + "x" * 300)
    assert len(stage.buf.getvalue()) == int(columns)   # "\r" and columns - 1 characters


def test_quiet_prints_no_progress(tmp_path, capsys):
    """``-q``: verify-all prints no progress line (it prints its first and last at least
    off a terminal), and run's stage line is off even on a terminal."""
    from torch_prover.pr.runner import StageLine
    argv = ["verify-all", "--ops", "Relu", "--no-write", "--no-numeric", "--cache-dir",
            str(tmp_path / "cache")]
    assert cli.main(argv) == 0
    assert "verify-all: 1/1 cases done" in capsys.readouterr().err
    assert cli.main(argv + ["--quiet"]) == 0
    err = capsys.readouterr().err
    assert "cases done" not in err and "to prove" not in err, err
    stage = _Tty()
    StageLine(stage, quiet=True)("running the script")
    assert stage.buf.getvalue() == ""
    assert cli.build_parser().parse_args(["run", "s.py", "-q"]).quiet


def test_prove_without_case_says_which_of_several_it_proved(tmp_path, capsys):
    from torch_prover.cases import cases_for
    names = [c.name for c in cases_for("Clip")]
    assert len(names) > 1
    cli.main(["prove", "Clip", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert f"Clip has {len(names)} cases; proving the first ({names[0]})" in err
    assert [p.name for p in (tmp_path / "Clip").iterdir()] == [names[0]]


def test_readme_prove_example(capsys):
    """docs/commands.md's example is what ``prove Reshape`` prints (no evidence written)."""
    from docs_examples import assert_example
    code = cli.main(["prove", "Reshape", "--no-write"])
    out = capsys.readouterr().out
    assert code == 0
    assert_example("prove-reshape", "$ torch-prover prove Reshape\n" + out)


def test_readme_coverage_example(capsys):
    from docs_examples import assert_example
    assert cli.main(["coverage", "Max"]) == 0
    assert_example("coverage-max", "$ torch-prover coverage Max\n" + capsys.readouterr().out)
