"""``torch-prover run SCRIPT.py``: run a classic proof script unmodified, prove what it exported.

Why: ONNX contributors attach "Method 1" scripts to PRs (a one-op module, a backward pass
with a ``dy``, a ``torch.onnx.export``) and reviewers read them. Rather than asking anyone
to rewrite those scripts, the runner executes one as is and proves the very model it wrote.

The script is untrusted code, so it never runs in the prover's process:

1. the arguments are checked first (the script exists, ``--op`` names a real op,
   ``--tags-from`` parses, ``--timeout`` is a positive number, the script's directives are
   valid), so a typo costs nothing and the script does not run for it;
2. the script runs in a child process (:mod:`process`, :mod:`child`) with
   ``torch.autograd.backward``, ``Tensor.backward``, ``torch.autograd.grad`` and
   ``torch.onnx.export`` instrumented, within ``--timeout``; its output is kept to a tail;
3. what comes back is data (:mod:`wire`): the exported ONNX model, the input
   tensors, the script's own evidence, the runner's notes, and the module as a graph
   (:mod:`module`) -- no pickles, no code of the script's;
4. the prover builds a :class:`Case` from that data (:mod:`case`) and proves it with
   the same engine as ``prove``: mapping, numeric check and verdicts on the script's graph,
   the autograd probe on its module. A script that patched torch_prover patched only its
   own process.

The proof is about the script's model: its export call runs as written, so its file is what
``python script.py`` writes; where that model cannot be proved as is, an evidence copy is
exported in memory and the report says what differs and why; where the call as written
raises on current PyTorch (an open file object, legacy positional arguments, options torch
no longer accepts), the runner exports in a way that works and says so (:mod:`export`).
With ``--all-ops`` every other computing node of the graph is proved too, in context.
"""
from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ..errors import CaseError
from ..preflight import positive_seconds
from .child import run_script  # noqa: F401 - the in-process capture, for its tests
from .process import DEFAULT_TIMEOUT, ChildEnd, Output, Start, run_child
from .script_file import ScriptFileError, script_text
from .nodes import over_nodes
from .report import script_lines, script_markdown, script_record, shown_output


def _usage(message: str) -> Exception:
    from ..errors import UsageError
    return UsageError(message)


def _tags(path: str | None):
    if not path:
        return None, "onnx.defs"
    try:
        from ..preflight import tag_source
        tags, label, _ = tag_source(path)
    except (OSError, ValueError) as exc:
        raise _usage(f"--tags-from {path}: {exc}") from exc
    return tags, label


def check_arguments(script: str | os.PathLike, op: str | None, timeout: float
                    ) -> tuple[Path, str | None]:
    """(script path, canonical op): checked before anything runs (UsageError /
    UnknownOpError, one line, exit 2)."""
    from ..preflight import not_empty
    from ..tags.schema import canonical_op
    path = Path(not_empty(script, "SCRIPT"))
    if not path.exists():
        raise _usage(f"no such script: {path}")
    if not path.is_file():
        raise _usage(f"not a file: {path}")
    positive_seconds(float(timeout), "--timeout")
    try:
        script_text(path)
    except ScriptFileError as exc:
        raise _usage(str(exc)) from None
    return path, canonical_op(op) if op else None


@dataclass(frozen=True)
class ScriptProof:
    source: str
    capture: Any        # wire.Capture
    prepared: Any       # case.Prepared
    proof: Any          # torch_prover.engine.prove.Proof
    record: dict[str, Any]
    output: Output
    more: tuple[Any, ...] = ()      # --all-ops: the other computing nodes' proofs, in order

    @property
    def proofs(self) -> tuple[Any, ...]:
        return (self.proof,) + self.more

    @property
    def failed(self) -> bool:
        return any(p.failures for p in self.proofs)


class Stages:
    """Where ``prove_script`` says what it is doing: nowhere (a library call prints
    nothing); ``run`` passes a :class:`StageLine`."""

    def __call__(self, line: str) -> None:
        pass

    def done(self) -> None:
        pass


