"""The ``script`` section of a run's record, and its text and Markdown renderings.

Pure functions of data. One helper per fact, used by every format, so the text, JSON and
Markdown reports say the same things: what ran and how it was isolated, what the runner
changed, which directives the script set (and the defaults they replace), what the script's
own backward showed, and how much of its output was dropped.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Collection

from ..engine.numeric import numeric
from ..engine.attribution.mapping import VALUE_SLOTS
from ..engine.pytorch_source import from_torch_onnx_ops
from .case import MODULE_OPS
from .export import shown_path
from .nodes import node_lines
from .process import Start
from .wire import Capture, Grad, GradSeen, Sink


def gradients(names: tuple[str, ...], cap: Capture) -> dict[str, GradSeen]:
    """What the script's own backward left on each of its tensors, by case input name."""
    out = {n: g for n, g in zip(names, cap.leaf_grads) if g is not None}
    out.update({f"param {n}": g for n, g in cap.param_grads.items()})
    return out


def consistency(grads: dict[str, GradSeen], proof: Any) -> list[str]:
    """Where the script's own gradients and the probe's evidence tell different stories."""
    notes = []
    by_name = {e.label: e for e in proof.probe.inputs}
    by_name.update({f"param {n}": e for n, e in proof.probe.params.items()})
    for name, seen in grads.items():
        e = by_name.get(name)
        if e is None:
            continue
        if (seen.kind is Grad.NONZERO) != (e.evidence == "grad"):
            notes.append(f"the script's gradient for {name} is {seen.kind.value}, the "
                         f"probe finds {e.evidence} over seeds {list(proof.case.seeds)}")
    return notes


def _directives(declared: dict[str, Any], float_dtype: str) -> dict[str, Any]:
    defaults = {"fwd_tol": numeric.FWD_TOL.get(float_dtype),
                "vjp_tol": numeric.VJP_TOL.get(float_dtype)}
    return {k: {"value": list(v) if isinstance(v, tuple) else v, "default": defaults.get(k)}
            for k, v in declared.items()}


def _missing(module: Any, cap: Capture, prep: Any) -> list[str] | None:
    """What the module computes that the graph lacks (:mod:`folded`), one line each; None
    when the module is not a torch.export program (nothing was compared)."""
    from .folded import missing_ops
    from .wire import ModuleFormat
    graph = getattr(module, "graph", None)
    if cap.module.format is not ModuleFormat.EXPORTED_PROGRAM or graph is None:
        return None
    missing = missing_ops(graph, prep.exported.model, prep.exported.exporter,
                          prep.exported.opset)
    written = [w for w in map(from_torch_onnx_ops, prep.exported.model.graph.node) if w]
    if written and missing:
        # not folded or lost: the script computes the op eagerly and switches to
        # torch.onnx.ops under torch.onnx.is_in_onnx_export(); one line, no advice to follow
        return [f"the graph's {', '.join(dict.fromkeys(written))} node was written by "
                f"torch.onnx.ops at export; the module computes it eagerly with "
                f"{', '.join(m.op for m in missing)} ({', '.join(m.aten for m in missing)}), "
                "which is what the autograd witness differentiated"]
    return [m.line() for m in missing]


def script_record(*, path: Path, source: str, cap: Capture, prep: Any, proof: Any,
                  declared: dict[str, Any], output: Any, timeout: float, module: Any = None,
                  all_ops: bool = False, proved: Collection[int | None] = (),
                  process: str = Start.FORK_SERVER.record()
                  ) -> dict[str, Any]:
    """The ``script`` section (``proved``: the target op's nodes proved, when several;
    ``process``: how the script's process was started, ``process.Start.record``)."""
    info = cap.export
    grads = gradients(prep.names, cap)
    return {
        "path": str(path.resolve()),
        "sha256": hashlib.sha256(source.encode()).hexdigest(),
        "output": output.text,
        "output_truncated": output.record() if output.truncated else None,
        "isolation": {"process": process,
                      "timeout_s": timeout, "module": cap.module.format.value,
                      "module_how": cap.module.how, "module_why": cap.module.why or None},
        "directives": _directives(declared, str(prep.case.float_dtype).removeprefix("torch.")),
        "export": {"exporter": info.exporter, "opset": prep.exported.opset,
                   "file": info.target, "file_sha256": info.file_sha256,
                   "sink": info.sink.value, "training": info.training,
                   "options": info.options, "evidence_copy": list(info.copy)},
        "missing_ops": _missing(module, cap, prep),
        "gradient_conventions": dict(prep.case.gradient_conventions),
        "other_ops": [{"op": op, "node": i, "moves_values": op in VALUE_SLOTS}
                      for i, op in prep.others(set(proved) | {proof.node})],
        "all_ops": all_ops,
        "runner_notes": prep.notes,
        "renamed": prep.renamed,
        "op_from": prep.op_from,
        "op_inferred": prep.inferred,
        "op_candidates": prep.candidates,
        "backward": [{"api": b.api, "targets": list(b.targets), "error": b.error}
                     for b in cap.backward],
        "gradients": {k: str(g) for k, g in grads.items()},
        "consistency": consistency(grads, proof),
    }


