"""The script's own torch.onnx.export call: made as written, proved as written where it can be.

The script's call runs exactly as the script wrote it (same exporter, options and file), so
the file it leaves is byte for byte what ``python script.py`` writes. Two cases need more:

- the call as written succeeds but its model cannot be proved as is (``export_params=False``
  leaves the weights out; the dynamo exporter, asked for an opset it cannot convert to,
  silently writes opset 18): the runner makes a second export, *the evidence copy*, in
  memory, leaves the script's file alone, and records what differs and why
  (``ExportCall.copy``);
- the call as written raises on current PyTorch (an open file object with the dynamo
  exporter, legacy positional arguments, options torch no longer accepts): the runner
  exports another way that works and, so that the script can go on, writes that model where
  the script pointed -- ``python script.py`` would have stopped at that call -- and says
  so (``ExportCall.notes``).

Every note about an exporter's behaviour is checked against the installed torch by a test
(``tests/test_run_in_context.py``).
"""
from __future__ import annotations

import hashlib
import inspect
import io
import os
import re
from pathlib import Path
from typing import Any, Callable

import onnx
import torch

from ..case import DEFAULT_OPSET, DYNAMO_MIN_OPSET, TORCHSCRIPT_MAX_OPSET
from ..errors import describe
from ..engine.export import quiet
from ..engine.versions.runtimes import model_opset
from .capture import ExportCall, ScriptRun, instrumenting, tensor_leaves
from .sink import exported_training, sink_of

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
"""Terminal colours in torch.export's messages: a one-line reason is plain text."""

# torch 1.x's positional order after ``f``; torch 2.13 takes these as keywords only.
_LEGACY_POSITIONAL = ("export_params", "verbose", "training", "input_names", "output_names",
                      "operator_export_type", "opset_version", "do_constant_folding",
                      "dynamic_axes", "keep_initializers_as_inputs", "custom_opsets",
                      "export_modules_as_functions")
_DYNAMO_ONLY = ("dynamic_shapes", "custom_translation_table", "external_data", "optimize",
                "report", "verify", "profile", "dump_exported_program", "artifacts_dir")
_TORCHSCRIPT_ONLY = ("operator_export_type", "custom_opsets", "export_modules_as_functions",
                     "autograd_inlining", "training", "dynamic_axes")



# ---------------------------------------------------------------------------- export
_FRESH = "_torch_prover_fresh_inputs"   # plan flag: export copies of the tensor arguments


def _fresh(args: Any) -> Any:
    if isinstance(args, torch.Tensor):
        return args.detach().clone().requires_grad_(args.requires_grad)
    if isinstance(args, (list, tuple)):
        return type(args)(_fresh(a) for a in args)
    if isinstance(args, dict):
        return {k: _fresh(v) for k, v in args.items()}
    return args


def _plans(options: dict[str, Any], holds_grad: bool = False
           ) -> list[tuple[dict[str, Any], str | None]]:
    """Ways to export once the call as written raised, in order: (options, what the runner
    changed or None)."""
    opset = options.get("opset_version")
    asked_dynamo = options.get("dynamo", True)      # torch 2.13's default

    def as_torchscript(opts: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in opts.items() if k not in _DYNAMO_ONLY} | {"dynamo": False}

    def as_dynamo(opts: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in opts.items() if k not in _TORCHSCRIPT_ONLY} | {"dynamo": True}

    # without TorchScript (removed, or raising), an opset below the dynamo exporter's
    # oldest is built at that oldest and relabelled by the prover (ExportCall.move_to)
    # the runner's own translations (ops the dynamo exporter decomposes, kept as TorchScript
    # kept them) only where the script asked for TorchScript: a dynamo script stays as written
    from .translations import noted, table
    at = opset or DEFAULT_OPSET
    own = {} if asked_dynamo else table(at)
    with_own = {"custom_translation_table": own} if own else {}
    oldest = (f"exported with the dynamo exporter at opset {DYNAMO_MIN_OPSET} (the oldest it "
              f"builds) for the prover to move to opset {opset}")
    at_oldest = (as_dynamo(options) | {"opset_version": DYNAMO_MIN_OPSET} | with_own,
                 oldest + (noted(at) if own else ""))
    # a translation refusing a call outside its op's meaning (translations.NotTheOp): the
    # exporter's own decomposition, which intent.py names as such
    plain = (" without torch-prover's own translations (a call outside their ops' meaning:"
             " the exporter's decomposition)")
    if asked_dynamo:
        if opset is not None and opset < DYNAMO_MIN_OPSET:
            return [(as_torchscript(options),
                     f"exported with the TorchScript exporter (dynamo=False) at opset {opset}"),
                    at_oldest]
        if opset is not None and opset > DEFAULT_OPSET:
            return [(options | {"opset_version": DEFAULT_OPSET},
                     f"torch {torch.__version__.split('+')[0]}'s exporter cannot produce opset "
                     f"{opset}: exported at opset {DEFAULT_OPSET}")]
        plans: list[tuple[dict[str, Any], str | None]] = [(options, None)]
        if holds_grad:
            plans.append((options | {_FRESH: True},
                          "exported fresh copies of the inputs (same values, no .grad): "
                          "torch.export can fail on inputs that already hold a gradient"))
        if opset is None or opset <= TORCHSCRIPT_MAX_OPSET:
            plans.append((as_torchscript(options), "exported with the TorchScript exporter "
                                                   "(dynamo=False) instead"))
        return plans
    plans = [(options, None)]
    if opset is None or DYNAMO_MIN_OPSET <= opset <= DEFAULT_OPSET:
        plans.append((as_dynamo(options) | with_own,
                      f"exported with the dynamo exporter instead{noted(at) if own else ''}"))
        if own:
            plans.append((as_dynamo(options), f"exported with the dynamo exporter instead{plain}"))
    elif opset < DYNAMO_MIN_OPSET:
        plans.append(at_oldest)
        if own:
            plans.append((as_dynamo(options) | {"opset_version": DYNAMO_MIN_OPSET},
                          oldest + plain))
    return plans


