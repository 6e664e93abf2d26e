"""``torch-prover run SCRIPT.py``: run a classic proof script unmodified, prove what it exported.

Why: ONNX contributors attach "Method 1" scripts to PRs (a one-op module, a backward pass
with a ``dy``, a ``torch.onnx.export``) and reviewers read them. Rather than asking anyone
to rewrite those scripts, the runner executes one as is, in-process (``runpy``), with
``torch.autograd.backward``, ``Tensor.backward``, ``torch.autograd.grad`` and
``torch.onnx.export`` instrumented. What the script exported -- module, inputs, model --
becomes a :class:`Case` whose exported model is the script's own, so mapping, numeric
check and verdicts are the engine's, on the very graph the script wrote.

Old habits keep working: when the script's own export would fail on current PyTorch (an
open file object, an opset below the dynamo exporter's minimum, legacy positional
arguments, options torch no longer accepts), the runner exports in a way that works,
writes the file the script asked for, and says what it did.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import os
import runpy
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import torch

from .case import CaseError, describe
from .script_capture import ScriptRun, _backward_call, _grad_call, _recording, _tensor_backward_call
from .script_case import Prepared, prepare
from .script_export import _shown, _wrap_export
from .prove import prove_case

@contextlib.contextmanager
def instrumented(run: ScriptRun):
    """Patch the autograd entry points and torch.onnx.export for the duration of the block."""
    import torch.onnx.utils as onnx_utils
    patches = [
        (torch.autograd, "backward", _recording(run, torch.autograd.backward, _backward_call)),
        (torch.Tensor, "backward", _recording(run, torch.Tensor.backward, _tensor_backward_call)),
        (torch.autograd, "grad", _recording(run, torch.autograd.grad, _grad_call)),
        (torch.onnx, "export", _wrap_export(run, torch.onnx.export)),
        (onnx_utils, "export", _wrap_export(run, torch.onnx.export, default_dynamo=False)),
    ]
    saved = [(owner, name, owner.__dict__[name]) for owner, name, _ in patches]
    try:
        for owner, name, new in patches:
            setattr(owner, name, new)
        yield run
    finally:
        for owner, name, old in saved:
            setattr(owner, name, old)


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
    """Execute ``path`` as ``__main__`` (cwd unchanged, like ``python SCRIPT.py``), instrumented."""
    path = Path(path)
    if not path.is_file():
        from .cli import UsageError
        raise UsageError(f"no such script: {path}")
    run = ScriptRun(path.resolve(), path.read_text(encoding="utf-8"))
    tee = _Tee(echo)
    argv, sys_path = sys.argv[:], sys.path[:]
    sys.argv = [str(path)]
    sys.path.insert(0, str(run.path.parent))
    try:
        with instrumented(run), contextlib.redirect_stdout(tee):
            runpy.run_path(str(run.path), run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            run.error = f"the script exited with status {exc.code}"
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the script's own failure, reported, not ours
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(run.path)]
        where = f" (line {frames[-1].lineno} of {path.name})" if frames else ""
        run.error = f"the script raised {describe(exc)}{where}"
        run.traceback = "".join(traceback.format_exception(exc))
    finally:
        sys.argv[:], sys.path[:] = argv, sys_path
    run.output = tee.buf.getvalue()
    return run


# ============================================================================ the case
def _grad_class(g: torch.Tensor | None) -> str:
    if g is None:
        return "None"
    g = g.detach()
    if not bool((g != 0).any()):
        return "zero"
    return f"nonzero (max |grad| {float(g.abs().max()):.3g})"


def _which_output(t: torch.Tensor, outputs: tuple[torch.Tensor, ...]) -> int | None:
    """The module output ``t`` is (equal values; else the only one of its shape and dtype)."""
    alike = [j for j, o in enumerate(outputs) if o.shape == t.shape and o.dtype == t.dtype]
    try:
        same = [j for j in alike if torch.equal(outputs[j], t.detach())]
    except Exception:   # not a plain tensor
        same = []
    if same:
        return same[0]
    return alike[0] if len(alike) == 1 else None


def script_evidence(run: ScriptRun, prep: Prepared) -> dict[str, Any]:
    """What the script's own backward showed: which outputs got a dy, which tensors a grad."""
    given: dict[int, torch.Tensor] = {}
    for call in run.backward:
        for g, r in zip(call.inputs, call.results):
            given[id(g)] = r
    grads: dict[str, str] = {}
    for name, t in zip(prep.case.names, prep.leaves):
        if id(t) in given:
            grads[name] = _grad_class(given[id(t)])
        elif t.is_floating_point() and t.requires_grad:
            grads[name] = _grad_class(t.grad)
    for name, p in prep.case.model().named_parameters():   # the script's module itself
        if id(p) in given or p.grad is not None:
            grads[f"param {name}"] = _grad_class(given.get(id(p), p.grad))
    calls = []
    for call in run.backward:
        targets = []
        for t, dy in zip(call.tensors, call.dys):
            j = _which_output(t, prep.outputs)
            what = (f"output {j}" if j is not None
                    else f"a {tuple(t.shape)} tensor computed from the outputs")
            targets.append(what + (" with a dy" if dy is not None else " (implicit dy)"))
        calls.append({"api": call.api, "targets": targets, "error": call.error})
    return {"backward": calls, "gradients": grads}


