"""Guarded reuse of the exporter's per-call tables, for batches of many small exports.

torch 2.13's ``torch.onnx.export`` rebuilds its ONNX registry from torchlib on every call
(~65% of a small export) and then rebuilds the decomposition table and the list of
CompositeImplicitAutograd ops from it. For the same opset these are the same every time,
so this module memoises them; and it registers the ~5700 Python kernels of torch's
CompositeImplicitAutograd override (twice per export) without ``py_impl``'s per-call
annotation cost (``_lean_py_impl``). The reuse touches private torch internals, so it is
guarded: it only switches on for the torch version it was written against, and only
after exporting a few probe models both ways gives byte-identical ModelProtos; otherwise
the stock path stays in place and ``STATE`` says why.
"""
from __future__ import annotations

import contextlib
import copy
import hashlib
import sys
from dataclasses import dataclass

import torch

SUPPORTED_TORCH = ("2.13.",)


@dataclass
class _State:
    enabled: bool = False
    why: str = "not requested"


STATE = _State()
_originals: dict[str, object] = {}
_TABLES: dict[frozenset, dict] = {}   # registered-op set -> decomposition table
_BASES: dict[tuple, object] = {}      # (opset, loaded ops) -> registry built by torchlib


def _copy_registry(reg):
    """A copy whose per-op lists can be extended (custom translations) without leaking."""
    new = copy.copy(reg)
    new.functions = {k: list(v) for k, v in reg.functions.items()}
    return new


def _ops_key() -> tuple:
    """The loaded op namespaces and their ops: new custom ops or newly imported op
    libraries change it, and with it what the stock path would build."""
    return tuple((ns, tuple(getattr(torch.ops, ns)) if hasattr(torch.ops, ns) else ())
                 for ns in sorted(torch.ops._dir))


def _patch() -> None:
    from torch.export import exported_program as ep
    from torch.onnx._internal.exporter import _decomp, _fx_passes, _registration

    cls = _registration.ONNXRegistry
    _originals["from_torchlib"] = cls.__dict__["from_torchlib"]
    _originals["decompose_with_registry"] = _fx_passes.decompose_with_registry
    _originals["cia"] = ep._collect_all_valid_cia_ops
    stock_from_torchlib = cls.from_torchlib

    def from_torchlib(cls_, opset_version=_registration._constants.TORCHLIB_OPSET):
        # the registry only holds torchlib functions whose op is loaded when it is built
        # (quantized_decomposed appears once torch.ao's module is imported): key on that too
        key = (opset_version, _ops_key())
        if key not in _BASES:
            _BASES[key] = stock_from_torchlib(opset_version=opset_version)
        return _copy_registry(_BASES[key])

    def decompose_with_registry(exported_program, registry):
        ops = frozenset(_decomp.get_onnx_implemented_overloads(registry))
        table = _TABLES.get(ops)
        if table is None:
            table = _TABLES[ops] = _decomp.create_onnx_friendly_decomposition_table(set(ops))
        return exported_program.run_decompositions(dict(table))

    cia_cache: dict[tuple, set] = {}
    stock_cia = ep._collect_all_valid_cia_ops

    def collect_cia():
        key = _ops_key()
        if key not in cia_cache:
            cia_cache[key] = stock_cia()
        return set(cia_cache[key])

    cls.from_torchlib = classmethod(from_torchlib)
    _fx_passes.decompose_with_registry = decompose_with_registry
    ep._collect_all_valid_cia_ops = collect_cia
    _originals["override_cia"] = stock_override = ep._override_composite_implicit_decomp

    @contextlib.contextmanager
    def override_cia(cia_ops_to_callable):
        cm = stock_override(cia_ops_to_callable)
        with _lean_py_impl():
            cm.__enter__()
        try:
            yield
        except BaseException:
            if not cm.__exit__(*sys.exc_info()):
                raise
        else:
            cm.__exit__(None, None, None)

    ep._override_composite_implicit_decomp = override_cia


@contextlib.contextmanager
def _lean_py_impl():
    """``OpOverload.py_impl`` without re-evaluating its inner function's annotations.

    Entering torch's ``_override_composite_implicit_decomp`` registers ~5700 Python
    kernels through ``OperatorBase.py_impl``, whose nested ``def inner(fn: Callable[_P,
    _T]) -> Callable[_P, _T]`` subscripts ``typing.Callable`` twice per call: about two
    thirds of the whole override, itself about half of a small export (measured with
    cProfile). For a ``DispatchKey`` this does exactly what the stock body does; every
    other key goes to the stock method."""
    from torch._C import DispatchKey
    from torch._ops import OperatorBase, OpOverload
    stock = OperatorBase.py_impl

    def py_impl(self, k):
        if type(k) is not DispatchKey or k == DispatchKey.Python:
            return stock(self, k)

        def inner(fn):
            if k in self.py_kernels:
                raise RuntimeError(f"Trying to override a python impl for {k} on operator "
                                   f"{self.name()}")
            self.py_kernels[k] = fn
            self._dispatch_cache.clear()
            return fn
        return inner

    OpOverload.py_impl = py_impl
    try:
        yield
    finally:
        del OpOverload.py_impl