def _below_dynamo(asked: int | None, got: int | None, exporter: str) -> int | None:
    """The opset the prover must move a dynamo model to (``ExportCall.move_to``): the one
    the script asked for, when it is below what the dynamo exporter builds and the model is
    not at it (the TorchScript exporter, which builds it, being unavailable)."""
    if exporter == "dynamo" and asked is not None and asked < DYNAMO_MIN_OPSET and got != asked:
        return asked
    return None


def shown_path(path: str) -> str:
    """A path as the user would type it: relative to the cwd when under it."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def _target_name(f: Any) -> str | None:
    if f is None:
        return None
    if isinstance(f, (str, os.PathLike)):
        return os.path.abspath(os.fspath(f))
    name = getattr(f, "name", None)
    return os.path.abspath(name) if isinstance(name, str) else None


def _export_once(real: Callable, module: Any, args: Any, f: Any, options: dict[str, Any],
                 call: ExportCall) -> Any:
    """One export attempt; sets call.model (and writes the script's file). Returns what
    torch.onnx.export returned."""
    file_object = f is not None and not isinstance(f, (str, os.PathLike))
    data: bytes | None = None
    if options.get(_FRESH):
        options = {k: v for k, v in options.items() if k != _FRESH}
        args = _fresh(args)
        options["kwargs"] = _fresh(options.get("kwargs"))
    with quiet():
        if options.get("dynamo", True):
            returned = real(module, args, None if file_object else f, **options)
            model = returned.model_proto
            if file_object:
                data = model.SerializeToString()
                f.write(data)
                where = shown_path(call.target) if call.target else "a file object"
                call.notes.append(f"the script exports to an open file ({where}), which the "
                                  "dynamo exporter does not accept (it takes a path or an "
                                  "io.BytesIO): exported in memory and wrote the bytes to "
                                  "that file")
        else:
            if f is None or file_object:
                buf = io.BytesIO()
                returned = real(module, args, buf, **options)
                data = buf.getvalue()
                if file_object:
                    f.write(data)
            else:
                returned = real(module, args, f, **options)
            model = onnx.load_from_string(data) if data is not None else onnx.load(os.fspath(f))
    call.model = model
    call.exporter = "dynamo" if options.get("dynamo", True) else "torchscript"
    if data is None and call.target and os.path.exists(call.target):
        data = Path(call.target).read_bytes()
    call.file_sha256 = hashlib.sha256(data).hexdigest() if data is not None and f is not None \
        else None
    return returned


def _pristine(model: Any) -> Any:
    """A scripted module as it was before the export: the TorchScript exporter rewrites its
    graph in place, and the probe must run the model the script ran."""
    if isinstance(model, torch.jit.ScriptModule):
        buf = io.BytesIO()       # a deepcopy would share the compiled graphs
        try:
            torch.jit.save(model, buf)
            buf.seek(0)
            return torch.jit.load(buf)
        except Exception:
            return model
    return model


def _as_written(real: Callable, module: Any, args: Any, f: Any, legacy: tuple,
                options: dict[str, Any]) -> tuple[Any, bytes | None, onnx.ModelProto]:
    """The script's call exactly as written: (what torch returned, the bytes written to
    ``f`` or None, the model). Raises what torch raises."""
    dynamo = options.get("dynamo", True)
    if f is not None and not isinstance(f, (str, os.PathLike)) and not dynamo:
        buf = io.BytesIO()   # a write-only file object: the same bytes, kept to read back
        with quiet():
            returned = real(module, args, buf, *legacy, **options)
        data = buf.getvalue()
        f.write(data)
        return returned, data, onnx.load_from_string(data)
    start = f.tell() if isinstance(f, io.BytesIO) else 0
    with quiet():
        returned = real(module, args, f, *legacy, **options)
    if isinstance(f, io.BytesIO):
        data = f.getvalue()[start:]
        return returned, data, onnx.load_from_string(data)
    if f is not None:
        path = os.fspath(f)
        return returned, Path(path).read_bytes(), onnx.load(path)
    if returned is None or getattr(returned, "model_proto", None) is None:
        raise ValueError("the export returned no model")
    return returned, None, returned.model_proto


def _dangling(model: onnx.ModelProto) -> list[str]:
    """Values the graph's nodes read that nothing provides (parameters left out by
    ``export_params=False``; torch 2.13's dynamo exporter keeps them when writing to an
    io.BytesIO and leaves them out when writing to a path)."""
    g = model.graph
    known = {i.name for i in g.input} | {t.name for t in g.initializer}
    known |= {o for n in g.node for o in n.output}
    return sorted({i for n in g.node for i in n.input if i and i not in known})


def _parameter_inputs(model: onnx.ModelProto, module: Any) -> list[str]:
    """Graph inputs named after the module's own parameters and buffers: where
    ``export_params=False`` leaves them with the TorchScript exporter (the names come from
    ``named_parameters()``), so the graph has more inputs than the script passed tensors."""
    if not isinstance(module, torch.nn.Module):
        return []
    own = {n for n, _ in module.named_parameters()} | {n for n, _ in module.named_buffers()}
    return [i.name for i in model.graph.input if i.name in own]


def _copy_options(options: dict[str, Any], model: onnx.ModelProto, call: ExportCall,
                  module: Any = None) -> dict[str, Any] | None:
    """Options for the evidence copy when the script's model cannot be proved as is (and
    what differs, in ``call.copy``), else None."""
    copy = dict(options)
    left_out = _dangling(model)
    as_inputs = _parameter_inputs(model, module)
    if options.get("export_params") is False and left_out:
        copy["export_params"] = True
        call.copy.append(f"export_params=True: the script's export_params=False left "
                         f"{', '.join(left_out)} out of its model, so no runtime can run it")
    elif options.get("export_params") is False and as_inputs:
        copy["export_params"] = True
        call.copy.append(f"export_params=True: the script's export_params=False made the "
                         f"module's parameters {', '.join(as_inputs)} graph inputs (named by "
                         "its named_parameters()); the copy holds their values, so the graph's "
                         "inputs are the script's tensors")
    asked, got = options.get("opset_version"), model_opset(model)
    if asked is not None and got != asked and options.get("dynamo", True):
        why = (f"torch {torch.__version__.split('+')[0]}'s dynamo exporter, asked for opset "
               f"{asked}, wrote opset {got} (it could not convert the model)")
        if asked < DYNAMO_MIN_OPSET:
            copy = {k: v for k, v in copy.items() if k not in _DYNAMO_ONLY} | {"dynamo": False}
            call.copy.append(f"the TorchScript exporter (dynamo=False) at opset {asked}: {why}")
        elif asked > DEFAULT_OPSET:
            copy["opset_version"] = DEFAULT_OPSET
            call.copy.append(f"opset {DEFAULT_OPSET}: {why}")
    elif asked is not None and got != asked:
        call.notes.append(f"asked for opset {asked}, the exporter produced opset {got}")
    return copy if call.copy else None


def _evidence_copy(real: Callable, module: Any, args: Any, options: dict[str, Any],
                   call: ExportCall) -> onnx.ModelProto:
    """The second export, in memory (the script's file is not touched)."""
    with quiet():
        if options.get("dynamo", True):
            return real(module, args, None, **options).model_proto
        buf = io.BytesIO()
        real(module, args, buf, **options)
        return onnx.load_from_string(buf.getvalue())


def wrap_export(run: ScriptRun, real: Callable, default_dynamo: bool = True) -> Callable:
    accepted = set(inspect.signature(real).parameters)

    def export(model: Any, args: Any = (), f: Any = None, *legacy: Any, **options: Any) -> Any:
        if run.busy:
            return real(model, args, f, *legacy, **options)
        call = ExportCall(_pristine(model), args, dict(options.get("kwargs") or {}), {},
                          target=_target_name(f), sink=sink_of(f))
        run.exports.append(call)
        written = dict(options)
        written.setdefault("dynamo", default_dynamo)
        was_training = bool(getattr(model, "training", False))
        with instrumenting(run):
            try:
                returned, data, made = _as_written(real, model, args, f, legacy, written)
            except Exception as exc:  # the exporters raise many types
                returned = _recover(run, real, accepted, model, args, f, legacy, options, call,
                                    default_dynamo, exc)
                call.returned = returned
                call.training = exported_training(model, was_training, call.options)
                return returned
            call.returned = returned
            call.training = exported_training(model, was_training, written)
            call.file_sha256 = hashlib.sha256(data).hexdigest() if data is not None else None
            call.model, call.options = made, written
            call.exporter = "dynamo" if written.get("dynamo", True) else "torchscript"
            copy = _copy_options(written, made, call, model)
            if copy is not None:
                try:
                    call.model = _evidence_copy(real, model, args, copy, call)
                except Exception as exc:  # as above: the script's own model is proved
                    call.notes.append(f"the evidence copy ({'; '.join(call.copy)}) failed "
                                      f"({describe(exc)}): proving the script's model as is")
                    call.copy.clear()
                    call.move_to = _below_dynamo(written.get("opset_version"),
                                                 model_opset(made), call.exporter)
                else:
                    call.options = copy
                    call.exporter = "dynamo" if copy.get("dynamo", True) else "torchscript"
            return returned
    return export


def _recover(run: ScriptRun, real: Callable, accepted: set[str], model: Any, args: Any,
             f: Any, legacy: tuple, options: dict[str, Any], call: ExportCall,
             default_dynamo: bool, raised: BaseException) -> Any:
    """The call as written raised: export another way that works, write that model where the
    script pointed (so the script can go on), and say what was done."""
    for name, value in zip(_LEGACY_POSITIONAL, legacy):
        options.setdefault(name, value)
    if legacy:
        call.notes.append(f"passed {len(legacy)} positional argument(s) after f as keywords "
                          f"({', '.join(_LEGACY_POSITIONAL[:len(legacy)])})")
    for name in [k for k in options if k not in accepted]:
        call.notes.append(f"dropped {name}=, which torch {torch.__version__.split('+')[0]}'s "
                          "torch.onnx.export no longer accepts")
        options.pop(name)
    options.setdefault("dynamo", default_dynamo)
    if options.get("export_params") is False:
        options["export_params"] = True
        call.notes.append("export_params=False leaves the parameters out of the model, so "
                          "nothing could run it: exported with export_params=True")
    first: BaseException = raised
    errors: dict[str, str] = {}     # exporter -> its first failure
    holds_grad = any(t.is_leaf and t.grad is not None
                     for t in tensor_leaves((args, options.get("kwargs"))))
    for opts, note in _plans(options, holds_grad):
        try:
            returned = _export_once(real, model, args, f, opts, call)
        except Exception as exc:  # the exporters raise many types
            errors.setdefault("dynamo" if opts.get("dynamo", True) else "TorchScript",
                              _ANSI.sub("", describe(exc)))
            continue
        call.options = {k: v for k, v in opts.items() if k != _FRESH}
        call.notes.append(f"the export as written raised {describe(first)}"
                          + (f"; {note}" if note else ""))
        got = model_opset(call.model)
        asked = opts.get("opset_version")
        if asked is not None and got != asked:
            call.notes.append(f"asked for opset {asked}, the exporter produced opset {got}")
        call.move_to = _below_dynamo(options.get("opset_version"), got, call.exporter)
        shown = shown_path(call.target) if call.target else None
        if shown and not any(shown in n for n in call.notes):
            call.notes.append(f"wrote that model to {shown_path(call.target)} so the script "
                              "could go on (`python script.py` would have stopped at this "
                              "call)")
        return returned
    call.error = "; ".join(f"{k}: {v}" for k, v in errors.items()) or _ANSI.sub(
        "", describe(first))
    raise first
