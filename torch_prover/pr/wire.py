"""What crosses from a proof script's process to the prover's: plain data, in files.

Why files and these formats: the script is untrusted code, so nothing it could have touched
may run code in the prover when read. The capture is a JSON manifest (``capture.json``),
the ONNX model the script exported (``model.onnx``, parsed by protobuf), the input tensors
(``tensors.pt``, read with ``torch.load(weights_only=True)``, which builds tensors and
containers only) and the script's module as a graph (see :mod:`module`). Nothing is
unpickled; multiprocessing's own channels carry nothing back. Every field is checked for
its type on reading, so a forged or truncated capture is a one-line error, not a crash.
"""
from __future__ import annotations

import enum
import json
import os
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..errors import ProverError

MANIFEST, MODEL, TENSORS = "capture.json", "model.onnx", "tensors.pt"
MAX_MANIFEST_BYTES = 8 << 20
WIRE_FORMAT = 1


class WireError(ProverError, ValueError):
    """The capture is missing or malformed (a script that forged it, or a runner bug)."""


class Outcome(enum.Enum):
    """How the script's own run ended, as the child saw it."""

    FINISHED = "finished"        # ran to its end (or sys.exit(0))
    EXITED = "exited"            # sys.exit(non-zero): ``error`` says with what
    RAISED = "raised"            # an exception escaped: ``error`` names it and the line
    UNUSABLE = "unusable"        # ran, but its export cannot be proved: ``problem`` says why
    RUNNER_FAILED = "runner-failed"  # torch-prover's child code failed: ``problem`` says how
    TAMPERED = "tampered"        # the script replaced torch-prover's code in its process


class Sink(enum.Enum):
    """Where the script's export went: what its file (or buffer) holds is what it wrote."""

    PATH = "a file"                       # torch.onnx.export(..., "model.onnx")
    FILE_OBJECT = "an open file"          # torch.onnx.export(..., open("m.onnx", "wb"))
    BYTES_IO = "an io.BytesIO"            # torch.onnx.export(..., buf): bytes, no file
    PROGRAM_SAVE = "ONNXProgram.save"     # onnx_program = export(...); onnx_program.save(p)
    NONE = "not written"                  # the returned ONNXProgram only


class ModuleFormat(enum.Enum):
    """How the script's module was serialized for the autograd probe."""

    EXPORTED_PROGRAM = "torch.export"
    TORCHSCRIPT = "torchscript"
    NONE = "none"                # neither worked: ``ModuleFile.why`` says why


@dataclass(frozen=True)
class ModuleFile:
    format: ModuleFormat = ModuleFormat.NONE
    file: str = ""
    prefix: str = ""             # "inner." when the module was wrapped to bind its arguments
    how: str = ""                # what the child did (traced, scripted as is, exported)
    why: str = ""                # why the preferred format was not used


class Grad(enum.Enum):
    """What one of the script's tensors held after its own backward pass."""

    NONE = "None"
    ZERO = "zero"
    NONZERO = "nonzero"


@dataclass(frozen=True)
class GradSeen:
    kind: Grad
    peak: float | None = None      # max |grad| when nonzero

    def __str__(self) -> str:
        return f"nonzero (max |grad| {self.peak:.3g})" if self.kind is Grad.NONZERO \
            else self.kind.value


@dataclass(frozen=True)
class BackwardSeen:
    """One backward call of the script: the API, what it differentiated, its failure."""

    api: str
    targets: tuple[str, ...]
    error: str | None = None


@dataclass(frozen=True)
class ExportInfo:
    """The script's last successful torch.onnx.export call, as data."""

    exporter: str
    target: str | None
    file_sha256: str | None
    options: dict[str, Any]
    notes: tuple[str, ...]
    input_names: tuple[str, ...]
    custom_translation: bool
    copy: tuple[str, ...] = ()    # how the proved evidence copy differs from the script's
    # model, and why (empty: the script's own model is proved)
    sink: Sink = Sink.NONE        # where the export went (``target``: the file, if any)
    training: bool = False        # the module was exported in training mode
    move_to: int | None = None    # the opset to relabel the model to (pr/export.py: the
    # TorchScript exporter unavailable, dynamo built opset 18 for an older asked opset)


@dataclass(frozen=True)
class Capture:
    """Everything the prover receives from the script's process."""

    outcome: Outcome
    error: str | None = None              # one line (the script's failure)
    traceback: str | None = None          # capped; shown with --debug
    problem: str | None = None            # one line (UNUSABLE, RUNNER_FAILED)
    export_errors: tuple[str, ...] = ()   # each failed torch.onnx.export call
    exports_done: int = 0
    backward_calls: int = 0
    export: ExportInfo | None = None
    python_names: tuple[str | None, ...] = ()   # a name per tensor argument of the export
    requires: tuple[bool, ...] = ()
    swapped: tuple[int, ...] = ()         # placeholder arguments replaced by backward's tensors
    probing_all: bool = False             # no argument required grad: every float one probed
    n_outputs: int = 0
    float_dtype: str = "float32"
    params: tuple[tuple[str, tuple[int, ...], str, bool], ...] = ()   # name, shape, dtype, rg
    module: ModuleFile = field(default_factory=ModuleFile)
    backward: tuple[BackwardSeen, ...] = ()     # the script's own backward calls
    leaf_grads: tuple[GradSeen | None, ...] = ()   # per tensor argument; None: not reached
    param_grads: dict[str, GradSeen] = field(default_factory=dict)
    leaves: tuple[torch.Tensor, ...] = ()  # not in the manifest: tensors.pt
    model: bytes = b""                     # not in the manifest: model.onnx