SILENT = Stages()


def prove_script(path: str | os.PathLike, *, op: str | None = None, numeric: bool = True,
                 tags=None, tag_source: str = "onnx.defs", timeout: float = DEFAULT_TIMEOUT,
                 echo: TextIO | None = None, debug: bool = False,
                 all_ops: bool = False, say: Stages = SILENT, node: int | None = None,
                 start: Start = Start.FORK_SERVER) -> ScriptProof:
    """Run the script at ``path`` in a child process (cwd unchanged) and prove what it
    exported, here. The record is the proof record with a ``script`` section (what ran,
    how it was isolated, what the runner changed). UsageError when there is nothing to
    prove; the script's (capped) output goes to ``echo`` either way. ``all_ops``: prove
    every other computing node of the graph too, in context (``ScriptProof.more``). The
    target op used by several nodes: each is proved (the first is ``proof``, the others lead
    ``more``; ``record["script"]["nodes"]`` holds the verdicts over them, :mod:`nodes`);
    ``node``: prove that node of the op only; ``start``: how the script's process starts
    (``process.Start``: ``FORK`` only from a process that has proved nothing yet). ``say``
    gets one line per stage (``run`` prints them on stderr: a first run waits seconds for the
    script's process to import torch, and a silent wait looks like a hang)."""
    from ..engine.prove import prove_case
    from .case import prepare, usable
    from .directives import directives
    from .module import ModuleLoadError, load_module, ready_loader
    from .wire import WireError, read_capture
    path, op = check_arguments(path, op, timeout)
    source = script_text(path)
    declared = directives(source)
    with tempfile.TemporaryDirectory(prefix="torch-prover-run-") as tmp:
        where = Path(tmp)
        say(f"running {path.name} in its own process (timeout {timeout:g} s)")
        if start is Start.FORK:   # before the fork: the child then inherits torch._dynamo,
            ready_loader()        # which it imports anyway (child.torch_disable), not again
        child = run_child(os.fspath(path), where, timeout, meanwhile=ready_loader,
                          start=start)
        say(f"{path.name} {child.end.value} after {child.seconds:.1f} s")
        if echo is not None and (child.output.text or child.output.truncated):
            say.done()      # the script's own output starts on a line of its own
            echo.write(shown_output(child.output))
            echo.flush()
        if child.end is not ChildEnd.FINISHED:
            raise _usage(child.reason(timeout))
        try:
            cap = read_capture(where)
        except WireError as exc:
            raise _usage(str(exc)) from None
        if debug and cap.traceback:
            sys.stderr.write(cap.traceback)
        usable(cap)
        try:
            module = load_module(where, cap.module, cap.params)
        except ModuleLoadError as exc:
            raise _usage(f"cannot run the autograd probe here: {exc}") from None
    prep = prepare(cap, module, path, op, declared)
    say(f"proving {prep.case.op} ({prep.exported.exporter} exporter, opset "
        f"{prep.exported.opset}): autograd probe, graph mapping"
        + (", numeric witnesses" if numeric else ""))
    nodes = _target_nodes(prep, node)
    try:
        same = [prove_case(prep.case if len(nodes) == 1 else prep.case_for(i, prep.case.op),
                           exported=prep.exported, numeric=numeric, tags=tags,
                           tag_source=tag_source, node=i, redraw=True) for i in nodes]
        proof = same[0]
        more = tuple(same[1:]) + tuple(
            prove_case(prep.case_for(i, other), exported=prep.exported, numeric=numeric,
                       tags=tags, tag_source=tag_source, node=i, redraw=True)
            for i, other in (prep.others({p.node for p in same}) if all_ops else ()))
    except CaseError as exc:
        raise _usage(f"cannot prove the script's export: {exc}") from exc
    rec = proof.record()
    rec["script"] = script_record(path=path, source=source, cap=cap, prep=prep, proof=proof,
                                  declared=declared.set(), output=child.output,
                                  timeout=timeout, module=module, all_ops=all_ops,
                                  proved={p.node for p in same},
                                  process=child.start.record())
    rec["script"]["nodes"] = over_nodes(prep.case.op, [(p.node, p.record()) for p in same]) \
        if len(same) > 1 else None
    rec["script"]["export"]["file_changed"] = file_changed(cap.export)
    meant = _meant(source, path, prep, cap, module)
    rec["script"]["target"] = meant.record()
    if meant.refused:       # a typed status, not "proved": exit 2 (docs/run.md)
        rec["status"] = NOT_MEANT
    return ScriptProof(source, cap, prep, proof, rec, child.output, more)


