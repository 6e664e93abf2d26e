"""Issue 22's findings about `run` and the proof record: orphans and hangs, a script that
forges the evidence, PEP 263 scripts, a failed export, a replaced export file, and a record
that names the --tags-from file the same way on every machine.

Expectations come from outside the code under test: process liveness from /proc, ONNX's
schema tags, hashes the test computes itself, what the scripts themselves write.
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import onnx.defs
import pytest

from test_script_isolation import gone, run

from torch_prover import cli

TOOL = Path(sys.executable).parent / "torch-prover"
DOCS = Path(__file__).parent / "data" / "Operators.md"


def write(tmp_path, name, body, encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(textwrap.dedent(body).encode(encoding))
    return path


RELU_METHOD1 = """\
    import torch
    class M(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x)
    x = torch.randn(3, 4, requires_grad=True)
    y = M()(x)
    torch.autograd.backward([y], grad_tensors=[torch.ones(3, 4)])
    torch.onnx.export(M(), (x,), "relu.onnx", opset_version=18)
"""

DAEMON = """\
    import os, time
    if os.fork() == 0:              # the classic daemon: fork, setsid, fork again
        os.setsid()
        if os.fork() == 0:
            with open("daemon.pid", "w") as f:
                f.write(str(os.getpid()))
            time.sleep(600)
            os._exit(0)
        os._exit(0)
    os.wait()
    while not os.path.exists("daemon.pid"):
        time.sleep(0.05)
"""


# ----------------------------------------------------------------------------- orphans
@pytest.mark.parametrize("ending, extra", [("normal", []), ("timeout", ["--timeout", "20"])])
def test_a_setsid_daemon_dies_with_the_script_and_the_caller_does_not_hang(tmp_path, ending,
                                                                            extra):
    body = DAEMON + (RELU_METHOD1 if ending == "normal" else "    while True:\n        pass\n")
    script = write(tmp_path, "daemon.py", body)
    proc = subprocess.Popen([str(TOOL), "run", str(script), "--no-numeric",
                             *extra], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=150)   # the pipe closes: nothing else holds it
    except subprocess.TimeoutExpired:
        proc.kill()
        pid = int((tmp_path / "daemon.pid").read_text())
        os.kill(pid, signal.SIGKILL)
        raise AssertionError("the caller hangs on the output pipe the daemon holds") from None
    pid = int((tmp_path / "daemon.pid").read_text())
    survived = not gone([pid])
    if survived:
        os.kill(pid, signal.SIGKILL)
    assert not survived, "the script's daemon outlived the run"
    if ending == "normal":
        assert proc.returncode == 0, err
    else:
        assert proc.returncode == 2 and "did not finish within 20 s" in err, err


# ----------------------------------------------------------------------------- forgery
FORGER = """\
    # The script patches torch-prover's collection in its own process: the module it hands
    # over is not the one it exported, but one whose gradient says min and max carry none.
    import torch
    import torch_prover.pr.child as child

    class Fake(torch.nn.Module):
        def forward(self, x, min, max):
            return x + 0 * min + 0 * max

    real = child.collect
    def forged(run, where):
        run.exports[-1].module = Fake()
        return real(run, where)
    child.collect = forged