def _directive_lines(s: dict[str, Any]) -> list[str]:
    out = []
    for key, d in s["directives"].items():
        if key == "op":
            continue      # the target-op line says where the op came from
        if key == "surrogate":
            out.append(f"directive: surrogate={', '.join(d['value'])}: PyTorch's gradient there "
                       "counts as unsupported (it can only remove autograd evidence)")
            continue
        default = f"{d['default']:g}" if d["default"] is not None else "none"
        out.append(f"directive: {key}={d['value']:g} set by the script's `# torch-prover:` line "
                   f"(default {default}); the numeric check used it")
    return out


def script_lines(rec: dict[str, Any]) -> list[str]:
    """The run as a reviewer reads it: what ran, what the runner changed, what it showed."""
    s = rec["script"]
    e = s["export"]
    iso = s["isolation"]
    how = f"the {e['exporter']} exporter at opset {e['opset']}"
    to = _destination(e)
    meant = (s.get("target") or {}).get("line")
    lines = [meant] if meant else []
    lines += [f"script {Path(s['path']).name} (sha256 {s['sha256'][:12]}): " + (
        f"exported{to}; the proof runs an evidence copy made with {how}"
        if e.get("evidence_copy") else f"exported with {how}{to}")]
    lines.append(f"  isolation: ran in its own process (timeout {iso['timeout_s']:g} s); "
                 f"the probe ran in the prover on its module saved by {iso['module_how']}"
                 + (f" ({iso['module_why']})" if iso["module_why"] else ""))
    lines += [f"  runner: {n}" for n in s["runner_notes"]]
    lines += [f"  {line}" for line in _directive_lines(s)]
    if s["op_from"] == "graph":
        lines.append(f"  target op {rec['op']}: inferred from the graph (ops on the inputs: "
                     f"{', '.join(s['op_candidates'])})")
    elif s["op_from"] == MODULE_OPS:
        lines.append(f"  target op {rec['op']}: the one op the module calls by name that the "
                     f"graph computes with (ops on the inputs: "
                     f"{', '.join(s['op_candidates'])}; the graph's last computing node is "
                     f"{s['op_inferred']})")
    else:
        lines.append(f"  target op {rec['op']}: from {s['op_from']}" + (
            f" (the graph alone says {s['op_inferred']})" if s["op_inferred"] not in
            (None, rec["op"]) else ""))
    lines += node_lines(s.get("nodes"))
    lines += _other_ops_lines(s)
    for line in s["missing_ops"] or ():
        lines.append(f"  not in the graph: {line}")
    for name, what in (s.get("gradient_conventions") or {}).items():
        lines.append(f"  gradient convention: {name}: {what}; a VJP mismatch there is named, "
                     "not counted: the verdict rests on what both witnesses decide")
    for b in s["backward"]:
        lines.append(f"  backward: {b['api']} on {', '.join(b['targets']) or 'nothing'}"
                     + (f" -> {b['error']}" if b["error"] else ""))
    if s["gradients"]:
        lines.append("  the script's gradients: " + "; ".join(
            f"{k} {v}" for k, v in s["gradients"].items()))
    lines.append(f"  the proof's inputs and dy: the script's own inputs, with torch-prover's "
                 f"seeded dy on seeds {', '.join(map(str, rec['seeds']))} (not the script's "
                 "dy), so its gradient magnitudes may differ from what the script printed")
    lines += [f"  note: {n}" for n in s["consistency"]]
    if s["output_truncated"]:
        lines.append(f"  output: {s['output_truncated']['note']}")
    lines += proved_model_lines(rec)
    if rec["script"]["export"].get("file_changed"):
        lines.append(f"  warning: {rec['script']['export']['file_changed']}")
    return lines