# ============================================================================ writing
def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def write_capture(where: Path, cap: Capture) -> None:
    """Write ``cap`` into ``where``; the manifest last, by rename, so its presence means the
    capture is whole."""
    if cap.model:
        (where / MODEL).write_bytes(cap.model)
    torch.save({"leaves": [t.detach().clone() for t in cap.leaves]}, where / TENSORS)
    body = {f.name: _plain(getattr(cap, f.name)) for f in dataclasses.fields(cap)
            if f.name not in ("leaves", "model")}
    body["format"] = WIRE_FORMAT
    tmp = where / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(body), encoding="utf-8")
    os.replace(tmp, where / MANIFEST)


# ============================================================================ reading
def _check(value: Any, kind: Any, what: str) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise WireError(f"capture field {what}: expected {getattr(kind, '__name__', kind)}, "
                        f"got {type(value).__name__}")
    return value


def _opt_str(value: Any, what: str) -> str | None:
    return None if value is None else _check(value, str, what)


def _strs(value: Any, what: str) -> tuple[str, ...]:
    return tuple(_check(v, str, what) for v in _check(value, list, what))


def _export_info(d: Any) -> ExportInfo | None:
    if d is None:
        return None
    _check(d, dict, "export")
    return ExportInfo(_check(d["exporter"], str, "export.exporter"),
                      _opt_str(d["target"], "export.target"),
                      _opt_str(d["file_sha256"], "export.file_sha256"),
                      _check(d["options"], dict, "export.options"),
                      _strs(d["notes"], "export.notes"), _strs(d["input_names"], "input_names"),
                      _check(d["custom_translation"], bool, "export.custom_translation"),
                      _strs(d["copy"], "export.copy"), Sink(d["sink"]),
                      _check(d["training"], bool, "export.training"),
                      None if d.get("move_to") is None
                      else _check(d["move_to"], int, "export.move_to"))


def _param(p: Any) -> tuple[str, tuple[int, ...], str, bool]:
    name, shape, dtype, rg = _check(p, list, "params")
    return (_check(name, str, "params"), tuple(_check(s, int, "params") for s in shape),
            _check(dtype, str, "params"), _check(rg, bool, "params"))


def _grad(v: Any) -> GradSeen:
    v = _check(v, dict, "gradients")
    peak = v["peak"]
    if peak is not None:
        peak = float(_check(peak, (int, float), "gradients.peak"))
    return GradSeen(Grad(v["kind"]), peak)


def read_capture(where: Path) -> Capture:
    """The capture in ``where`` (WireError when missing or malformed)."""
    path = where / MANIFEST
    if not path.is_file():
        raise WireError("the script's process wrote no capture")
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise WireError(f"the capture manifest is larger than {MAX_MANIFEST_BYTES} bytes")
    try:
        d = _check(json.loads(path.read_text(encoding="utf-8")), dict, "manifest")
        if d.get("format") != WIRE_FORMAT:
            raise WireError(f"capture format {d.get('format')!r}, expected {WIRE_FORMAT}")
        m = _check(d["module"], dict, "module")
        tensors = torch.load(where / TENSORS, weights_only=True)
        leaves = _check(_check(tensors, dict, "tensors")["leaves"], list, "leaves")
        model = (where / MODEL).read_bytes() if (where / MODEL).is_file() else b""
        return Capture(
            outcome=Outcome(d["outcome"]),
            error=_opt_str(d["error"], "error"), traceback=_opt_str(d["traceback"], "traceback"),
            problem=_opt_str(d["problem"], "problem"),
            export_errors=_strs(d["export_errors"], "export_errors"),
            exports_done=_check(d["exports_done"], int, "exports_done"),
            backward_calls=_check(d["backward_calls"], int, "backward_calls"),
            export=_export_info(d["export"]),
            python_names=tuple(_opt_str(n, "python_names")
                               for n in _check(d["python_names"], list, "python_names")),
            requires=tuple(_check(r, bool, "requires") for r in d["requires"]),
            swapped=tuple(_check(i, int, "swapped") for i in d["swapped"]),
            probing_all=_check(d["probing_all"], bool, "probing_all"),
            n_outputs=_check(d["n_outputs"], int, "n_outputs"),
            float_dtype=_check(d["float_dtype"], str, "float_dtype"),
            params=tuple(_param(p) for p in _check(d["params"], list, "params")),
            module=ModuleFile(ModuleFormat(m["format"]), _check(m["file"], str, "module.file"),
                              _check(m["prefix"], str, "module.prefix"),
                              _check(m["how"], str, "module.how"),
                              _check(m["why"], str, "module.why")),
            backward=tuple(BackwardSeen(_check(b["api"], str, "backward.api"),
                                        _strs(b["targets"], "backward.targets"),
                                        _opt_str(b["error"], "backward.error"))
                           for b in _check(d["backward"], list, "backward")),
            leaf_grads=tuple(None if g is None else _grad(g)
                             for g in _check(d["leaf_grads"], list, "leaf_grads")),
            param_grads={_check(k, str, "param_grads"): _grad(v)
                         for k, v in _check(d["param_grads"], dict, "param_grads").items()},
            leaves=tuple(_check(t, torch.Tensor, "leaves") for t in leaves),
            model=model)
    except WireError:
        raise
    except (KeyError, TypeError, ValueError, OSError, RuntimeError, AttributeError) as exc:
        raise WireError(f"malformed capture: {type(exc).__name__}: {exc}"[:300]) from None


def dtype_of(name: str) -> torch.dtype:
    """``"float64"`` -> torch.float64 (WireError for anything that is not a dtype)."""
    value = getattr(torch, name, None) if name.isidentifier() else None
    if not isinstance(value, torch.dtype):
        raise WireError(f"capture field float_dtype: {name!r} is not a torch dtype")
    return value
