"""The README's three uses, each output produced here by the command it shows
(tests/docs_examples.py): a contributor's `run`, the maintainer's `verify-all` gate, and
the patch `fix-tags` writes."""
from __future__ import annotations

from pathlib import Path

from docs_examples import assert_example

from torch_prover import cli

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "scripts" / "examples" / "reshape_method1.py"
SRC = ROOT / "tests" / "data" / "onnx-src"


def test_readme_run_example(tmp_path, monkeypatch, capsys):
    """ONNX's own Method 1 script, run where it writes its model.onnx (the cwd)."""
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "model.onnx").is_file()
    # the script's own output names torch's files by their installed path: the README shows
    # it as .../site-packages, the same on every machine
    import torch
    site = str(Path(torch.__file__).resolve().parent.parent)
    # the file the script wrote holds the exporter's stack traces, with the script's path
    # (the checkout's): its sha256 differs from checkout to checkout; the evidence copy's
    # does not (they are stripped)
    assert_example("readme-run", "$ torch-prover run scripts/examples/reshape_method1.py\n"
                   + out.replace(site, ".../site-packages"),
                   vary=r"(?<=the script's file model\.onnx: sha256 )[0-9a-f]{64}")


def test_readme_gate_and_fix_tags_examples(tmp_path, monkeypatch, capsys):
    """verify-all on two ops (the table; the summary after it holds the wall time), then
    fix-tags on its JSON report against the fixture sources: If's unknown cond is proposed
    and edited, Hardmax's convention-decided disagreements are withheld."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    gate = ["verify-all", "--ops", "If,Hardmax", "--no-cache"]
    assert cli.main(gate) == 0
    table = capsys.readouterr().out.split("\n\n")[0]
    assert_example("readme-gate", "$ torch-prover " + " ".join(gate) + "\n" + table)
    report = ["verify-all", "--ops", "If,Hardmax", "--format", "json", "--report",
              "verify-all.json"]
    assert cli.main(report) == 0
    capsys.readouterr()
    fix = ["fix-tags", "--onnx-src", "tests/data/onnx-src", "--report", "verify-all.json",
           "-o", "fix.patch"]
    (tmp_path / "tests" / "data").mkdir(parents=True)
    (tmp_path / "tests" / "data" / "onnx-src").symlink_to(SRC)
    assert cli.main(fix) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "fix.patch").is_file() and (tmp_path / "fix.md").is_file()
    assert "If" in (tmp_path / "fix.patch").read_text()
    assert_example("readme-fix-tags", "$ torch-prover " + " ".join(report) + "\n"
                   + "$ torch-prover " + " ".join(fix) + "\n" + out)


def test_api_example():
    """docs/api.md: prove() on a builtin (it used to be called with no arguments)."""
    import torch
    import torch_prover
    x = torch.linspace(-3, 3, 12, dtype=torch.float64).reshape(3, 4)
    proof = torch_prover.prove(torch.nn.functional.gelu, [x], op="Gelu")
    lines = [">>> import torch, torch_prover",
             ">>> x = torch.linspace(-3, 3, 12, dtype=torch.float64).reshape(3, 4)",
             '>>> proof = torch_prover.prove(torch.nn.functional.gelu, [x], op="Gelu")',
             ">>> proof.status", repr(proof.status),
             ">>> for p in proof.parameters:",
             "...     print(p.io, p.index, p.name, p.verdict, p.rule)"]
    lines += [f"{p.io} {p.index} {p.name} {p.verdict} {p.rule}" for p in proof.parameters]
    lines += [">>> proof.numeric.precision.words()", repr(proof.numeric.precision.words())]
    assert (proof.status, [p.verdict for p in proof.parameters]) == ("proved",
                                                                     ["agree", "agree"])
    assert_example("api-prove-gelu", "\n".join(lines))


def test_progress_log_example():
    """docs/commands.md: verify-all's progress in a CI log, a 28-case batch at 4 cases/s."""
    import io
    from torch_prover.batch.progress import Progress
    now = [100.0]
    stream = io.StringIO()
    progress = Progress(stream, clock=lambda: now[0])
    progress(0, 28, "")
    for done in range(1, 29):
        now[0] += 0.25
        progress(done, 28, f"case_{done}")
    assert_example("progress-log", stream.getvalue())


def test_json_error_example(capsys):
    """docs/json.md: an error is a JSON document too, on stdout, with --format json."""
    assert cli.main(["prove", "Reshap", "--format", "json"]) == 2
    assert_example("json-error", "$ torch-prover prove Reshap --format json\n"
                   + capsys.readouterr().out)
