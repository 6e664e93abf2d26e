"""torch-prover run: the script runs in a child process and cannot reach the prover.

Each expectation comes from outside the code under test: tags from onnx.defs, process
liveness from /proc, timings from the clock, files the scripts themselves write.
"""
from __future__ import annotations

import functools
import io
import json
import os
import pickle
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import onnx
import pytest
import torch

from torch_prover import cli

REPO = Path(__file__).resolve().parent.parent


def run(tmp_path, monkeypatch, capsys, script, *extra, fmt="json"):
    monkeypatch.chdir(tmp_path)
    code = cli.main(["run", str(script), "--format", fmt, *extra])
    out = capsys.readouterr()
    rec = json.loads(out.out)["cases"][0] if fmt == "json" and code in (0, 1) else None
    return code, rec, out


def write(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def alive(pid: int) -> bool:
    """From /proc: the process exists and is not a zombie (PID 1 here may never reap)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def gone(pids, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


MAX_METHOD1 = """\
    import torch
    class M(torch.nn.Module):
        def forward(self, a, b):
            return torch.maximum(a, b)
    a = torch.randn(3, 4, requires_grad=True)
    b = torch.randn(3, 4, requires_grad=True)
    y = M()(a, b)
    torch.autograd.backward([y], grad_tensors=[torch.ones(3, 4)])
    torch.onnx.export(M(), (a, b), "max.onnx", opset_version=18)
"""

LOOPS_FOREVER = """\
    import os, subprocess, sys
    sleeper = subprocess.Popen(["sleep", "600"])
    with open("pids.txt", "w") as f:
        f.write(f"{os.getpid()} {sleeper.pid}")
    print("looping", flush=True)
    while True:
        pass
"""


# --------------------------------------------------------------------------- time and death
def test_script_that_loops_forever_is_killed_at_the_timeout(tmp_path, monkeypatch, capsys):
    script = write(tmp_path, "loop.py", LOOPS_FOREVER)
    t0 = time.monotonic()
    code, _, out = run(tmp_path, monkeypatch, capsys, script, "--timeout", "5", fmt="text")
    elapsed = time.monotonic() - t0
    assert code == 2
    assert "did not finish within 5 s" in one_line(out.err)
    assert "looping" in out.out                    # its output, still shown
    assert elapsed < 5 + 25, elapsed               # the timeout, plus the child's start
    pids = [int(p) for p in (tmp_path / "pids.txt").read_text().split()]
    assert gone(pids), [p for p in pids if alive(p)]   # the script and what it started


def test_script_dies_with_the_prover(tmp_path):
    """SIGKILL the prover's process: the script's process group goes with it."""
    script = write(tmp_path, "loop.py", LOOPS_FOREVER)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    prover = subprocess.Popen([sys.executable, "-m", "torch_prover", "run", str(script),
                               "--timeout", "600"], cwd=tmp_path, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "pids.txt").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(0.3)
        pids = [int(p) for p in (tmp_path / "pids.txt").read_text().split()]
        assert all(alive(p) for p in pids)
    finally:
        prover.kill()
        prover.wait()
    assert gone(pids), [p for p in pids if alive(p)]


def test_a_script_forked_from_the_console_command_is_killed_at_the_timeout(tmp_path):
    """The console command's own fork (pr/process.Start.FORK) is bounded like the fork
    server's children: killed at --timeout with what it started, one line, exit 2."""
    script = write(tmp_path, "loop.py", LOOPS_FOREVER)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "torch_prover", "run", str(script),
                           "--timeout", "5"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    elapsed = time.monotonic() - t0
    assert done.returncode == 2, done.stderr[-2000:]
    assert "did not finish within 5 s" in one_line(done.stderr)
    assert "looping" in done.stdout                  # its output, still shown
    assert elapsed < 5 + 60, elapsed                 # the timeout, plus torch's import
    pids = [int(p) for p in (tmp_path / "pids.txt").read_text().split()]
    assert gone(pids), [p for p in pids if alive(p)]   # the script and what it started


def test_os_exit_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    script = write(tmp_path, "bye.py", """\
        import os
        print("leaving", flush=True)
        os._exit(3)
    """)
    code, _, out = run(tmp_path, monkeypatch, capsys, script, fmt="text")
    assert code == 2
    assert "exit status 3" in one_line(out.err)
    assert "leaving" in out.out


def test_sys_exit_non_zero_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    script = write(tmp_path, "quit.py", MAX_METHOD1 + "    raise SystemExit(4)\n")
    code, _, out = run(tmp_path, monkeypatch, capsys, script, fmt="text")
    assert code == 2
    assert "exited with status 4" in one_line(out.err)


def test_a_crash_by_signal_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    script = write(tmp_path, "crash.py", """\
        import os, signal
        os.kill(os.getpid(), signal.SIGSEGV)
    """)
    code, _, out = run(tmp_path, monkeypatch, capsys, script, fmt="text")
    assert code == 2
    assert "SIGSEGV" in one_line(out.err)


def test_cwd_and_argv_are_those_of_python_script_py(tmp_path, monkeypatch, capsys):
    sub = tmp_path / "sub"
    sub.mkdir()
    write(sub, "where.py", """\
        import json, os, sys
        json.dump({"cwd": os.getcwd(), "argv": sys.argv, "name": __name__},
                  open("where.json", "w"))
    """)
    code, _, out = run(tmp_path, monkeypatch, capsys, Path("sub") / "where.py", fmt="text")
    assert code == 2                               # nothing exported: nothing to prove
    seen = json.loads((tmp_path / "where.json").read_text())
    assert seen == {"cwd": str(tmp_path), "argv": [os.path.join("sub", "where.py")],
                    "name": "__main__"}
    assert seen["cwd"] == os.getcwd()


# --------------------------------------------------------------------------- the prover's state
PATCHES = """\
    import torch_prover.tags.schema, torch_prover.engine.rules.verdict, torch_prover.engine.probe, torch_prover.engine.prove
    import torch_prover.pr.case
    def flipped(op, opset=None, domain=""):
        import dataclasses
        real = REAL(op, opset, domain)
        flip = {"differentiable": "non-differentiable", "non-differentiable": "differentiable"}
        return dataclasses.replace(real, inputs=tuple(
            dataclasses.replace(f, tag=flip.get(f.tag, f.tag)) for f in real.inputs))
    REAL = torch_prover.tags.schema.schema_tags
    torch_prover.tags.schema.schema_tags = flipped
    torch_prover.engine.prove.schema_tags = flipped
    torch_prover.engine.rules.verdict.decide = lambda **kw: ("disagree", "patched by the script")
    torch_prover.engine.prove.decide = torch_prover.engine.rules.verdict.decide
    torch_prover.engine.probe.probe = lambda case: 1 / 0
    torch_prover.engine.prove.probe = torch_prover.engine.probe.probe
    torch_prover.pr.case.infer_op = lambda model, tracked: ("Abs", ["Abs"])
    open("patched.marker", "w").write("yes")
"""


def test_a_script_cannot_patch_the_prover(tmp_path, monkeypatch, capsys):
    import torch_prover.engine.probe
    import torch_prover.tags.schema
    import torch_prover.engine.rules.verdict
    before = (torch_prover.tags.schema.schema_tags, torch_prover.engine.rules.verdict.decide,
              torch_prover.engine.probe.probe)
    plain = write(tmp_path, "plain.py", MAX_METHOD1)
    patched = write(tmp_path, "patched.py", PATCHES + MAX_METHOD1)
    code_plain, rec_plain, out = run(tmp_path, monkeypatch, capsys, plain)
    assert code_plain == 0, out.err
    code, rec, out = run(tmp_path, monkeypatch, capsys, patched)
    assert (tmp_path / "patched.marker").read_text() == "yes"      # the patches did run
    assert code == 0, out.err
    verdicts = [(p["io"], p["index"], p["tag"], p["verdict"]) for p in rec["parameters"]]
    assert verdicts == [(p["io"], p["index"], p["tag"], p["verdict"])
                        for p in rec_plain["parameters"]]
    schema = onnx.defs.get_schema("Max", rec["opset"])
    assert rec["op"] == "Max" and rec["schema_version"] == schema.since_version
    differentiable = onnx.defs.OpSchema.DifferentiationCategory.Differentiable
    assert schema.inputs[0].differentiation_category == differentiable
    assert schema.outputs[0].differentiation_category == differentiable
    assert verdicts == [("input", 0, "differentiable", "agree"),
                        ("input", 1, "differentiable", "agree"),
                        ("output", 0, "differentiable", "agree")]
    assert (torch_prover.tags.schema.schema_tags, torch_prover.engine.rules.verdict.decide,
            torch_prover.engine.probe.probe) == before


def test_run_in_its_own_process_forks_the_script_from_itself_and_stays_unpatched(
        tmp_path, monkeypatch, capsys):
    """The console command (one script, nothing proved yet) forks the script's process from
    its own (pr/process.Start.FORK, issue 43): the script's process is the prover's child,
    not the prover, and holds every torch_prover module the prover loaded -- patching them
    still changes no verdict; it prints through its own stdout (not the prover's wrapper),
    each line once, into the report. A library call (cli.main, here in pytest's process,
    which has computed with torch) gets the fork server."""
    patched = write(tmp_path, "patched.py", PATCHES + """\
    import os, sys
    open("pids.txt", "w").write(f"{os.getpid()} {os.getppid()}")
    print("stdout is python's own:", sys.stdout is sys.__stdout__)
""" + MAX_METHOD1)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    prover = subprocess.Popen([sys.executable, "-m", "torch_prover", "run", str(patched),
                               "--format", "json"], cwd=tmp_path, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout, stderr = prover.communicate(timeout=600)
    assert prover.returncode == 0, stderr[-3000:]
    pid, parent = map(int, (tmp_path / "pids.txt").read_text().split())
    assert pid != prover.pid and parent == prover.pid
    rec = json.loads(stdout)["cases"][0]
    assert (tmp_path / "patched.marker").read_text() == "yes"      # the patches did run
    assert rec["script"]["isolation"]["process"] == (
        "child (fork of torch-prover's process before it proved anything, own process group)")
    schema = onnx.defs.get_schema("Max", rec["opset"])
    differentiable = onnx.defs.OpSchema.DifferentiationCategory.Differentiable
    assert schema.inputs[0].differentiation_category == differentiable   # variadic
    assert schema.outputs[0].differentiation_category == differentiable
    assert [(p["io"], p["index"], p["tag"], p["verdict"]) for p in rec["parameters"]] == [
        ("input", 0, "differentiable", "agree"), ("input", 1, "differentiable", "agree"),
        ("output", 0, "differentiable", "agree")]
    assert rec["script"]["output"].count("stdout is python's own: True") == 1
    plain = write(tmp_path, "plain.py", MAX_METHOD1)
    code, rec_here, out = run(tmp_path, monkeypatch, capsys, plain)
    assert code == 0, out.err
    assert rec_here["script"]["isolation"]["process"] == (
        "child (multiprocessing forkserver, own process group)")


# --------------------------------------------------------------------------- output cap
LOUD = """\
    for i in range(200_000):
        print("x" * 45, i)
""" + MAX_METHOD1


@pytest.mark.parametrize("fmt", ["json", "markdown", "text"])
def test_ten_megabytes_of_output_are_capped_in_every_format(tmp_path, monkeypatch, capsys, fmt):
    script = write(tmp_path, "loud.py", LOUD)
    code, rec, out = run(tmp_path, monkeypatch, capsys, script, fmt=fmt)
    assert code == 0, out.err[-2000:]
    shown = out.err if fmt != "text" else out.out
    assert len(out.out) + len(out.err) < 300_000
    assert "x" * 45 + " 199999" in shown               # the tail is kept
    assert "x" * 45 + " 0\n" not in shown              # the head is not
    assert "dropped" in shown
    if fmt == "json":
        s = rec["script"]
        assert len(s["output"].splitlines()) <= 200 and len(s["output"].encode()) <= 64 * 1024
        dropped = s["output_truncated"]
        assert dropped["dropped_lines"] >= 200_000 - 200
        assert dropped["dropped_bytes"] >= 9_000_000
    elif fmt == "markdown":
        assert "dropped" in out.out and "the last lines only" in out.out
    else:
        assert "  output: [torch-prover:" in out.out


# --------------------------------------------------------------------------- directives
@pytest.mark.parametrize("directive", ["vjp_tol=inf", "vjp_tol=nan", "fwd_tol=0",
                                       "fwd_tol=-1", "vjp_tol=1", "vjp_tol=1e300",
                                       "fwd_tol=inf", "op=Sofmax"])
def test_directives_that_would_switch_the_check_off_are_refused(tmp_path, monkeypatch,
                                                                 capsys, directive):
    script = write(tmp_path, "tol.py", f"open('ran.marker', 'w')\n# torch-prover: {directive}\n"
                   + textwrap.dedent(MAX_METHOD1))
    code, _, out = run(tmp_path, monkeypatch, capsys, script)
    assert code == 2
    line = one_line(out.err)
    assert directive in line
    assert not (tmp_path / "ran.marker").exists()


def test_directives_appear_in_every_format(tmp_path, monkeypatch, capsys):
    script = write(tmp_path, "tol.py", "# torch-prover: vjp_tol=0.001 fwd_tol=0.5\n"
                   + textwrap.dedent(MAX_METHOD1))
    code, rec, out = run(tmp_path, monkeypatch, capsys, script)
    assert code == 0, out.err
    assert {k: v["value"] for k, v in rec["script"]["directives"].items()} == {
        "fwd_tol": 0.5, "vjp_tol": 0.001}
    assert (rec["numeric"]["fwd_tol"], rec["numeric"]["vjp_tol"]) == (0.5, 0.001)
    for fmt in ("text", "markdown"):
        code, _, out = run(tmp_path, monkeypatch, capsys, script, fmt=fmt)
        assert code == 0
        assert "directive: fwd_tol=0.5" in out.out and "directive: vjp_tol=0.001" in out.out


# --------------------------------------------------------------------------- arguments first
@pytest.mark.parametrize("args, message", [
    (["--op", "Sofmax"], "Softmax"),
    (["--timeout", "0"], "--timeout"),
    (["--timeout", "inf"], "--timeout"),
    (["--timeout", "nan"], "--timeout"),
    (["--tags-from", "missing-Operators.md"], "missing-Operators.md"),
], ids=["op", "timeout-0", "timeout-inf", "timeout-nan", "tags-from"])
def test_arguments_are_checked_before_the_script_runs(tmp_path, monkeypatch, capsys, args,
                                                      message):
    script = write(tmp_path, "s.py", "open('ran.marker', 'w')\n" + textwrap.dedent(MAX_METHOD1))
    code, _, out = run(tmp_path, monkeypatch, capsys, script, *args)
    assert code == 2
    assert message in one_line(out.err)
    assert not (tmp_path / "ran.marker").exists()


@pytest.mark.parametrize("which", ["missing", "directory"])
def test_the_script_path_must_be_a_file(tmp_path, monkeypatch, capsys, which):
    target = tmp_path / "nothing.py" if which == "missing" else tmp_path
    code, _, out = run(tmp_path, monkeypatch, capsys, target)
    assert code == 2 and str(target) in one_line(out.err)


# --------------------------------------------------------------------------- what crosses
def test_the_prover_refuses_to_unpickle_what_the_child_wrote(tmp_path):
    """torch.export.load falls back to full unpickling for some payloads; while the prover
    loads a script's program, that path is closed."""
    from torch.export.pt2_archive import _package

    from torch_prover.pr.module import _weights_only

    class Boom:
        def __reduce__(self):
            return (open, (str(tmp_path / "pwned"), "w"))
    buf = io.BytesIO()
    pickle.dump(Boom(), buf)
    for load in (lambda: torch.load(io.BytesIO(buf.getvalue()), weights_only=False),
                 lambda: torch._C._pickle_load_obj(buf.getvalue()),
                 lambda: _package.pickle.loads(buf.getvalue())):
        with _weights_only(), pytest.raises(Exception):  # noqa: B017 - any refusal will do; only the file matters
            load()
    assert not (tmp_path / "pwned").exists()


def test_the_module_crosses_as_a_graph_with_its_parameter_names(tmp_path, monkeypatch, capsys):
    script = write(tmp_path, "lin.py", """\
        import torch
        fc = torch.nn.Linear(3, 2)
        x = torch.randn(4, 3, requires_grad=True)
        fc(x).backward(torch.ones(4, 2))
        torch.onnx.export(fc, (x,), "lin.onnx", opset_version=18)
    """)
    code, rec, out = run(tmp_path, monkeypatch, capsys, script)
    assert code == 0, out.err
    assert rec["script"]["isolation"]["module"] == "torch.export"
    inits = {t.name for t in onnx.load(tmp_path / "lin.onnx").graph.initializer}
    sources = {p["source"] for p in rec["parameters"] if p["io"] == "input"}
    assert {"param weight", "param bias"} <= sources and {"weight", "bias"} <= inits


def test_a_module_that_cannot_cross_is_one_line_and_exit_2(tmp_path, monkeypatch):
    """When neither torch.export nor TorchScript can save the module, there is no autograd
    probe to run: exit 2, saying why. (Both broken here in this process: a script that
    breaks them in its own is refused as tampering, the next test.)"""
    from torch_prover.pr.module import ModuleLoadError, load_module, save_module

    def refuse(*args, **kwargs):
        raise RuntimeError("not today")
    monkeypatch.setattr(torch.export, "export", refuse)
    monkeypatch.setattr(torch.jit, "trace", refuse)
    module = torch.nn.Tanh()
    saved = save_module(module, [torch.randn(2)], [True], ((torch.randn(2),), {}), True,
                        tmp_path)
    with pytest.raises(ModuleLoadError) as info:
        load_module(tmp_path, saved, {})
    line = str(info.value)
    assert "could not be saved as a graph" in line
    assert "torch.export: RuntimeError: not today" in line
    assert "TorchScript: RuntimeError: not today" in line


def test_a_script_that_replaces_what_the_collection_calls_is_refused(tmp_path, monkeypatch,
                                                                     capsys):
    """The module is saved in the script's process, after the script: a script that
    replaced torch.export.export there could hand over any graph (issue 22)."""
    script = write(tmp_path, "sabotage.py", MAX_METHOD1 + """\
    def refuse(*args, **kwargs):
        raise RuntimeError("not today")
    torch.export.export = torch.jit.trace = refuse
    """)
    code, _, out = run(tmp_path, monkeypatch, capsys, script)
    assert code == 2
    line = one_line(out.err)
    assert "replaced torch-prover's own code" in line
    assert "torch.export.export" in line and "torch.jit.trace" in line


def _trace_fingerprint_after(monkeypatch, replacement) -> list[str]:
    """tampered() for torch.jit.trace rebound to ``replacement(original)`` (restored after)."""
    from torch_prover.pr.child import code_fingerprint, tampered, torch_disable
    torch_own = torch_disable()
    before = code_fingerprint(torch_own)
    monkeypatch.setattr(torch.jit, "trace", replacement(torch.jit.trace))
    return tampered(before, code_fingerprint(torch_own))


def test_torchs_own_dynamo_rebinding_of_jit_trace_is_not_tampering(monkeypatch):
    """Dynamo's first use rebinds torch.jit.trace to disable(torch.jit.trace) exactly like
    this (TorchPatcher.patch, torch/_dynamo/eval_frame.py): the same function, run."""
    import torch._dynamo
    assert _trace_fingerprint_after(monkeypatch, lambda f: torch._dynamo.disable(
        f, reason="tracing into TorchScript not fully supported")) == []


def _cell_rewritten(original):
    import torch._dynamo
    wrapper = torch._dynamo.disable(original)
    cell = dict(zip(wrapper.__code__.co_freevars, wrapper.__closure__))["fn"]
    cell.cell_contents = lambda *args, **kwargs: None
    return wrapper


def _callback_set(original):
    import torch._dynamo
    wrapper = torch._dynamo.disable(original)
    dict(zip(wrapper.__code__.co_freevars, wrapper.__closure__))["self"].cell_contents.callback = print
    return wrapper


def _disable_of_another(original):
    import torch._dynamo
    return torch._dynamo.disable(lambda *args, **kwargs: None)


def _same_closure_other_code(original):
    """A forgery shaped like torch's wrapper: cells fn (the original) and self (a genuine
    DisableContext), its own code."""
    from torch._dynamo.eval_frame import DisableContext
    fn, self = original, DisableContext()

    def _fn(*args, **kwargs):
        return (self, fn) and None
    return _fn


@pytest.mark.parametrize("forge", [
    lambda f: (lambda *args, **kwargs: None),                                # a plain forgery
    lambda f: functools.wraps(f)(lambda *args, **kwargs: None),              # __wrapped__ = f
    _disable_of_another, _cell_rewritten, _callback_set, _same_closure_other_code,
], ids=["lambda", "functools-wraps", "disable-of-another", "cell-rewritten", "callback-set",
        "same-closure-other-code"])
def test_any_other_rebinding_of_jit_trace_is_tampering(monkeypatch, forge):
    assert _trace_fingerprint_after(monkeypatch, forge) == ["torch.jit.trace"]


TORCH_COND = """\
    import torch
    class M(torch.nn.Module):
        def forward(self, pred, x, y):
            return torch.cond(pred, lambda x, y: x * y, lambda x, y: x + y, (x, y))
    x = torch.randn(2, 3, requires_grad=True)
    y = torch.randn(2, 3, requires_grad=True)
    out = M()(torch.tensor(True), x, y)
    out.backward(torch.ones(2, 3))
    torch.onnx.export(M(), (torch.tensor(True), x, y), "if.onnx", dynamo=True)
"""


def test_a_script_using_dynamo_is_proved_but_one_forging_jit_trace_after_it_is_not(
        tmp_path, monkeypatch, capsys):
    """torch.cond runs dynamo, which rebinds torch.jit.trace in the script's process: the
    proof goes on (the sweep's If/Loop/Scan scripts were refused). The same script then
    replacing torch.jit.trace itself is still refused."""
    honest = write(tmp_path, "cond.py", TORCH_COND + """\
    assert torch.jit.trace.__code__ is not torch.jit._trace.trace.__code__  # dynamo's rebinding
    """)
    code, rec, out = run(tmp_path, monkeypatch, capsys, honest)
    assert code in (0, 1), out.err
    assert rec["op"] == "If"
    forged = write(tmp_path, "cond_forged.py", TORCH_COND + """\
    torch.jit.trace = lambda *args, **kwargs: None
    """)
    code, _, out = run(tmp_path, monkeypatch, capsys, forged)
    assert code == 2
    assert "replaced torch-prover's own code" in one_line(out.err)
    assert "torch.jit.trace" in one_line(out.err)


def test_a_process_running_threads_forks_no_script_from_itself(tmp_path, monkeypatch):
    """pr/process.Start.FORK is refused while another thread runs here (a fork copies a lock
    that thread may hold, held, into the script's process): the fork server starts it."""
    import threading

    from torch_prover.pr.process import ChildEnd, Start, run_child
    script = write(tmp_path, "hello.py", 'print("hello")\n')
    monkeypatch.chdir(tmp_path)
    release = threading.Event()
    busy = threading.Thread(target=release.wait, daemon=True)
    busy.start()
    try:
        out = tmp_path / "capture"
        out.mkdir()
        done = run_child(str(script), out, 120, start=Start.FORK)
    finally:
        release.set()
        busy.join()
    assert done.start is Start.FORK_SERVER
    assert done.end is ChildEnd.FINISHED and "hello" in done.output.text
