"""The proof script's own process: run it instrumented, hand back plain data, exit.

Why a child process at all: ``torch-prover run`` executes a contributor's script, which
is arbitrary code. Run in the prover's process it could patch the prover (flip a tag,
replace the verdict rule), hang it, or end it with ``os._exit``. Here it runs in a process
of its own; what it did comes back as data (:mod:`wire`) and the proof is made by
the prover from that data (:mod:`runner`).

Why a fork (see :mod:`process`): a child forked from a process that has already
imported torch, onnx and this module starts in milliseconds, where a fresh interpreter
(spawn, or ``subprocess``) pays ~4 s of imports per script. ``scripts/sweep_scripts.py``,
running hundreds of scripts, forks each from multiprocessing's "forkserver", which never
runs a script; the console ``run``, one script per process, forks it from the prover
before the prover proves anything (``process.Start``). Each script gets a fresh fork, so
no script can alter the server, the prover, or the next script.

In the child, :func:`child_main`: becomes the leader of a new process group (so a timeout
kills the script's own children too), starts a thread that kills that group when the
prover's process goes away, points stdout and stderr at the prover's pipe, takes the
prover's cwd and environment and ``sys.argv == [script]`` (like ``python script.py``),
runs the script with the backward and export entry points instrumented
(:mod:`capture`, :mod:`export`), collects (:mod:`collect`), writes
the capture and leaves with ``os._exit`` -- threads the script left behind do not hold it.
"""
from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import threading
import traceback
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import torch
import torch.onnx

from ..errors import describe
from .collect import collect
from .capture import (ScriptRun, backward_call, func_grad, func_vjp, grad_call, recording,
                      tensor_backward_call)
from .export import wrap_export
from .sink import wrap_save
from .reap import become_subreaper, kill_tree
from .script_file import script_text
from .wire import Capture, Outcome, write_capture


@dataclass(frozen=True)
class ChildJob:
    """What the child needs to run the script as ``python SCRIPT`` would, from the prover."""

    script: str                 # as given on the command line: sys.argv[0]
    cwd: str
    env: dict[str, str]
    outdir: str                 # where the capture goes (absolute)
    inherited: tuple[int, ...] = ()   # the prover's pipe ends a plain fork inherits: closed


# ============================================================================ instrumented run
@contextlib.contextmanager
def instrumented(run: ScriptRun):
    """Patch the autograd entry points and torch.onnx.export for the duration of the block."""
    import torch.onnx.utils as onnx_utils
    patches = [
        (torch.autograd, "backward", recording(run, torch.autograd.backward, backward_call)),
        (torch.Tensor, "backward", recording(run, torch.Tensor.backward, tensor_backward_call)),
        (torch.autograd, "grad", recording(run, torch.autograd.grad, grad_call)),
        (torch.func, "grad", func_grad(run, torch.func.grad, "torch.func.grad")),
        (torch.func, "grad_and_value", func_grad(run, torch.func.grad_and_value,
                                                 "torch.func.grad_and_value")),
        (torch.func, "vjp", func_vjp(run, torch.func.vjp)),
        (torch.onnx, "export", wrap_export(run, torch.onnx.export)),
        (onnx_utils, "export", wrap_export(run, torch.onnx.export, default_dynamo=False)),
        (torch.onnx.ONNXProgram, "save", wrap_save(run, torch.onnx.ONNXProgram.save)),
    ]
    saved = [(owner, name, owner.__dict__[name]) for owner, name, _ in patches]
    try:
        for owner, name, new in patches:
            setattr(owner, name, new)
        yield run
    finally:
        for owner, name, old in saved:
            setattr(owner, name, old)


def _run_as_main(path: Path, argv0: str) -> None:
    """What ``python SCRIPT`` does: the file's code in a fresh ``__main__`` module, with
    ``__file__`` absolute and ``sys.argv[0]`` as given (``runpy.run_path`` would make both
    the absolute path)."""
    main = types.ModuleType("__main__")
    main.__file__, main.__cached__ = str(path), None
    code = compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    sys.argv = [argv0]
    try:
        exec(code, main.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def execute(run: ScriptRun, argv0: str) -> None:
    """Run the script as ``__main__`` (``sys.argv == [argv0]``, its directory first on
    ``sys.path``), instrumented; how it ended goes into ``run``."""
    argv, sys_path = sys.argv[:], sys.path[:]
    sys.path.insert(0, str(run.path.parent))
    try:
        with instrumented(run):
            _run_as_main(run.path, argv0)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            run.ended, run.error = Outcome.EXITED, f"the script exited with status {exc.code}"
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the script's own failure, reported, not ours
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(run.path)]
        where = f" (line {frames[-1].lineno} of {run.path.name})" if frames else ""
        run.ended, run.error = Outcome.RAISED, f"the script raised {describe(exc)}{where}"
        run.traceback = "".join(traceback.format_exception(exc))
    finally:
        sys.argv[:], sys.path[:] = argv, sys_path


