"""check-evidence: re-run a tree of evidence directories and say, per directory, whether the
files still show what their record claims.

For each case directory (one holding ``proof.json``, ``model.onnx`` or ``test_data_set_0``)
it loads ``model.onnx`` (its sha256 must be the record's), runs the runtime the record's
``test_data`` names on ``input_<j>.pb``, and compares each output marked ``compare`` with
``output_<j>.pb`` within the record's forward tolerance (``numeric.forward_bound``) -- a
record whose ``test_data.copy`` is ``float32`` runs the float32 copy derived from
``model.onnx`` (``engine/versions/float32_copy.py``), as its proof did; a
``random draw`` or ``declared mismatch`` output is checked for its shape only, and the
record's reason is repeated. Gradients are re-checked where the record's own VJP check
passed for that input: a central finite difference of the model along a seeded direction
``v``, contracted with the saved dy (``grad_output_<j>.pb``), against ``<grad_input, v>``
(``numeric.vjp_checks``, the check the proof ran); every other gradient is named as not
re-checked. Nor is the record itself taken on its word (docs/safety.md): its verdicts are
re-derived from its own witnesses by the one re-check every record read goes through
(``engine/recheck``, handed in by the caller as ``recheck``: finding the case needs the
catalogue's variants, a layer above), the model must be the record's op at the record's
opset, and every gradient the record's passed VJP check implies must be on disk.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..engine import test_data
from ..engine.numeric import numeric
from ..engine.versions.float32_copy import KernelGap
from ..errors import describe
from ..inputs import Bound, InputError, read_bytes
from ..vocab import EvidenceStatus, OutputCheck, Runtime
from .evidence import OWN_ENTRIES
from .evidence_data import load_pb

KIND_OF = {Runtime.ONNXRUNTIME: "onnxruntime", Runtime.REFERENCE: "reference"}
"""A record's runtime -> numeric.Runner's kind."""

Recheck = Callable[[dict[str, Any], Any], "str | None"]
"""A record and its model.onnx -> why it is not what a proof says (None: it is), or a note
starting with ``NOT_RECHECKED`` when its verdicts cannot be re-derived here."""
NOT_RECHECKED = "verdicts not re-checked: "
OLDER = "written by an older torch-prover: rerun verify-all"


def record_at(d: Path) -> dict[str, Any] | None:
    """``d/proof.json`` read and checked against its kind's shipped schema (a proof or a
    failed case); None when there is none. UsageError, one line naming the file and the
    field, when it is not a regular file, not JSON or not a record torch-prover writes (a
    record of an older format is returned as it is: ``older``). check-evidence and
    node-tests read every record through this before any work."""
    from ..engine.record import RECORD_FORMAT
    from ..errors import UsageError
    from .json_schema import first_problem
    path = d / "proof.json"
    if not os.path.lexists(path):
        return None
    try:
        rec = json.loads(read_bytes(path, Bound.RECORD, follow=False).decode("utf-8"))
    except InputError as exc:
        raise UsageError(f"{exc}; give an evidence tree torch-prover wrote") from None
    except (ValueError, RecursionError):
        raise UsageError(f"{path}: not JSON, so not a record torch-prover wrote") from None
    if older(rec):
        return rec
    kind = rec.get("kind") if isinstance(rec, dict) else None
    if kind not in ("proof", "failed-case"):
        raise UsageError(f"{path}: not a proof record (kind {kind!r})")
    problem = first_problem(rec, kind)
    if problem is not None:
        raise UsageError(f"{path}: {problem}; not a {kind} record torch-prover wrote "
                         f"(format {RECORD_FORMAT})")
    return rec


def read_records(dirs: list[Path]) -> dict[Path, dict[str, Any] | None]:
    """Every directory's record (``record_at``), all read before any work: the first damaged
    one is exit 2, before anything is run or written."""
    return {d: record_at(d) for d in dirs}


def older(rec: Any) -> bool:
    """A record of an earlier format (whole number below this one's)."""
    from ..engine.record import RECORD_FORMAT
    return isinstance(rec, dict) and type(rec.get("format")) is int and \
        0 < rec["format"] < RECORD_FORMAT


@dataclass(frozen=True)
class DirCheck:
    """What re-running one case directory showed."""

    path: str                      # relative to the tree checked
    status: EvidenceStatus
    detail: str                    # one line: what was compared, or why not / what differs
    runtime: str | None = None
    outputs_compared: int = 0
    gradients_rechecked: int = 0
    not_rechecked: tuple[str, ...] = ()   # grad_input files not re-checked, with why

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "status": self.status, "detail": self.detail,
                "runtime": self.runtime, "outputs_compared": self.outputs_compared,
                "gradients_rechecked": self.gradients_rechecked,
                "gradients_not_rechecked": list(self.not_rechecked)}