def _unpatch() -> None:
    _TABLES.clear()
    _BASES.clear()
    from torch.export import exported_program as ep
    from torch.onnx._internal.exporter import _fx_passes, _registration
    if "from_torchlib" in _originals:
        _registration.ONNXRegistry.from_torchlib = _originals.pop("from_torchlib")
        _fx_passes.decompose_with_registry = _originals.pop("decompose_with_registry")
        ep._collect_all_valid_cia_ops = _originals.pop("cia")
        ep._override_composite_implicit_decomp = _originals.pop("override_cia")


def _probe_digests() -> list[str]:
    """Export one small model representative of the catalogue (parameters, integer
    inputs, decomposed ops, two outputs); digest it."""
    from .export import export_module

    class Probe(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.conv = torch.nn.Conv2d(2, 3, 3)

        def forward(self, x, idx):
            y = torch.topk(self.conv(x).flatten(1), 2)[0].index_select(0, idx).softmax(-1)
            z = torch.nn.functional.layer_norm(x[0, 0, :3, :4], (4,)).cumsum(0)
            return y, torch.floor(z)

    x = torch.arange(50, dtype=torch.float64).reshape(1, 2, 5, 5) / 7
    e = export_module(Probe().double(), (x, torch.tensor([0])), exporter="dynamo", opset=25,
                      input_names=["x0", "x1"], output_names=["y0", "y1"])
    return [hashlib.sha256(e.model.SerializeToString(deterministic=True)).hexdigest()]


def prewarm(opsets) -> None:
    """Build the registry and decomposition table for each opset now, in the parent, so
    forked workers inherit them instead of each rebuilding them (~0.4 s per opset)."""
    if not STATE.enabled:
        return
    from torch.onnx._internal.exporter import _decomp, _registration

    from .export import quiet
    from .versions.next_opset import exporter_opset
    # a case above the exporter's opset is exported at it and raised (next_opset)
    for opset in sorted({exporter_opset(o) for o in opsets}):
        with quiet():  # the registry logs each torchvision op it skips
            registry = _registration.ONNXRegistry.from_torchlib(opset_version=opset)
        ops = frozenset(_decomp.get_onnx_implemented_overloads(registry))
        if ops not in _TABLES:
            _TABLES[ops] = _decomp.create_onnx_friendly_decomposition_table(set(ops))


@contextlib.contextmanager
def _keeping_stock_registries():
    """Run the stock exporter unchanged, but keep the registry it builds: the reuse would
    build the very same one first thing (~1.3 s)."""
    from torch.onnx._internal.exporter import _registration
    cls = _registration.ONNXRegistry
    stock = cls.__dict__["from_torchlib"]

    def keeping(cls_, opset_version=_registration._constants.TORCHLIB_OPSET):
        registry = stock.__func__(cls_, opset_version=opset_version)
        _BASES[(opset_version, _ops_key())] = _copy_registry(registry)
        return registry

    cls.from_torchlib = classmethod(keeping)
    try:
        yield
    finally:
        cls.from_torchlib = stock


def enable() -> bool:
    """Switch the reuse on if it is proven safe here; returns whether it is on."""
    if STATE.enabled:
        return True
    if not torch.__version__.startswith(SUPPORTED_TORCH):
        STATE.why = f"torch {torch.__version__} is not one this reuse was checked against"
        return False
    try:
        with _keeping_stock_registries():
            stock = _probe_digests()
        _patch()
        reused = _probe_digests() + _probe_digests()
    except Exception as exc:  # any surprise in private internals: stay on the stock path
        _unpatch()
        STATE.why = f"disabled: {type(exc).__name__}: {exc}"
        return False
    if reused != stock * 2:
        _unpatch()
        STATE.why = "disabled: reused tables gave a different model than the stock exporter"
        return False
    STATE.enabled, STATE.why = True, "on: probe exports byte-identical to the stock path"
    return True


def disable() -> None:
    _unpatch()
    STATE.enabled, STATE.why = False, "switched off"
