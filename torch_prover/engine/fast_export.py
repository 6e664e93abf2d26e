"""Guarded reuse of the exporter's per-call tables, for batches of many small exports.

torch 2.13's ``torch.onnx.export`` rebuilds its ONNX registry from torchlib on every call
(~65% of a small export) and then rebuilds the decomposition table, the list of
CompositeImplicitAutograd (CIA) ops and the table's split into CIA and other ops from it.
For the same opset and loaded ops these are the same every time, so this module memoises
them (each keyed on what it depends on); and it replays torch's CIA override, which sets
~5700 Python kernels per export, without ``py_impl``'s per-kernel costs
(``_lean_override``). The reuse touches private torch internals, so it is
guarded: it only switches on for the torch version it was written against, and only
after exporting a few probe models both ways gives byte-identical ModelProtos; otherwise
the stock path stays in place and ``STATE`` says why.
"""
from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
from dataclasses import dataclass

import torch

SUPPORTED_TORCH = ("2.13.",)


@dataclass
class _State:
    enabled: bool = False
    why: str = "not requested"


STATE = _State()
_originals: dict[str, object] = {}
_BASES: dict[tuple, object] = {}      # _registry_key -> registry built by torchlib


def _copy_registry(reg):
    """A copy whose per-op lists can be extended (custom translations) without leaking."""
    new = copy.copy(reg)
    new.functions = {k: list(v) for k, v in reg.functions.items()}
    return new


_UNRESOLVED: set[str] = set()
"""torchlib's op names a stock registry build could not resolve to a loaded op
(quantized_decomposed before torch.ao's module is imported, torchvision's without it)."""


def _registry_key(opset: int) -> tuple:
    """What a registry built from torchlib depends on: the opset, and which of its op names
    resolve. aten's and prims' always do (torch's own C++ ops); the others resolve once
    their library is loaded. So the key is which of the names a stock build missed resolve
    now -- not every loaded op, whose listing grows each time a case first touches an aten
    op (``torch.ops.aten``'s is lazy) and cost a ~1.5 s rebuild each time."""
    from torch.onnx._internal.exporter import _registration
    return (opset, frozenset(n for n in _UNRESOLVED if _registration._get_overload(n)
                             is not None))


@contextlib.contextmanager
def _noting_unresolved():
    """Run a stock registry build, noting the torchlib names it cannot resolve."""
    from torch.onnx._internal.exporter import _registration
    stock = _registration._get_overload

    def noting(qualified_name):
        target = stock(qualified_name)
        if target is None:
            _UNRESOLVED.add(qualified_name)
        return target
    _registration._get_overload = noting
    try:
        yield
    finally:
        _registration._get_overload = stock


def _cia_key() -> tuple:
    """What ``_collect_all_valid_cia_ops`` depends on beyond aten (which torch caches
    itself, ``_collect_all_valid_cia_ops_for_namespace``'s lru_cache): the other loaded
    namespaces' ops, and the C++ dispatcher's CompositeImplicitAutograd registrations it
    materialises into them first."""
    return (tuple((ns, tuple(getattr(torch.ops, ns)) if hasattr(torch.ops, ns) else ())
                  for ns in sorted(torch.ops._dir) if ns != "aten"),
            tuple(torch._C._dispatch_get_registrations_for_dispatch_key(
                "CompositeImplicitAutograd")))


_CANDIDATES: dict[tuple, list] = {}   # _candidates_key() -> decomposition candidates


def _candidates_key() -> tuple:
    from torch._decomp import decomposition_table, global_decomposition_table
    return (_cia_key(), len(decomposition_table),
            tuple(len(t) for t in global_decomposition_table.values()))


_SPLITS: dict[tuple, tuple[dict, dict]] = {}   # (candidates, ops among them) -> split
_CANDIDATE_OPS: dict[tuple, set] = {}          # _candidates_key() -> the candidates' ops