@dataclass
class _Findings:
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def case_dirs(root: Path) -> list[Path]:
    """Every directory under ``root`` (itself included) that holds an evidence entry;
    symlinks and dot-directories are not followed."""
    found = []
    stack = [Path(root)]
    while stack:
        d = stack.pop()
        try:
            entries = sorted(d.iterdir())
        except OSError:
            continue
        if any(e.name in OWN_ENTRIES for e in entries):
            found.append(d)
            continue
        stack += [e for e in reversed(entries) if e.is_dir() and not e.is_symlink()
                  and not e.name.startswith(".")]
    return sorted(found)


def _as_number(a: np.ndarray) -> np.ndarray:
    """Values to compare: complex stays complex, any other type (bfloat16, bool) float64."""
    return a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)


def _compare(got: np.ndarray, want: np.ndarray, bound: float) -> str | None:
    """None when ``got`` reproduces ``want`` (floats within ``bound``, others exactly)."""
    got = np.asarray(got)
    if got.shape != want.shape:
        return f"shape {got.shape}, the file has {want.shape}"
    if not want.size:
        return None
    if want.dtype.kind in "fc" or str(want.dtype) == "bfloat16":
        g, w = _as_number(got), _as_number(want)
        both_nan = np.isnan(g) & np.isnan(w)
        err = float(np.nan_to_num(np.where(both_nan, 0, np.abs(g - w)), nan=np.inf).max())
        return None if err <= bound else (
            f"max abs error {numeric.shown_error(err, bound)} > {bound:.3g}")
    diff = int((got != want).sum())
    return None if diff == 0 else f"{diff} of {want.size} elements differ"


def _model_problem(model, rec: dict[str, Any]) -> str | None:
    """Why ``model`` is not a model of the record's op at the record's opset (None: it is):
    a model exported at another opset, its sha256 written into the record, is not the
    evidence of this schema version."""
    import onnx.defs
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset != rec.get("opset"):
        return f"model.onnx is at opset {opset}, the record's is {rec.get('opset')}"
    try:
        version = onnx.defs.get_schema(rec["op"], opset, rec.get("domain", "")).since_version
    except (onnx.defs.SchemaError, KeyError, TypeError):
        return f"model.onnx: no schema of {rec.get('op')} at opset {opset}"
    if version != rec.get("schema_version"):
        return (f"model.onnx runs {rec['op']}-{version}, the record's verdicts are about "
                f"{rec['op']}-{rec.get('schema_version')}")
    if not any(n.op_type == rec["op"] for n in model.graph.node):
        return f"model.onnx has no {rec['op']} node"
    return None


