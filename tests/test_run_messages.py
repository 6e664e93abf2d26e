"""Issue 26 part 6: the messages a contributor met, each changed and tested.

(Glue called "computing" ops and the Markdown report's status line are checked on the
corpus, tests/test_script_corpus.py.)
"""
from __future__ import annotations

import io
import textwrap

import torch

from torch_prover import cli
from torch_prover.errors import capped, describe


# ----------------------------------------------------------------- --debug after the command
def test_debug_is_accepted_after_the_subcommand():
    """The internal-error line says "rerun with --debug": `run SCRIPT --debug` must parse."""
    parser = cli.build_parser()
    assert parser.parse_args(["run", "s.py", "--debug"]).debug is True
    assert parser.parse_args(["--debug", "run", "s.py"]).debug is True
    assert parser.parse_args(["run", "s.py"]).debug is False
    for command in ("prove", "verify-all", "tags", "coverage"):
        extra = {"prove": ["Relu"], "tags": ["Relu"]}.get(command, [])
        assert parser.parse_args([command, *extra, "--debug"]).debug is True, command


def test_run_debug_shows_the_scripts_traceback(tmp_path, monkeypatch, capsys):
    script = tmp_path / "broken.py"
    script.write_text(textwrap.dedent("""\
        import torch
        def helper():
            raise RuntimeError("boom")
        helper()
        """))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "broken.py", "--debug", "--format", "json"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and 'raise RuntimeError("boom")' in err
    assert "torch-prover run --debug shows the traceback" in err


# ----------------------------------------------------------------- runtime errors in reasons
class NotImplemented_(Exception):
    pass


def test_an_onnxruntime_refusal_is_said_in_words_and_never_cut_mid_word():
    raw = ("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for "
           "Erf(13) node with name ''")
    assert describe(NotImplemented_(raw)) == \
        "NotImplemented_: no onnxruntime kernel for Erf-13 at these input types"
    other = describe(RuntimeError("[ONNXRuntimeError] : 1 : FAIL : Load model failed"))
    assert other == "RuntimeError: FAIL: Load model failed"
    long = describe(RuntimeError("Available implementations: " + "Abs, Acos, Acosh, " * 40))
    assert len(long) <= 300 and long.endswith("…")
    assert long[:-1].endswith(("Abs", "Acos", "Acosh")), long[-20:]   # a whole word
    assert capped("a" * 500).endswith("…") and len(capped("a" * 500)) == 300


# ----------------------------------------------------------------- prove --opset 11
def test_a_declaration_under_an_older_versions_proposal_says_what_it_is_about(capsys):
    """Clip's cases declare min and max `disagree` against Clip-13's tags; at opset 11 the
    tags are unknown and the rows are `proposed`: the declaration must not read as if it
    were about those rows."""
    code = cli.main(["prove", "Clip", "--case", "clip_scalar_bounds", "--opset", "11",
                     "--no-write"])
    out = capsys.readouterr().out
    assert code == 0
    rows = [line for line in out.splitlines() if line.startswith("input 1 ")]
    assert rows and "proposed" in rows[0].split()
    flat = " ".join(out.split())
    assert "declared by the case for input 1: disagree -" not in flat
    assert ("declared by the case for input 1: disagree against the latest tag (Clip-13: "
            "non-differentiable); against Clip-11's tag (unknown) the verdict is proposed"
            in flat)


# ----------------------------------------------------------------- a folded parameter
class Scale(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.linspace(0.5, 1.5, 12).reshape(3, 4))

    def forward(self, x):
        return x * self.weight.t().t()   # parameter-only computation: the exporter folds it


def test_a_folded_parameter_is_named():
    from torch_prover import prove
    proof = prove(Scale(), [torch.randn(3, 4)], op="Mul")
    b = next(p for p in proof.parameters if p.io == "input" and p.index == 1)
    assert b.source == "folded parameter weight", b.source
    assert "module parameter weight, folded into a constant" in b.autograd.detail
    assert "optimize=False" in b.autograd.detail


# ----------------------------------------------------------------- run says what it is doing
class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_run_shows_its_stages_on_a_terminal_and_erases_them(tmp_path, monkeypatch, capsys):
    script = tmp_path / "tanh.py"
    script.write_text(textwrap.dedent("""\
        import torch
        m = torch.nn.Tanh()
        x = torch.randn(2, 3, requires_grad=True)
        m(x).backward(torch.ones(2, 3))
        torch.onnx.export(m, (x,), "tanh.onnx", dynamo=True, opset_version=18)
        """))
    monkeypatch.chdir(tmp_path)
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert cli.main(["run", "tanh.py"]) == 0
    err = terminal.getvalue()
    for stage in ("running tanh.py in its own process",
                  "tanh.py finished after", "proving Tanh (dynamo exporter, opset 18)"):
        assert f"torch-prover run: {stage}" in err, err
    erased = err.rsplit("\r", 2)    # "\r" + blanks + "\r" before the report: nothing left
    assert erased[-2].strip() == "" and "torch-prover run: " not in erased[-1], err


def test_run_prints_no_stage_lines_into_a_pipe(tmp_path, monkeypatch, capsys):
    """Not a terminal (a CI log, a test's capture): stderr keeps one-line errors."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nothing.py").write_text("print('no export')\n")
    assert cli.main(["run", "nothing.py", "--format", "json"]) == 2
    err = capsys.readouterr().err
    assert "torch-prover run: running" not in err
    assert err.strip().splitlines()[-1].startswith("torch-prover run: the script never calls")


def test_run_has_no_no_write_option(capsys):
    """run writes no evidence unless --out is given: a --no-write would do what the default
    does (issue 34), so run does not offer it; prove and verify-all keep theirs."""
    assert cli.main(["run", "s.py", "--no-write"]) == 2
    assert "unrecognized arguments: --no-write" in capsys.readouterr().err
    assert cli.main(["run", "--help"]) == 0
    shown = capsys.readouterr().out
    assert "--out" in shown and "--no-write" not in shown
