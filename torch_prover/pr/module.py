"""The script's module, carried from its process to the prover's as a graph, not as code.

Why: the autograd probe needs a PyTorch module in the prover's process, but importing or
re-running the script there would hand it the prover. So the child saves the module as a
graph of ATen ops, which the prover runs without any of the script's Python:

1. ``torch.export.export`` of the module in the mode the script exported it in (eval,
   unless the export ran it in training mode: then a Dropout draws its mask in the probe as
   in the exported graph), saved with ``torch.export.save``. A graph calling an op the script
   itself registered (a reference op's ``torch.library.custom_op``), which the prover's
   process does not have, goes to 2.;
2. otherwise TorchScript: a scripted module as is, anything else ``torch.jit.trace``-d
   (tracing runs the module eagerly, so a reference op traces as its differentiable
   reference), saved with ``torch.jit.save``;
3. without TorchScript, such a module is exported again with ``torch.compiler.is_exporting()``
   False, so each reference op runs its differentiable reference, as under tracing (2.);
4. otherwise nothing, and ``ModuleFile.why`` says why; the runner then stops with exit 2.

The module is wrapped when the script's export arguments were not a flat list of tensors
(a Python int among them, keyword arguments): the wrapper takes the tensors only and fills
the rest back in, and its parameter names carry the prefix ``inner.``, stripped on loading.
Parameter names match the exported model's initializers, so both sides check that they
survive the round trip (name, shape, dtype, requires_grad).

Loading is guarded: ``torch.export.load`` falls back to full unpickling for some payloads,
which a forged file could use to run code in the prover. While it loads, ``torch.load`` is
forced to ``weights_only=True`` and the archive reader's other unpicklers refuse.
``torch.jit.load`` reads TorchScript, which cannot call back into Python.
"""
from __future__ import annotations

import contextlib
import importlib
from pathlib import Path
from typing import Any, Iterator, Sequence

import torch

from ..errors import ProverError, describe
from ..engine.export import quiet
from .capture import refill
from .sink import mode_fixed
from .wire import ModuleFile, ModuleFormat

PROGRAM_FILE, TORCHSCRIPT_FILE = "module.pt2", "module.pt"
PREFIX = "inner."
PORTABLE_NAMESPACES = frozenset({"aten", "prims", "higher_order", "quantized_decomposed"})
"""Op namespaces the prover's process has: torch's own (``quantized_decomposed``, torch's
fake-quantization ops, registered by the module :func:`load_module` imports first)."""

ParamTable = tuple[tuple[str, tuple[int, ...], str, bool], ...]


class ModuleLoadError(ProverError, ValueError):
    """The script's module could not be serialized or loaded; the message says why."""


class Bound(torch.nn.Module):
    """``inner(*args, **kwargs)`` with the script's non-tensor arguments filled back in:
    ``forward`` takes only the tensors, in the order the export arguments hold them, and
    returns a structseq (``torch.return_types.topk``) as a plain tuple."""

    def __init__(self, inner: torch.nn.Module, template: tuple[tuple, dict]):
        super().__init__()
        self.inner = inner
        self.template = template

    def forward(self, *tensors: torch.Tensor) -> Any:
        args, kwargs = refill(self.template, iter(tensors))
        out = self.inner(*args, **kwargs)
        return tuple(out) if isinstance(out, tuple) and type(out) is not tuple else out


class Loaded(torch.nn.Module):
    """The loaded graph as the probe uses a case's module: parameter names as the script's
    module has them (the exported model's initializer names), and a fixed mode -- the graph
    was made in the mode the script exported in, so ``eval()``/``train()`` change nothing
    (an ExportedProgram's module refuses both)."""

    def __init__(self, graph: torch.nn.Module, prefix: str):
        super().__init__()
        self.graph = graph
        self.prefix = prefix

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        for name, p in self.graph.named_parameters(remove_duplicate=remove_duplicate):
            yield prefix + name.removeprefix(self.prefix), p

    def train(self, mode: bool = True) -> "Loaded":
        return self

    def forward(self, *tensors: torch.Tensor) -> Any:
        return self.graph(*tensors)