"""


def test_a_script_that_patches_the_collection_cannot_forge_the_evidence(tmp_path, monkeypatch,
                                                                        capsys):
    """Clip's min and max are tagged non-differentiable (onnx.defs), and a gradient reaches
    them through clamp wherever x is clamped: with the numeric witness off, only the
    autograd evidence decides, so a forged module would turn that into agree."""
    schema = onnx.defs.get_schema("Clip", 18)
    nondiff = onnx.defs.OpSchema.DifferentiationCategory.NonDifferentiable
    assert schema.inputs[1].differentiation_category == nondiff
    honest = tmp_path / "clip_honest.py"
    assert cli.main(["script", "Clip", "--case", "clip_tensor_bounds", "-o", str(honest)]) == 0
    code, rec, out = run(tmp_path, monkeypatch, capsys, honest, "--no-numeric")
    assert code == 1 and {(p["io"], p["index"]): p["verdict"] for p in rec["parameters"]}[
        ("input", 1)] == "disagree", out.err           # the real finding, as the case declares
    script = tmp_path / "clip.py"
    script.write_text(textwrap.dedent(FORGER) + honest.read_text())
    code, rec, out = run(tmp_path, monkeypatch, capsys, script, "--no-numeric")
    if rec is not None:   # proved: then from the real module, whatever the script did
        verdicts = {(p["io"], p["index"]): p["verdict"] for p in rec["parameters"]}
        assert verdicts[("input", 1)] != "agree", rec["parameters"]
    else:                 # or refused, in one line that names the replaced code
        line = out.err.strip().splitlines()[-1]
        assert code == 2 and "torch_prover.pr.child.collect" in line, out.err


# ----------------------------------------------------------------------------- scripts
def test_a_latin1_script_with_a_coding_cookie_runs(tmp_path, monkeypatch, capsys):
    script = write(tmp_path, "latin.py", "# -*- coding: latin-1 -*-\n# café\n"
                   "print('d\u00e9j\u00e0 vu')\n" + textwrap.dedent(RELU_METHOD1),
                   encoding="latin-1")
    assert b"\xe9" in script.read_bytes()
    code, rec, out = run(tmp_path, monkeypatch, capsys, script)
    assert code == 0, out.err
    assert rec["op"] == "Relu"
    assert rec["script"]["sha256"] == hashlib.sha256(
        script.read_bytes().decode("latin-1").encode()).hexdigest()


def test_an_export_that_fails_in_both_exporters_says_so(tmp_path, monkeypatch, capsys):
    """The script catches the failure and goes on: the export failed, it was called."""
    script = write(tmp_path, "fails.py", """\
        import torch
        class M(torch.nn.Module):
            def forward(self, x):
                if torch.jit.is_tracing() or type(x) is not torch.Tensor \\
                        or torch.compiler.is_compiling():
                    raise RuntimeError("this module refuses to be exported")
                return torch.relu(x)
        x = torch.randn(3, requires_grad=True)
        M()(x).backward(torch.ones(3))
        try:
            torch.onnx.export(M(), (x,), "m.onnx")
        except Exception as e:
            print("export failed:", type(e).__name__)
    """)
    code, _, out = run(tmp_path, monkeypatch, capsys, script)
    line = out.err.strip().splitlines()[-1]
    assert code == 2 and "export failed" in line and "refuses to be exported" in line, out.err
    assert "never calls" not in line and "\x1b[" not in line


def test_a_script_that_replaces_its_exported_file_is_warned_about(tmp_path, monkeypatch, capsys):
    script = write(tmp_path, "swap.py", RELU_METHOD1 + """\
    with open("relu.onnx", "wb") as f:
        f.write(b"not the model")
    """)
    code, rec, out = run(tmp_path, monkeypatch, capsys, script)
    assert code == 0, out.err
    assert "warning" in out.err and "relu.onnx" in out.err and "replaced" in out.err, out.err


def test_the_record_names_the_tags_from_file_not_the_path_typed(tmp_path, monkeypatch, capsys):
    here = tmp_path / "some" / "where"
    here.mkdir(parents=True)
    (here / "Operators.md").write_bytes(DOCS.read_bytes())
    monkeypatch.chdir(tmp_path)
    code = cli.main(["prove", "Relu", "--no-write", "--no-numeric", "--format", "json",
                     "--tags-from", str(here / "Operators.md")])
    rec = json.loads(capsys.readouterr().out)["cases"][0]
    assert code == 0
    assert str(tmp_path) not in rec["tags_from"] and "some/where" not in rec["tags_from"]
    digest = hashlib.sha256(DOCS.read_text(encoding="utf-8").encode()).hexdigest()[:16]
    assert "Operators.md" in rec["tags_from"] and digest in rec["tags_from"]