def _candidates(key: tuple) -> list:
    """The (op, decomposition) pairs ``_decomp.create_onnx_friendly_decomposition_table``
    filters, in its order: torch.export's default decompositions (materialising them
    collects every CompositeImplicitAutograd op, ~0.1 s) then torch._decomp's table. They
    change only with the loaded ops and the registered decompositions (``key``, taken
    before they are materialised)."""
    pairs = _CANDIDATES.get(key)
    if pairs is None:
        import itertools
        pairs = _CANDIDATES[key] = list(itertools.chain(
            torch.export.default_decompositions().items(),
            torch._decomp.decomposition_table.items()))
    return pairs


def _candidate_ops(key: tuple) -> set:
    found = _CANDIDATE_OPS.get(key)
    if found is None:
        found = _CANDIDATE_OPS[key] = {op for op, _ in _candidates(key)}
    return found


def _decomposition_table(ops: set, key: tuple) -> dict:
    """``_decomp.create_onnx_friendly_decomposition_table(ops)``, from the memoised
    candidates: the same filter over the same pairs in the same order."""
    table: dict = {}
    for op_overload, decomp_fn in _candidates(key):   # the body of torch 2.13's loop
        if op_overload in ops:
            continue
        if not hasattr(op_overload, "_schema"):
            continue
        if op_overload in table:
            continue
        table[op_overload] = decomp_fn
    return table


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
        key = _registry_key(opset_version)
        if key not in _BASES:
            with _noting_unresolved():
                _BASES[key] = stock_from_torchlib(opset_version=opset_version)
        return _copy_registry(_BASES[key])

    def decompose_with_registry(exported_program, registry):
        # ExportedProgram.run_decompositions(table) is: the table split into the
        # CompositeImplicitAutograd ops' and the others' (``_split_...``), then
        # ``_decompose_exported_program``, outside any fake mode. The split depends on the
        # table (on the registered ops among its candidates) and the CIA ops: memoised.
        ops = set(_decomp.get_onnx_implemented_overloads(registry))
        key = _candidates_key()
        table_key = (key, frozenset(ops & _candidate_ops(key)))
        split = _SPLITS.get(table_key)
        if split is None:
            split = _SPLITS[table_key] = ep._split_decomp_table_to_cia_and_python_decomp(
                _decomposition_table(ops, key))
        from torch._subclasses.fake_tensor import unset_fake_temporarily
        with unset_fake_temporarily():
            return ep._decompose_exported_program(
                exported_program, cia_to_decomp=dict(split[0]),
                python_decomp_table=dict(split[1]), joint_loss_index=None,
                decompose_custom_triton_ops=False)

    cia_cache: dict[tuple, set] = {}
    stock_cia = ep._collect_all_valid_cia_ops

    def collect_cia():
        key = _cia_key()
        if key not in cia_cache:
            cia_cache[key] = stock_cia()
            cia_cache[_cia_key()] = cia_cache[key]   # after what it materialised
        return set(cia_cache[key])

    cls.from_torchlib = classmethod(from_torchlib)
    _fx_passes.decompose_with_registry = decompose_with_registry
    ep._collect_all_valid_cia_ops = collect_cia
    _originals["override_cia"] = ep._override_composite_implicit_decomp
    ep._override_composite_implicit_decomp = _lean_override


_NOT_IMPLEMENTED: dict = {}   # op -> its autograd_not_implemented(op, deferred_error=True)
_ORIGINAL_CIA: dict = {}      # op -> _get_decomp_for_cia(op), when made from the C++ kernel


def _force_dispatch_to_orig_cia_callable(fake_mode, op, *args, **kwargs):
    """torch 2.13's nested function of the same name in ``_override_composite_implicit_decomp``
    (a fake-tensor rule running the op's original CompositeImplicitAutograd kernel)."""
    orig_cia_callable = kwargs["original_callable"]
    del kwargs["original_callable"]
    with fake_mode:
        return orig_cia_callable(*args, **kwargs)