def param_table(module: torch.nn.Module, prefix: str = "") -> ParamTable:
    """(name, shape, dtype, requires_grad) of every parameter, sorted by name."""
    return tuple(sorted((n.removeprefix(prefix), tuple(p.shape),
                         str(p.dtype).removeprefix("torch."), bool(p.requires_grad))
                        for n, p in module.named_parameters()))


# ============================================================================ child side
def _foreign_ops(program: Any) -> list[str]:
    """Ops in the program's graphs that a fresh process does not have (custom ops)."""
    found = []
    for gm in program.graph_module.modules():
        if not isinstance(gm, torch.fx.GraphModule):
            continue
        for node in gm.graph.nodes:
            ns = getattr(node.target, "namespace", None)
            if node.op == "call_function" and ns is not None and ns not in PORTABLE_NAMESPACES:
                found.append(str(node.target))
    return sorted(set(found))


@contextlib.contextmanager
def _references_eager() -> Iterator[None]:
    """``torch.compiler.is_exporting()`` False while the module is exported again: a
    reference op (``torch-prover script``'s ``as_onnx_op``: the custom op while exporting, its
    differentiable reference otherwise) then runs its reference, as under ``torch.jit.trace``
    (step 2), so the graph holds only ATen ops -- the way that works without TorchScript."""
    import torch.compiler
    real = torch.compiler.is_exporting
    torch.compiler.is_exporting = lambda: False
    try:
        yield
    finally:
        torch.compiler.is_exporting = real


def save_module(module: torch.nn.Module, leaves: Sequence[torch.Tensor],
                requires: Sequence[bool], template: Any, flat: bool, where: Path,
                training: bool = False) -> ModuleFile:
    """Serialize ``module`` (called on ``leaves``, those flagged in ``requires`` requiring
    grad, as the probe will call it) into ``where``, in training mode when the script's
    export ran it so (an ExportedProgram's module keeps the mode its graph fixed); never
    raises."""
    if mode_fixed(module):
        mode = "the mode its graph fixed (an ExportedProgram's module refuses train() and eval())"
    else:
        module.train(training)
        mode = "training mode" if training else "eval mode"
    target = module if flat else Bound(module, template)
    prefix = "" if flat else PREFIX
    example = tuple(t.detach().clone().requires_grad_(r) for t, r in zip(leaves, requires))
    wanted = param_table(target, prefix)
    why, foreign_seen = "", False
    # a flat module is tried wrapped too: Bound returns a plain tuple, where torch.export
    # cannot serialize a structseq output (torch.return_types.topk) and TorchScript may be gone
    ways = [(target, prefix)] + ([(Bound(module, template), PREFIX)] if flat else [])

    def exported(eager: bool) -> ModuleFile | None:
        nonlocal why, foreign_seen
        for candidate, pre in ways if not isinstance(module, torch.jit.ScriptModule) else ():
            try:
                with quiet(), _references_eager() if eager else contextlib.nullcontext():
                    program = torch.export.export(candidate, example)
                foreign = _foreign_ops(program)
                if foreign:
                    foreign_seen = True
                    raise ModuleLoadError(f"its graph calls {', '.join(foreign)}, defined only "
                                          "in the script's process")
                torch.export.save(program, where / PROGRAM_FILE)
                done = ModuleFile(ModuleFormat.EXPORTED_PROGRAM, PROGRAM_FILE, pre,
                                  f"torch.export.export of the module in {mode}" + (
                                      ", its reference ops run as their references (torch."
                                      "compiler.is_exporting() False, as under torch.jit.trace)"
                                      if eager else ""), why if eager else "")
                load_module(where, done, param_table(candidate, pre))   # the prover's round trip
                return done
            except Exception as exc:  # torch.export raises many types; the fallback decides
                why = why or f"torch.export: {describe(exc)}"
        return None

    done = exported(eager=False)
    if done is not None:
        return done
    try:
        if isinstance(target, torch.jit.ScriptModule):
            scripted, how = target, "the scripted module, saved as is"
        else:
            with quiet():
                scripted = torch.jit.trace(target, example, check_trace=False, strict=False)
            how = f"torch.jit.trace of the module in {mode}"
        torch.jit.save(scripted, str(where / TORCHSCRIPT_FILE))
        done = ModuleFile(ModuleFormat.TORCHSCRIPT, TORCHSCRIPT_FILE, prefix, how, why)
        load_module(where, done, wanted)
        return done
    except Exception as exc:  # as above
        why = "; ".join(w for w in (why, f"TorchScript: {describe(exc)}") if w)
    # TorchScript gone: a reference op's module exported with its references run eagerly
    done = exported(eager=True) if foreign_seen else None
    return done or ModuleFile(ModuleFormat.NONE, "", prefix, "", why)