def _other_ops_lines(s: dict[str, Any]) -> list[str]:
    """The graph's other nodes: the ops that compute, and apart from them the glue that only
    moves values to the target (Transpose, Slice, Concat: the attribution follows it)."""
    others = s["other_ops"]
    computes = list(dict.fromkeys(o["op"] for o in others if not o.get("moves_values")))
    moves = list(dict.fromkeys(o["op"] for o in others if o.get("moves_values")))
    if s["all_ops"] and others:
        return [f"  --all-ops: the graph's other nodes are proved below "
                f"({', '.join(computes + moves)})"]
    lines = []
    if computes:
        lines.append(f"  the graph also computes with {', '.join(computes)}: prove "
                     + ("it" if len(computes) == 1 else "one") + f" with --op {computes[0]}, or "
                     "every computing node with --all-ops")
    if moves:
        lines.append(f"  {', '.join(moves)} only move{'s' * (len(moves) == 1)} values on their "
                     "way (glue the attribution follows, not computing ops); --op "
                     f"{moves[0]} proves {'it' if len(moves) == 1 else 'one'}")
    return lines


def _destination(e: dict[str, Any]) -> str:
    """Where the export went, for the report's first line."""
    sink = e.get("sink")
    if sink == Sink.PROGRAM_SAVE.value:
        return f", saved with ONNXProgram.save to {shown_path(e['file'])}"
    if e["file"]:
        return f" to {shown_path(e['file'])}"
    if sink == Sink.BYTES_IO.value:
        return " into an io.BytesIO"
    return " (the returned ONNXProgram, not written to a file)" if sink == Sink.NONE.value \
        else ""


def _written_to(e: dict[str, Any]) -> str:
    """What the script's export left behind, in words: ``the script's file m.onnx``."""
    if e["file"]:
        saved = " (written by ONNXProgram.save)" if e.get("sink") == Sink.PROGRAM_SAVE.value \
            else ""
        return f"the script's file {shown_path(e['file'])}{saved}"
    if e.get("sink") == Sink.BYTES_IO.value:
        return "the bytes the script exported into an io.BytesIO"
    return "the script's file object"


def proved_model_lines(rec: dict[str, Any]) -> list[str]:
    """Which model was proved, against what the script's export left: one sha256 per file
    or buffer, labelled (the proved model's is the report's last line, "evidence copy
    sha256" when it differs)."""
    s = rec["script"]
    e = s["export"]
    if not e["file_sha256"]:
        return ["  proved model: the model the script exported (not written to a file)"
                + _renamed(s)]
    written = _written_to(e)
    if e["file_sha256"] == rec["model"]["sha256"]:
        return [f"  proved model: {written}, byte for byte (sha256 below)"]
    lines = [f"  {written}: sha256 {e['file_sha256']}, left as the script wrote it"]
    if e["evidence_copy"]:
        lines.append("  proved model: an evidence copy, exported again with "
                     + "; ".join(e["evidence_copy"]) + _renamed(s))
    else:
        lines.append("  proved model: an evidence copy of those bytes, re-serialized"
                     + _renamed(s))
    return lines


def _renamed(s: dict[str, Any]) -> str:
    if not s["renamed"]:
        return ""
    return ("; graph values renamed " + ", ".join(f"{a} -> {b}" for a, b in
                                                  s["renamed"].items())
            + " (the evidence layout's names)")


def script_markdown(rec: dict[str, Any]) -> str:
    s = rec["script"]
    out = ["**How torch-prover ran the script**", ""]
    out += [f"- {line.strip()}" for line in script_lines(rec)]
    if s["output"].strip() or s["output_truncated"]:
        summary = "script output" + (" (the last lines only)" if s["output_truncated"] else "")
        out += ["", f"<details><summary>{summary}</summary>", "", "```text"]
        if s["output_truncated"]:
            out.append(s["output_truncated"]["note"])
        out += [s["output"].rstrip().replace("```", "` ` `"), "```", "", "</details>"]
    return "\n".join(out) + "\n"


def shown_output(output: Any) -> str:
    """The script's output as the terminal shows it: the drop note first, then the tail."""
    note = output.note()
    return (note + "\n" if note else "") + output.text