def _consistency(evidence: dict[str, Any], proof) -> list[str]:
    """Where the script's own gradients and the probe's evidence tell different stories."""
    notes = []
    by_name = {e.label: e for e in proof.probe.inputs}
    by_name.update({f"param {n}": e for n, e in proof.probe.params.items()})
    for name, seen in evidence["gradients"].items():
        e = by_name.get(name)
        if e is None:
            continue
        script_says = "grad" if seen.startswith("nonzero") else seen
        if (script_says == "grad") != (e.evidence == "grad"):
            notes.append(f"the script's own gradient for {name} is {seen.split(' (')[0]}, the "
                         f"probe finds {e.evidence} over seeds {list(proof.case.seeds)}")
    return notes


def script_record(run: ScriptRun, prep: Prepared, evidence: dict[str, Any],
                  consistency: list[str]) -> dict[str, Any]:
    call = next(c for c in reversed(run.exports) if c.model is not None)
    return {
        "path": str(run.path),
        "sha256": hashlib.sha256(run.source.encode()).hexdigest(),
        "output": run.output,
        "export": {"exporter": call.exporter, "opset": prep.exported.opset,
                   "file": call.target, "file_sha256": call.file_sha256,
                   "options": {k: v for k, v in call.options.items()
                               if isinstance(v, (bool, int, float, str, list, tuple))}},
        "runner_notes": prep.notes,
        "renamed": prep.renamed,
        "op_from": prep.op_from,
        "op_inferred": prep.inferred,
        "op_candidates": prep.candidates,
        "backward": evidence["backward"],
        "gradients": evidence["gradients"],
        "consistency": consistency,
    }


def script_lines(rec: dict[str, Any]) -> list[str]:
    """The run as a reviewer reads it: what ran, what the runner changed, what it showed."""
    s = rec["script"]
    e = s["export"]
    lines = [f"script {Path(s['path']).name} (sha256 {s['sha256'][:12]}): exported with the "
             f"{e['exporter']} exporter at opset {e['opset']}"
             + (f" to {_shown(e['file'])}" if e["file"] else "")]
    lines += [f"  runner: {n}" for n in s["runner_notes"]]
    if s["op_from"] == "graph":
        lines.append(f"  target op {rec['op']}: inferred from the graph (ops on the inputs: "
                     f"{', '.join(s['op_candidates'])})")
    else:
        lines.append(f"  target op {rec['op']}: from {s['op_from']}" + (
            f" (the graph alone says {s['op_inferred']})" if s["op_inferred"] not in
            (None, rec["op"]) else ""))
    for b in s["backward"]:
        lines.append(f"  backward: {b['api']} on {', '.join(b['targets']) or 'nothing'}"
                     + (f" -> {b['error']}" if b["error"] else ""))
    if s["gradients"]:
        lines.append("  the script's gradients: " + "; ".join(
            f"{k} {v}" for k, v in s["gradients"].items()))
    lines += [f"  note: {n}" for n in s["consistency"]]
    file = f"{Path(e['file']).name} (sha256 {e['file_sha256'][:12]})" if e["file_sha256"] \
        else "the model the script exported (not written to a file)"
    if s["renamed"]:
        lines.append(f"  proved model: {file} with graph values renamed " + ", ".join(
            f"{a} -> {b}" for a, b in s["renamed"].items()) + " (the evidence layout's names)")
    elif e["file_sha256"] == rec["model"]["sha256"]:
        lines.append(f"  proved model: {file}, byte for byte")
    else:
        lines.append(f"  proved model: {file}, re-serialized "
                     f"(sha256 {rec['model']['sha256'][:12]})")
    return lines