NOT_MEANT = "not the op meant"
"""The record's ``status`` when the run proved another op than the script means."""


def _meant(source: str, path: Path, prep: Any, cap: Any, module: Any) -> Any:
    """The op the script means against the one proved (:mod:`intent`)."""
    from .folded import module_ops
    from .intent import target
    from .wire import ModuleFormat
    graph = getattr(module, "graph", None)
    called = module_ops(graph) if graph is not None and \
        cap.module.format is ModuleFormat.EXPORTED_PROGRAM else []
    return target(source, path, prep.case.op,
                  {n.op_type for n in prep.exported.model.graph.node}, called, prep.op_from)


def _target_nodes(prep: Any, node: int | None) -> list[int | None]:
    """The target op's nodes to prove: ``node`` alone when given (UsageError, one line, when
    it is not a node of that op), else every node of the op (``engine/attribution/mapping.py:
    target_nodes``; [None] when there is at most one: the mapping says what it found)."""
    from ..engine.attribution.mapping import target_nodes
    op = prep.case.op
    every = [i for i, n in enumerate(prep.exported.model.graph.node) if n.op_type == op]
    if node is not None:
        if node not in every:
            raise _usage(f"--node {node}: not a {op} node of the script's graph (its {op} "
                         f"nodes: {', '.join(f'#{i}' for i in every) or 'none'})")
        return [node]
    nodes = list(target_nodes(prep.exported.model, op, prep.case.domain))
    return nodes if len(nodes) > 1 else [None]


def file_changed(info) -> str | None:
    """Whether the file the script exported to still holds what the exporter wrote, read
    here once the script's process has ended: a script that overwrote or deleted it
    afterwards leaves a file that is not the proved model (None: unchanged, or no file).
    Read through the one bounded reader (``inputs.read_bytes``: an evidence file, at most
    protobuf's 2 GiB): a script that leaves a FIFO or a symlink to ``/dev/zero`` there is
    told, not read -- ``--timeout`` no longer applies once its process has ended."""
    import hashlib

    from ..inputs import Bound, InputError, read_bytes
    if not info.target or not info.file_sha256:
        return None
    shown = Path(info.target).name
    if not os.path.lexists(info.target):
        return (f"the script removed {shown} after exporting it; the proof is of the model "
                "the exporter produced")
    try:
        now = hashlib.sha256(read_bytes(info.target, Bound.EVIDENCE)).hexdigest()
    except InputError as exc:
        return (f"{shown} cannot be read back ({exc.problem}); the proof is of the model the "
                "exporter produced, not of the file on disk")
    if now != info.file_sha256:
        return (f"the script replaced {shown} after exporting it (sha256 {now[:12]} now, "
                f"{info.file_sha256[:12]} exported); the proof is of the model the exporter "
                "produced, not of the file on disk")
    return None


class StageLine(Stages):
    """What ``run`` is doing, on a terminal: one line on stderr, redrawn at each stage and
    erased when the report starts (the first run waits seconds for the script's process to
    import torch; a silent wait looks like a hang). Elsewhere (a pipe, a CI log) it prints
    nothing, so stderr holds the script's output and one-line errors only; so does
    ``--quiet``. The line is cut to the width (``$COLUMNS`` first): a wrapped line cannot
    be redrawn in place."""

    def __init__(self, stream: TextIO, quiet: bool = False):
        self.stream = stream
        isatty = getattr(stream, "isatty", None)
        self.tty = not quiet and bool(isatty and isatty())
        self.shown = 0

    def __call__(self, line: str) -> None:
        if not self.tty:
            return
        from ..batch.progress import stream_width
        text = f"torch-prover run: {line}"[:stream_width(self.stream) - 1]   # never wraps
        self.stream.write("\r" + text.ljust(self.shown))
        self.shown = len(text)
        self.stream.flush()

    def done(self) -> None:
        """Erase the line (the report and the script's output follow)."""
        if self.tty and self.shown:
            self.stream.write("\r" + " " * self.shown + "\r")
            self.stream.flush()
            self.shown = 0