def check_dir(d: Path, root: Path, recheck: Recheck | None = None,
              records: dict[Path, dict[str, Any] | None] | None = None) -> DirCheck:
    """Re-run one case directory (module docstring); ``records``: what ``read_records``
    read (read here otherwise)."""
    import onnx
    rel = d.relative_to(root).as_posix() if d != root else d.name

    def result(status: EvidenceStatus, detail: str, **kw: Any) -> DirCheck:
        return DirCheck(rel, status, detail, **kw)

    rec = records[d] if records is not None and d in records else record_at(d)
    if rec is None:   # files with no record: nothing says what they show
        return result(EvidenceStatus.MISMATCH, "no proof.json: nothing says what these "
                                               "files show")
    if older(rec):
        return result(EvidenceStatus.CANNOT_RUN, f"format {rec['format']}: {OLDER}")
    if rec["kind"] == "failed-case":
        why = recheck(rec, None) if recheck is not None else None
        if why is not None and not why.startswith(NOT_RECHECKED):
            return result(EvidenceStatus.MISMATCH, f"proof.json: {why}")
        return result(EvidenceStatus.CANNOT_RUN, f"the record is a failed case: {rec['error']}")
    data = rec["test_data"]
    try:
        model_bytes = read_bytes(d / "model.onnx", Bound.EVIDENCE, follow=False)
    except InputError as exc:
        return result(EvidenceStatus.MISMATCH, f"model.onnx: {exc.problem}")
    if hashlib.sha256(model_bytes).hexdigest() != rec["model"]["sha256"]:
        return result(EvidenceStatus.MISMATCH, "model.onnx is not the model the record "
                                               "names (sha256 differs)")
    found = _Findings()
    model = onnx.load_from_string(model_bytes)
    why = recheck(rec, model) if recheck is not None else None
    if why is not None and why.startswith(NOT_RECHECKED):
        found.notes.append(why)
    elif why is not None:   # nothing it says is re-run on its word (a forged test_data)
        return result(EvidenceStatus.MISMATCH, f"proof.json: {why}")
    runtime = data.get("runtime")
    if runtime not in KIND_OF:
        return result(EvidenceStatus.MISMATCH if found.problems else EvidenceStatus.CANNOT_RUN,
                      "; ".join(found.problems) or f"the record names no runtime "
                                                   f"({data.get('why') or 'none ran'})")
    why = _model_problem(model, rec)
    if why:
        found.problems.append(why)
    files = d / "test_data_set_0"
    try:
        feeds = {i.name: load_pb(files / test_data.input_file(j))
                 for j, i in enumerate(model.graph.input)}
        wants = [load_pb(files / o["file"]) for o in data["outputs"]]
    except Exception as exc:   # a missing, truncated or foreign .pb
        return result(EvidenceStatus.MISMATCH, f"test data unreadable: {describe(exc)}",
                      runtime=runtime)
    # a float32 copy (test_data.copy): derived from model.onnx as the proof derived it
    copy = KernelGap.from_record((rec.get("numeric") or {}).get("copy") or {}) \
        if data.get("copy") == "float32" else None
    try:
        runner = numeric.Runner(model, KIND_OF[Runtime(runtime)], copy=copy)
        got = runner.run(feeds)
    except Exception as exc:
        return result(EvidenceStatus.MISMATCH if found.problems else EvidenceStatus.CANNOT_RUN,
                      "; ".join(found.problems + [f"{runtime} cannot run the model: "
                                                  f"{describe(exc)}"]), runtime=runtime)
    bound = numeric.forward_bound(data.get("fwd_tol") or 0.0,
                                  [w.astype(np.float64) if str(w.dtype) == "bfloat16" else w
                                   for w in wants])
    compared, differ = 0, []
    for o, want, g in zip(data["outputs"], wants, got):
        check = OutputCheck(o["check"])
        if check == OutputCheck.COMPARE:
            compared += 1
            why = _compare(g, want, bound)
            if why:
                differ.append(f"{o['file']}: {why}")
            continue
        if np.asarray(g).shape != want.shape:
            found.problems.append(f"{o['file']}: shape {np.asarray(g).shape}, the file has "
                                  f"{want.shape}")
        found.notes.append(f"{o['file']}: {check} ({o.get('reason')})")
    if len(got) != len(wants):
        found.problems.append(f"{runtime} gives {len(got)} outputs, the record {len(wants)}")
    compared = _recorded_forward(rec, compared, differ, found)
    try:
        checked, skipped = _gradients(rec, model, feeds, runner, files, found)
    except InputError as exc:   # a gradient file that is a FIFO, or unreadable
        checked, skipped = 0, []
        found.problems.append(f"gradient data unreadable: {exc}")
    parts = (["a float32 copy of model.onnx ran"] if copy is not None else []) + [
             f"{compared} of {len(wants)} outputs compared",
             f"gradients: {checked} re-checked" + (f", {len(skipped)} not" if skipped else "")]
    if found.problems:
        status, detail = EvidenceStatus.MISMATCH, "; ".join(found.problems)
    elif compared == 0:
        status, detail = EvidenceStatus.NOT_COMPARED, "; ".join(found.notes)
    else:
        status, detail = EvidenceStatus.MATCH, "; ".join(parts + found.notes)
    return result(status, detail, runtime=runtime, outputs_compared=compared,
                  gradients_rechecked=checked, not_rechecked=tuple(skipped))


def _recorded_forward(rec: dict[str, Any], compared: int, differ: list[str],
                      found: _Findings) -> int:
    """The outputs compared, after weighing their differences against the record. A failed
    proof records that its runtime does not give PyTorch's outputs (``forward_ok: false``:
    MaxUnpool-9's kernel reads its indices in another grid): seeing that again is what the
    record says, so nothing was confirmed (not compared, with the difference named); the
    runtime giving them after all is a finding, as any difference is for a passed proof."""
    num = rec.get("numeric") or {}
    if num.get("forward_ok") is not False:
        found.problems.extend(differ)
        return compared
    if not differ and compared:
        found.problems.append(f"the record says its forward check failed "
                              f"({num.get('forward_detail')}), but the runtime gives the "
                              f"recorded outputs")
        return compared
    found.notes.extend(f"{d} (the failed forward check the record states)" for d in differ)
    return 0