@contextlib.contextmanager
def _lean_override(cia_ops_to_callable):
    """torch 2.13's ``_override_composite_implicit_decomp``, step for step, without its
    per-call costs: it registers ~5700 Python kernels per export through ``py_impl``
    (annotations evaluated, the op's dispatch cache cleared per kernel) and makes a fresh
    closure per op and key. Here each kernel is set directly, the cache cleared once per
    op, and the closures, pure functions of the op, made once: the same kernels under
    the same keys, the same fake-tensor rules, the same restore on exit."""
    from torch._C import DispatchKey
    from torch._export.utils import _get_decomp_for_cia
    from torch._higher_order_ops.utils import autograd_not_implemented
    from torch._subclasses.fake_impls import _deregister_op_impl, op_implementations_dict
    from torch._ops import OperatorBase
    from torch.export import exported_program as ep
    if any(type(op).py_impl is not OperatorBase.py_impl for op in cia_ops_to_callable):
        with _originals["override_cia"](cia_ops_to_callable):   # not plain kernels: stock
            yield
        return
    cia = DispatchKey.CompositeImplicitAutograd
    autograd_keys, backend_keys = (ep._AUTOGRAD_ALIAS_BACKEND_KEYS_TO_OVERRIDE,
                                   ep._BACKEND_KEYS_TO_OVERRIDE)
    saved_tables = {}
    for op, decomp_callable in cia_ops_to_callable.items():
        kernels = op.py_kernels
        saved_tables[op] = kernels.copy()
        for key in autograd_keys:
            if key not in kernels:
                fn = _NOT_IMPLEMENTED.get(op)
                if fn is None:
                    fn = _NOT_IMPLEMENTED[op] = autograd_not_implemented(op, deferred_error=True)
                kernels[key] = fn
        # _get_decomp_for_cia: the op's own Python CIA kernel, else a partial of the C++ one
        own = kernels.get(cia)
        if own is not None and not isinstance(own, DispatchKey):
            orig_cia_callable = own
        else:
            orig_cia_callable = _ORIGINAL_CIA.get(op)
            if orig_cia_callable is None:
                orig_cia_callable = _ORIGINAL_CIA[op] = _get_decomp_for_cia(op)
        if cia in kernels:
            del kernels[cia]
        kernels[cia] = decomp_callable
        if op not in op_implementations_dict:
            op_implementations_dict[op] = functools.partial(
                _force_dispatch_to_orig_cia_callable, original_callable=orig_cia_callable)
        for key in backend_keys:
            if key not in kernels:
                kernels[key] = orig_cia_callable
        op._dispatch_cache.clear()
    try:
        yield
    finally:
        for op, saved in saved_tables.items():
            op.py_kernels.clear()
            op.py_kernels.update(saved)
            op._dispatch_cache.clear()
            _deregister_op_impl(op)


def _unpatch() -> None:
    _CANDIDATES.clear()
    _CANDIDATE_OPS.clear()
    _SPLITS.clear()
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
    from torch.onnx._internal.exporter import _registration

    from .export import quiet
    from .versions.next_opset import exporter_opset
    # a case above the exporter's opset is exported at it and raised (next_opset)
    for opset in sorted({exporter_opset(o) for o in opsets}):
        with quiet():  # the registry logs each torchvision op it skips
            _registration.ONNXRegistry.from_torchlib(opset_version=opset)
    _candidate_ops(_candidates_key())   # the table's candidates: one list for every opset


@contextlib.contextmanager
def _keeping_stock_registries():
    """Run the stock exporter unchanged, but keep the registry it builds: the reuse would
    build the very same one first thing (~1.3 s)."""
    from torch.onnx._internal.exporter import _registration
    cls = _registration.ONNXRegistry
    stock = cls.__dict__["from_torchlib"]

    def keeping(cls_, opset_version=_registration._constants.TORCHLIB_OPSET):
        with _noting_unresolved():
            registry = stock.__func__(cls_, opset_version=opset_version)
        _BASES[_registry_key(opset_version)] = _copy_registry(registry)
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