# ============================================================================ prover side
class _Refuse:
    """Stands in for an unpickler while an ExportedProgram loads."""

    def __getattr__(self, name: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise ModuleLoadError("the saved program holds a pickled object; refusing to "
                                  "unpickle what the script's process wrote")
        return refuse


def ready_loader() -> None:
    """Import the ExportedProgram reader (~1 s: it pulls in torch._dynamo and
    torch._inductor) -- while the script's process runs, so the prover does not wait for it
    afterwards; or, when the script's process is forked from the prover (``process.Start.
    FORK``), before: the script's process then inherits torch._dynamo instead of importing
    it again before the script (``child.torch_disable``). Idempotent."""
    with contextlib.suppress(ImportError):
        from torch.export.pt2_archive import _package  # noqa: F401


@contextlib.contextmanager
def _weights_only() -> Iterator[None]:
    """torch.load forced to weights_only=True; the pt2 archive's raw unpicklers refused."""
    real_load = torch.load

    def load(*args: Any, **kwargs: Any) -> Any:
        kwargs["weights_only"] = True
        return real_load(*args, **kwargs)
    patches: list[tuple[Any, str, Any]] = [(torch, "load", load),
                                           (torch._C, "_pickle_load_obj", _Refuse().load)]
    try:
        from torch.export.pt2_archive import _package
        patches.append((_package, "pickle", _Refuse()))
    except ImportError:   # another torch layout: torch.load is still forced
        pass
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    try:
        for owner, name, new in patches:
            setattr(owner, name, new)
        yield
    finally:
        for owner, name, old in saved:
            setattr(owner, name, old)


def load_module(where: Path, mf: ModuleFile, expected: ParamTable) -> Loaded:
    """The module saved in ``where``, checked against the parameters the script's module had
    (ModuleLoadError with one line otherwise)."""
    if mf.format is ModuleFormat.NONE:
        raise ModuleLoadError(f"the script's module could not be saved as a graph ({mf.why})")
    if mf.file not in (PROGRAM_FILE, TORCHSCRIPT_FILE) or mf.prefix not in ("", PREFIX):
        raise ModuleLoadError(f"unexpected module file {mf.file!r} / prefix {mf.prefix!r}")
    path = where / mf.file
    try:
        with quiet():
            if mf.format is ModuleFormat.EXPORTED_PROGRAM:
                importlib.import_module("torch.ao.quantization.fx._decomposed")  # its ops
                with _weights_only():
                    graph = torch.export.load(path).module()
            else:
                graph = torch.jit.load(str(path), map_location="cpu")
    except ModuleLoadError:
        raise
    except Exception as exc:  # the loaders raise many types
        raise ModuleLoadError(f"loading the script's module ({mf.format.value}) failed: "
                              f"{describe(exc)}") from None
    loaded = Loaded(graph, mf.prefix)
    got = param_table(loaded)
    if got != tuple(expected):
        lost = sorted({p[0] for p in expected} ^ {p[0] for p in got})
        raise ModuleLoadError(f"the script's module lost its parameters on the way "
                              f"({mf.format.value}): "
                              + (", ".join(lost) if lost else "shapes, dtypes or requires_grad "
                                 "differ"))
    return loaded