class _Tee(io.TextIOBase):
    """Keeps what the script prints and still shows it."""

    def __init__(self, echo: TextIO | None):
        self.echo, self.buf = echo, io.StringIO()

    def write(self, s: str) -> int:
        self.buf.write(s)
        if self.echo is not None:
            self.echo.write(s)
        return len(s)

    def flush(self) -> None:
        if self.echo is not None:
            self.echo.flush()


def run_script(path: str | os.PathLike, echo: TextIO | None = None) -> ScriptRun:
    """Run ``path`` instrumented **in this process**, keeping its stdout in ``run.output``.

    Only for code that is already isolated: the child below, and tests of the capture
    itself. ``torch-prover run`` never calls this in the prover's process."""
    path = Path(path)
    run = ScriptRun(path.resolve(), script_text(path))
    tee = _Tee(echo)
    with contextlib.redirect_stdout(tee):
        execute(run, str(path))
    run.output = tee.buf.getvalue()
    return run


# ============================================================================ tampering
COLLECTION_CODE = ("torch_prover.pr.child", "torch_prover.pr.collect", "torch_prover.pr.capture",
                   "torch_prover.pr.module", "torch_prover.pr.wire", "torch_prover.pr.export",
                   "torch_prover.pr.script_file", "torch_prover.pr.sink", "torch_prover.engine.export",
                   "torch_prover.errors", "torch_prover.engine.probe.flatten_outputs",
                   "torch.export.export", "torch.export.save", "torch.jit.trace",
                   "torch.jit.save", "torch.save")
"""What runs in the script's process after the script: the collection's modules (every
function and class in them) and the functions it calls elsewhere."""


@dataclass(frozen=True)
class TorchDisable:
    """torch's own dynamo ``disable`` wrapper, as it is before the script runs: the code
    object of the wrapper it builds around a function and its context class."""

    code: types.CodeType
    context: type


def torch_disable() -> TorchDisable:
    """Taken before the script runs (:func:`child_main` keeps it in a local: a module
    global here would be a non-callable a script could reassign unseen). torch._dynamo is
    imported by then in the forkserver's children (server.py's export), else here."""
    import torch._dynamo
    from torch._dynamo.eval_frame import DisableContext

    def probe() -> None:
        pass
    return TorchDisable(torch._dynamo.disable(probe).__code__, DisableContext)


def code_fingerprint(torch_own: TorchDisable | None = None) -> dict[str, tuple[int, int]]:
    """(id, id of its code) of every function of :data:`COLLECTION_CODE`.

    The collection runs in the script's process, after the script: a script that replaced
    one of these (``torch_prover.pr.child.collect = forged``) could hand over evidence of
    its choosing. Taken before the script runs and compared after it (:func:`tampered`).
    What the prover alone runs (tags, verdicts, the probe) a script may patch at will: its
    process never uses them (tests/test_script_isolation.py). ``torch_own``: see through
    torch's own dynamo ``disable`` wrappers (:func:`_dynamo_disabled`)."""
    seen: dict[str, tuple[int, int]] = {}

    def note(name: str, value: object) -> None:
        if callable(value):
            if torch_own is not None:
                value = _dynamo_disabled(value, torch_own)
            seen[name] = (id(value), id(getattr(value, "__code__", None)))
    for name in COLLECTION_CODE:
        mod = sys.modules.get(name)
        if mod is None:                       # a function: module.attribute
            owner, _, attr = name.rpartition(".")
            if sys.modules.get(owner) is not None:
                note(name, getattr(sys.modules[owner], attr, None))
            continue
        for key, value in list(vars(mod).items()):
            note(f"{name}.{key}", value)
            if isinstance(value, type) and value.__module__ == name:
                for attr, member in list(vars(value).items()):
                    note(f"{name}.{key}.{attr}", member)
    return seen