def _gradients(rec: dict[str, Any], model, feeds: dict[str, np.ndarray],
               runner: numeric.Runner, files: Path, found: _Findings) -> tuple[int, list[str]]:
    """Re-check each saved input gradient whose VJP check the record says passed; returns
    (how many were re-checked, the others with why)."""
    import torch
    num = rec.get("numeric") or {}
    passed = {k for k, v in (num.get("vjp") or {}).items() if v.get("ok")}
    dy: list[torch.Tensor | None] = []
    for j in range(len(model.graph.output)):
        path = files / test_data.grad_output_file(j)
        dy.append(torch.from_numpy(np.array(load_pb(path))) if path.exists() else None)
    grads, skipped = {}, []
    for j, i in enumerate(model.graph.input):
        path = files / test_data.grad_input_file(j)
        if not path.exists():
            if i.name in passed:   # the check ran on PyTorch's gradient: it was saved
                found.problems.append(f"{path.name} is missing: the record's VJP check "
                                      f"passed for {i.name}, so PyTorch's gradient was saved")
            continue
        if i.name not in passed or not num.get("step"):
            skipped.append(f"{path.name}: the record's VJP check did not pass for {i.name}")
        elif not any(d is not None for d in dy):
            skipped.append(f"{path.name}: no grad_output file holds the dy")
        else:
            grads[i.name] = torch.from_numpy(np.array(load_pb(path)))
    if not grads:
        return 0, skipped
    zero = {k for k, g in grads.items() if not bool(g.ne(0).any())}
    # rounding is the precision the runtime computed in (a float32 copy's), not the files'
    dtype = (num.get("precision") or {}).get("computed") or str(
        next(iter(grads.values())).dtype).removeprefix("torch.")
    point = numeric.SeedPoint(int(rec.get("seeds", [0])[0]), feeds, dy, grads)
    checks, trouble = numeric.vjp_checks(runner, point, {}, zero, float(num["step"]),
                                         float(num["vjp_tol"]),
                                         numeric.EPS.get(dtype, 1e-7))
    for c in checks:
        if not c.ok:
            found.problems.append(f"gradient of {c.source}: finite differences along the "
                                  f"saved dy give {numeric.shown_value(c.fd)}, the saved "
                                  f"gradient {numeric.shown_value(c.analytic)} (rel err "
                                  f"{numeric.shown_error(c.rel_err, float(num['vjp_tol']))})")
    if trouble:
        found.problems.append(trouble.lstrip("; "))
    return len(checks), skipped


def check_tree(root: Path, progress=None, recheck: Recheck | None = None) -> list[DirCheck]:
    dirs = case_dirs(root)
    records = read_records(dirs)   # every record read before any work (exit 2 on a damaged one)
    out = []
    for k, d in enumerate(dirs):
        out.append(check_dir(d, root, recheck, records))
        if progress:
            progress(k + 1, len(dirs), out[-1].path)
    return out


def totals(checks: list[DirCheck]) -> dict[str, int]:
    return {"directories": len(checks),
            **{s.value: sum(c.status == s for c in checks) for s in EvidenceStatus}}


def as_json(root: Path, checks: list[DirCheck]) -> dict[str, Any]:
    from ..errors import EXIT_FINDING, EXIT_OK
    from ..vocab import DocKind
    from .documents import head
    t = totals(checks)
    code = EXIT_FINDING if t[EvidenceStatus.MISMATCH.value] else EXIT_OK
    reason = f"{t['directories']} directories: " + ", ".join(
        f"{t[s.value]} {s.value}" for s in EvidenceStatus)
    return {**head(DocKind.CHECK_EVIDENCE, code, reason), "root": str(root), "summary": t,
            "directories": [c.as_json() for c in checks]}


def command(directory: str, fmt: str, width: int | None, recheck: Recheck | None = None) -> int:
    """``torch-prover check-evidence DIR``: the report on stdout; exit 1 on a mismatch."""
    from ..errors import EXIT_FINDING, EXIT_OK, UsageError
    from .report import to_json
    import sys
    root = Path(directory)
    if not root.is_dir():
        raise UsageError(f"{directory}: not a directory; give an evidence tree such as models")
    if not case_dirs(root):
        raise UsageError(f"{directory}: no evidence directories (model.onnx, proof.json or "
                         "test_data_set_0) under it")
    checks = check_tree(root, recheck=recheck)
    sys.stdout.write(to_json(as_json(root, checks)) if fmt == "json"
                     else as_text(checks, width))
    return (EXIT_FINDING if any(c.status == EvidenceStatus.MISMATCH for c in checks)
            else EXIT_OK)


def as_text(checks: list[DirCheck], width: int | None) -> str:
    from .text_table import wrap_line
    lines = []
    for c in checks:
        lines += wrap_line(f"{c.path}: {c.status}"
                           + (f" ({c.runtime})" if c.runtime else "") + f": {c.detail}", width)
    t = totals(checks)
    lines.append(f"check-evidence: {t['directories']} directories: "
                 + ", ".join(f"{t[s.value]} {s.value}" for s in EvidenceStatus))
    return "\n".join(lines) + "\n"