def script_markdown(rec: dict[str, Any]) -> str:
    s = rec["script"]
    out = ["**How torch-prover ran the script**", ""]
    out += [f"- {line.strip()}" for line in script_lines(rec)]
    if s["output"].strip():
        out += ["", "<details><summary>script output</summary>", "", "```text",
                s["output"].rstrip(), "```", "", "</details>"]
    return "\n".join(out) + "\n"


# ============================================================================ command
def _tags(path: str | None):
    from .cli import UsageError
    if not path:
        return None, "onnx.defs"
    try:
        from .cli import _tag_source
        tags, label, _ = _tag_source(path)
    except ImportError as exc:
        raise UsageError("--tags-from is not available yet in this build (no "
                         "torch_prover.operators_md)") from exc
    except (OSError, ValueError) as exc:
        raise UsageError(f"--tags-from {path}: {exc}") from exc
    return tags, label


@dataclass
class ScriptProof:
    run: ScriptRun
    prepared: Prepared
    proof: Any          # torch_prover.prove.Proof
    record: dict[str, Any]


def prove_script(path: str | os.PathLike, *, op: str | None = None, numeric: bool = True,
                 tags=None, tag_source: str = "onnx.defs",
                 echo: TextIO | None = None) -> ScriptProof:
    """Run the script at ``path`` (cwd unchanged) and prove what it exported. The record is
    the proof record with a ``script`` section (what ran, what the runner changed)."""
    return prove_run(run_script(path, echo=echo), op=op, numeric=numeric, tags=tags,
                     tag_source=tag_source)


def prove_run(run: ScriptRun, *, op: str | None = None, numeric: bool = True, tags=None,
              tag_source: str = "onnx.defs") -> ScriptProof:
    """Prove what an instrumented run exported (UsageError when it gives nothing to prove)."""
    from .cli import UsageError
    prep = prepare(run, op)
    try:
        proof = prove_case(prep.case, exported=prep.exported, numeric=numeric, tags=tags,
                               tag_source=tag_source)
    except CaseError as exc:
        raise UsageError(f"cannot prove the script's export: {exc}") from exc
    evidence = script_evidence(run, prep)
    rec = proof.record()
    rec["script"] = script_record(run, prep, evidence, _consistency(evidence, proof))
    return ScriptProof(run, prep, proof, rec)


def cmd_run(args) -> int:
    """``torch-prover run SCRIPT.py``: run, prove, report; exit 0 / 1 (finding) / 2 (usage)."""
    from . import report
    from .cli import EXIT_FINDING, EXIT_OK
    tags, label = _tags(args.tags_from)
    fmt = args.format
    echo = sys.stdout if fmt == "text" else sys.stderr   # stdout stays pure JSON / Markdown
    run = run_script(args.script, echo=echo)
    if run.traceback and getattr(args, "debug", False):
        sys.stderr.write(run.traceback)
    done = prove_run(run, op=args.op, numeric=not args.no_numeric, tags=tags, tag_source=label)
    proof, rec = done.proof, done.record
    if not args.no_write:
        from .evidence import write_proof
        where = write_proof(Path(args.out), proof)
        print(f"evidence written to {where}", file=sys.stderr)
    if fmt == "json":
        sys.stdout.write(report.to_json(rec))
    elif fmt == "markdown":
        sys.stdout.write(report.proof_markdown(rec, script=done.run.source) + "\n"
                         + script_markdown(rec))
    else:
        if done.run.output and not done.run.output.endswith("\n"):
            print()
        sys.stdout.write("\n".join(script_lines(rec)) + "\n" + report.proof_text(rec))
    return EXIT_FINDING if proof.failures else EXIT_OK