def _dynamo_disabled(value: object, torch_own: TorchDisable) -> object:
    """The function ``value`` is torch's own dynamo ``disable`` wrapper of, else ``value``.

    Why: dynamo's first use in a process (torch.cond, torch.compile, a strict
    torch.export: ``TorchPatcher.patch`` in torch/_dynamo/eval_frame.py) rebinds
    ``torch.jit.trace = disable(torch.jit.trace, ...)``. A wrapper that runs the very
    function it wraps, with dynamo off, changes nothing the collection relies on, so the
    fingerprint sees through it -- but only through torch's own: a plain function whose
    code object is the one torch's ``disable`` built before the script ran (not
    ``__wrapped__`` or other attributes anyone may set), whose ``self`` is of that
    ``DisableContext`` class and installs no dynamo callback, and whose ``fn`` is what it
    calls. Anything else (a forged wrapper, a genuine one around another function, one
    whose closure was rewritten) is fingerprinted as itself, so a replacement shows.
    (Applying ``TorchPatcher.patch`` before the script instead would also turn off
    torch.distributions' argument checks for every script, unlike ``python script.py``.)"""
    if type(value) is not types.FunctionType or value.__code__ is not torch_own.code:
        return value
    cells = dict(zip(value.__code__.co_freevars, value.__closure__ or ()))
    try:
        ctx, inner = cells["self"].cell_contents, cells["fn"].cell_contents
    except (KeyError, ValueError):            # an empty cell
        return value
    if type(ctx) is not torch_own.context or vars(ctx).get("callback", ...) is not None:
        return value
    return inner


def tampered(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]
             ) -> list[str]:
    """The names whose function (or its code) changed or vanished between the two."""
    return sorted(name for name, ident in before.items() if after.get(name) != ident)


# ============================================================================ the child
def _die_with(parent: Any) -> None:
    """Kill this process group once the prover's end of ``parent`` closes (it never sends:
    ``recv`` returns only when the prover's process has gone)."""
    def watch() -> None:
        try:
            parent.recv_bytes()
        except (EOFError, OSError):
            pass
        kill_tree(os.getpid(), include_root=False)   # daemons outside the group too
        os.killpg(0, signal.SIGKILL)
    threading.Thread(target=watch, name="torch-prover-watch-parent", daemon=True).start()


def _to_pipe(out: Any) -> None:
    """stdout and stderr (the file descriptors, so subprocesses too) into the prover's pipe,
    line-buffered so what was printed before a crash or a kill still arrives."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os.dup2(out.fileno(), 1)
    os.dup2(out.fileno(), 2)
    out.close()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.reconfigure(line_buffering=True)


def child_main(job: ChildJob, out: Any, parent: Any) -> None:
    """The child's whole life (multiprocessing target): never returns."""
    os.setsid()
    for fd in job.inherited:   # process.Start.FORK: the prover's ends, never the script's
        with contextlib.suppress(OSError):
            os.close(fd)
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__   # not the prover's wrappers
    become_subreaper()     # a daemon the script starts stays below us (reap.py)
    _die_with(parent)
    _to_pipe(out)
    where = Path(job.outdir)
    try:
        os.chdir(job.cwd)
        os.environ.clear()
        os.environ.update(job.env)
        path = Path(job.script)
        run = ScriptRun(path.resolve(), script_text(path))
        # bound before the script runs: what it rebinds in our modules is not called
        fingerprint, compare, collect_run = code_fingerprint, tampered, collect
        torch_own = torch_disable()
        before = fingerprint(torch_own)
        execute(run, job.script)
        changed = compare(before, fingerprint(torch_own))
        if changed:
            capture = Capture(Outcome.TAMPERED, problem=(
                f"the script replaced torch-prover's own code in its process "
                f"({', '.join(changed[:3])}{', ...' if len(changed) > 3 else ''}): what that "
                "process would report cannot be trusted, so nothing is proved"))
        else:
            capture = collect_run(run, where)
    except BaseException as exc:  # ours, after or around the script: say so, do not hang
        capture = Capture(Outcome.RUNNER_FAILED, problem=f"torch-prover's child failed: "
                                                         f"{describe(exc)}")
    try:
        write_capture(where, capture)
    except BaseException as exc:  # nothing to hand back: the prover sees no capture
        with contextlib.suppress(Exception):
            sys.stderr.write(f"torch-prover: could not write the capture: {describe(exc)}\n")
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    kill_tree(os.getpid(), include_root=False)   # what the script left running, daemons too
    os._exit(0)