def cmd_run(args) -> int:
    """``torch-prover run SCRIPT.py``: run, prove, report; exit 0 / 1 (a disagreement or a
    failed check) / 2 (the script cannot be proved: it failed, or its case is invalid)."""
    from ..output import report
    from ..errors import EXIT_FINDING, EXIT_OK, EXIT_USAGE
    check_arguments(args.script, args.op, args.timeout)
    say = StageLine(sys.stderr, quiet=getattr(args, "quiet", False))
    tags, label = _tags(args.tags_from)
    fmt = args.format
    echo = sys.stdout if fmt == "text" else sys.stderr   # stdout stays pure JSON / Markdown
    all_ops = getattr(args, "all_ops", False)
    done = prove_script(args.script, op=args.op, numeric=not args.no_numeric, tags=tags,
                        tag_source=label, timeout=args.timeout, echo=echo,
                        debug=getattr(args, "debug", False), all_ops=all_ops, say=say,
                        node=getattr(args, "node", None),
                        # alone in its own process, nothing proved yet: fork it from here
                        start=Start.FORK if getattr(args, "own_process", False)
                        else Start.FORK_SERVER)
    say.done()
    rec = done.record
    more = [p.record() for p in done.more]
    if rec["script"]["export"]["file_changed"]:
        print(f"warning: {rec['script']['export']['file_changed']}", file=sys.stderr)
    if args.out is not None:
        from ..output.evidence import write_proof
        for proof in done.proofs:
            where = write_proof(Path(args.out), proof)
            print(f"evidence written to {where}", file=sys.stderr)
    elif fmt == "text":
        print("evidence not written (pass --out DIR to keep model.onnx, test data and "
              "proof.json)", file=sys.stderr)
    file_sha = rec["script"]["export"]["file_sha256"]
    model = "evidence copy" if file_sha not in (None, rec["model"]["sha256"]) else "model"
    # an invalid case is a script that cannot be proved as it is (docs/run.md, exit codes)
    # and so is a proof of another op than the one the script means (pr/intent.py)
    code = (EXIT_USAGE if any(p.invalid for p in done.proofs) or rec["script"]["target"]["line"]
            else EXIT_FINDING if done.failed else EXIT_OK)
    if fmt == "json":
        from ..output.documents import proofs_doc
        from ..vocab import DocKind
        sys.stdout.write(report.to_json(proofs_doc(DocKind.RUN, [rec] + list(more), code)))
    elif fmt == "markdown":   # GitHub's body limit: output/markdown_limit.py
        from ..output.markdown_summary import proofs_on_stdout
        text, notes = proofs_on_stdout(
            [(None, f"> **{rec['script']['target']['line']}**\n\n")] * bool(
                rec["script"]["target"]["line"])
            + [(rec, report.proof_markdown(rec, script=done.source, model_label=model) + "\n")]
            + [(r, report.proof_markdown(r, model_label=model) + "\n") for r in more]
            + [(None, script_markdown(rec))], "`--format json` has every record")
        sys.stdout.write(text)
        for note in notes:
            print(note, file=sys.stderr)
    else:
        if done.output.text and not done.output.text.endswith("\n"):
            print()
        import shutil
        width = shutil.get_terminal_size((100, 24)).columns
        sys.stdout.write("\n".join(script_lines(rec)) + "\n" + "\n".join(
            report.proof_text(r, width, model_label=model) for r in [rec] + more))
    return code
