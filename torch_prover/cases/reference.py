"""Reference ops: prove ONNX ops that no PyTorch function exports to.

Some ONNX ops (Shrink, Softsign, LRN, Size, ...) have no PyTorch function that exports to
them. For those a case uses a *reference op*: a PyTorch reference of the op's function,
composed of ordinary differentiable torch ops, bound to the ONNX op through the exporter's
custom translation table::

    @reference_op("Shrink")
    def shrink(input: torch.Tensor, lambd: float = 0.5, bias: float = 0.0) -> torch.Tensor:
        return torch.where(input < -lambd, input + bias,
                           torch.where(input > lambd, input - bias, torch.zeros_like(input)))

    def shrink_default(x):
        return shrink(x)

    Case("Shrink", "shrink_default", shrink_default, (Float(3, 4),), ("x",),
         kind="reference", translation=shrink.translation)

``shrink`` is a :class:`ReferenceOp`:

* called eagerly (the autograd probe), it runs the reference itself, so the gradients
  the probe sees are the reference's own autograd graph;
* called while ``torch.export`` traces (``torch.compiler.is_exporting()``), it calls the
  custom op ``torch.ops.torch_prover.shrink`` instead; its fake implementation (by default
  the reference itself, run on fake tensors) gives output shapes and dtypes, and
  ``shrink.translation`` lowers it to exactly one ``Shrink`` node at the export opset.

The pairing is a claim, not a fact: nothing here checks that ONNX's Shrink computes the
reference's function. The engine's numeric check does (forward, and a finite-difference
VJP of the exported model against PyTorch's), which is why these cases say
``kind="reference"`` and their evidence counts only when that check passes.

Signature convention (what makes the generic lowering possible):

* ONNX inputs, in the reference's parameter order: the parameters annotated
  ``torch.Tensor`` / ``Optional[torch.Tensor]`` (``None`` = optional input absent), and
  parameters of type ``int`` / ``list[int]`` *named like an input of the op* (e.g.
  CenterCropPad's ``shape``), which become int64 ``Constant`` inputs -- so a shape-like
  input is a constant of the graph, as ordinary PyTorch code would export it;
* ONNX attributes: every other parameter, by its name (``int``, ``float``, ``bool`` ->
  int, ``str``, ``list[int]``, ``list[float]``; ``None`` = attribute not set).

An op that does not fit (multiple outputs with optional ones, renamed attributes ...)
passes its own ``emit=`` function built with :func:`onnx_opset`.

The node is emitted at opset 25 (the project's export opset) unless ``opset=`` says
otherwise; a case exported at an older opset (onnxruntime lacks some newest versions)
uses ``ref.translation_at(21)``, because the exporter cannot convert a node downwards.
Ops newer than the exporter (opset 26-28: CumProd, SwiGLU ...) take one more step: a
reference op declared ``opset=V`` above 25 emits its node in the private domain
``torch_prover.next`` (:func:`node_op`), the case says ``opset=V``, and the export stage
exports at 25, then moves the node into ai.onnx and the model to opset V, refusing a graph
whose other ops changed schema between 25 and V (``engine/versions/next_opset.py`` says why:
torch 2.13 cannot export such a node at V itself).

Reference cases need the dynamo exporter: only ``torch.export`` sets
``torch.compiler.is_exporting()``; under TorchScript tracing the reference itself would be
traced (many nodes, and the engine rejects the case).

Registration is idempotent and self-contained: defining the same name again (re-import,
``importlib.reload``) rebinds it to the newest reference; defining it with a different
signature is an error. Nothing depends on another module having been imported first.
"""
from __future__ import annotations

import collections.abc
import functools
import inspect
import re
import types
import typing
from typing import Any, Callable, Mapping

import onnx.defs
import torch

from ..case import DEFAULT_OPSET, DYNAMO_MIN_OPSET
from ..engine.versions.next_opset import (EXPORTER_MAX_OPSET, PRIVATE_DOMAIN, PRIVATE_VERSION,
                                 exporter_opset, private_schema)

NAMESPACE = "torch_prover"
"""The torch.library namespace of every reference op: ``torch.ops.torch_prover.<name>``."""

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")

# name -> the live ReferenceOp. The custom op's kernel and fake look their reference up
# here at call time, so re-defining a name (reload) rebinds it without re-registering.
LIVE: dict[str, ReferenceOp] = {}


def onnx_opset(version: int = DEFAULT_OPSET, domain: str = "") -> Any:
    """The onnxscript opset object for ``domain`` at ``version``: ``op.Shrink(x, lambd=...)``.

    onnxscript 0.7.2 has generated modules ``onnxscript.onnx_opset.opset1..opset27`` for the
    default domain (the top-level ``onnxscript`` package re-exports only up to opset23);
    other domains or versions fall back to ``onnxscript.values.Opset``, which reads the
    schemas of whatever the installed onnx knows.
    """
    import onnxscript.onnx_opset
    from onnxscript import values

    if domain in ("", "ai.onnx"):
        generated = getattr(onnxscript.onnx_opset, f"opset{version}", None)
        if generated is not None:
            return generated
    return values.Opset(domain, version)


def node_op(onnx_op: str, opset: int = DEFAULT_OPSET, domain: str = "") -> Any:
    """The onnxscript op emitting one ``onnx_op`` node for a case at ``opset``.

    Above the exporter's opset (an ai.onnx op new in 26-28), or below the dynamo exporter's
    oldest (18: a deprecated op, Upsample-9, Scatter-9), the node is emitted as
    ``torch_prover.next::<onnx_op>`` with the real schema's inputs, outputs and attributes;
    the export stage raises (or lowers) the model to ``opset`` and moves it into ai.onnx
    (``engine/versions/next_opset.py``). Use it in a custom ``emit=`` as ``node_op("X", 27)(a, b)``;
    other nodes of the translation (``Constant``) come from ``onnx_opset(exporter_opset(V))``.
    """
    if not DYNAMO_MIN_OPSET <= opset <= EXPORTER_MAX_OPSET and domain in ("", "ai.onnx"):
        from onnxscript import values

        return values.Op(values.Opset(PRIVATE_DOMAIN, PRIVATE_VERSION), onnx_op,
                         private_schema(onnx_op, opset))
    return getattr(onnx_opset(opset, domain), onnx_op)


def _is_tensor_annotation(ann: Any) -> bool:
    """``torch.Tensor`` or ``Optional[torch.Tensor]`` (an ONNX input, optional or not)."""
    if ann is torch.Tensor:
        return True
    args = typing.get_args(ann)
    return (typing.get_origin(ann) in (typing.Union, types.UnionType)
            and set(args) == {torch.Tensor, type(None)})


def _is_int_annotation(ann: Any) -> bool:
    """``int``, ``list[int]`` (or a Sequence/tuple of int), optionally ``Optional[...]``."""
    args = [a for a in typing.get_args(ann) if a is not type(None)]
    if typing.get_origin(ann) in (typing.Union, types.UnionType) and len(args) == 1:
        ann = args[0]
    if ann is int:
        return True
    return (typing.get_origin(ann) in (list, tuple, collections.abc.Sequence)
            and typing.get_args(ann)[:1] == (int,))


def _attribute_value(value: Any) -> Any:
    """A Python value as an ONNX attribute value (ONNX has no bool attributes)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (list, tuple)):
        return [int(v) if isinstance(v, bool) else v for v in value]
    return value


def _detached_copy(out: Any) -> Any:
    """Outputs of a custom op may not alias its inputs: copy them (cheap, tensors are tiny)."""
    if isinstance(out, torch.Tensor):
        return out.detach().clone(memory_format=torch.contiguous_format)
    if isinstance(out, (tuple, list)):
        return tuple(_detached_copy(o) for o in out)
    raise TypeError(f"a reference must return tensors, not {type(out).__name__}")


class ReferenceOp:
    """A PyTorch reference of an ONNX op, callable like the reference (see the module doc).

    name: the custom op name, ``torch.ops.torch_prover.<name>`` (lower_snake).
    onnx_op, domain, opset: the ONNX node the export must contain.
    reference: the PyTorch function (annotated; see the signature convention).
    fake: shape/dtype function for export tracing, or None (the reference is used).
    inputs, attributes: the reference's parameter names, split by the convention.
    emit: the onnxscript translation of the custom op (one node) at ``opset``.
    emit_at: builds the default translation for another opset (None with a custom emit).
    schema: the custom op's schema, inferred from the reference's annotations.

    ``__module__``/``__name__``/``__qualname__``/``__doc__`` are the reference's, so a
    proof-script renderer can import the callable by name.
    """

    def __init__(self, name: str, onnx_op: str, domain: str, opset: int,
                 reference: Callable[..., Any], fake: Callable[..., Any] | None,
                 inputs: tuple[str, ...], attributes: tuple[str, ...],
                 emit: Callable[..., Any], schema: str,
                 emit_at: Callable[[int], Callable[..., Any]] | None = None):
        self.name, self.onnx_op, self.domain, self.opset = name, onnx_op, domain, opset
        self.reference, self.fake, self.emit, self.schema = reference, fake, emit, schema
        self.emit_at = emit_at
        self.inputs, self.attributes = inputs, attributes
        functools.update_wrapper(self, reference)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if torch.compiler.is_exporting():
            return self.op(*args, **kwargs)
        return self.reference(*args, **kwargs)

    @property
    def op(self) -> torch._ops.OpOverload:
        """The custom op overload the export traces (the translation table's key)."""
        return getattr(getattr(torch.ops, NAMESPACE), self.name).default

    @property
    def translation(self) -> dict[Any, Callable[..., Any]]:
        """``{custom op: emit}``: pass as ``Case(translation=...)``."""
        return {self.op: self.emit}

    def translation_at(self, opset: int) -> dict[Any, Callable[..., Any]]:
        """The translation for a case exported at another ``opset``.

        The emitted node records its schema version, and the exporter cannot convert a
        node *down* to an older opset: a case at opset 21 needs the op emitted at 21.
        """
        if opset == self.opset:
            return self.translation
        if self.emit_at is None:
            raise ValueError(f"{self!r} has a custom emit; define another reference op "
                             f"(name=...) with opset={opset} for this case")
        return {self.op: self.emit_at(opset)}

    def __repr__(self) -> str:
        return (f"<reference op {NAMESPACE}::{self.name} = {self.reference.__module__}."
                f"{self.reference.__qualname__} -> {self.domain or 'ai.onnx'}::{self.onnx_op}"
                f" at opset {self.opset}>")


def translations(*ops: ReferenceOp) -> dict[Any, Callable[..., Any]]:
    """Merge the translation tables of several reference ops (a case using more than one)."""
    table: dict[Any, Callable[..., Any]] = {}
    for r in ops:
        table.update(r.translation)
    return table


def reference_op(onnx_op: str, reference: Callable[..., Any] | None = None, *,
                 name: str | None = None, fake: Callable[..., Any] | None = None,
                 emit: Callable[..., Any] | None = None, opset: int = DEFAULT_OPSET,
                 domain: str = "") -> Any:
    """Bind the PyTorch ``reference`` to the ONNX op ``onnx_op``; return a :class:`ReferenceOp`.

    Use as ``reference_op("Shrink", shrink_fn)`` or as a decorator ``@reference_op("Shrink")``.

    name: custom op name (default: the reference's ``__name__``); one name per signature.
    fake: shape/dtype function for export tracing, same signature as the reference
        (default: the reference itself, run on fake tensors). Needed when the reference
        reads data (``.item()``, ``.tolist()``), would specialise a dynamic size
        (``x.numel()``), or has a data-dependent output shape (use
        ``torch.library.get_ctx().new_dynamic_size()`` for it).
    emit: the onnxscript translation, same signature as the reference (default: one
        ``onnx_op`` node from the signature convention, at ``opset``/``domain``).
    """
    if reference is None:
        return functools.partial(reference_op, onnx_op, name=name, fake=fake, emit=emit,
                                 opset=opset, domain=domain)
    name = name or reference.__name__
    where = f"reference op {name!r} ({onnx_op})"
    if not _NAME.match(name):
        raise ValueError(f"{where}: name must be lower_snake (it becomes "
                         f"torch.ops.{NAMESPACE}.{name})")
    try:
        schema = onnx.defs.get_schema(onnx_op, opset, domain)
    except Exception as exc:
        raise ValueError(f"{where}: onnx.defs has no {onnx_op} at opset {opset} in domain "
                         f"{domain!r}") from exc

    sig = inspect.signature(reference)
    hints = typing.get_type_hints(reference)
    missing = [p for p in sig.parameters if p not in hints] + (
        [] if "return" in hints else ["return"])
    if missing:
        raise ValueError(f"{where}: annotate {', '.join(missing)} (the custom op schema and "
                         f"the ONNX lowering are read from the annotations)")
    onnx_inputs = {f.name for f in schema.inputs}
    inputs = tuple(p for p in sig.parameters
                   if _is_tensor_annotation(hints[p]) or p in onnx_inputs)
    attributes = tuple(p for p in sig.parameters if p not in inputs)
    if emit is None:
        bad = [p for p in inputs
               if not _is_tensor_annotation(hints[p]) and not _is_int_annotation(hints[p])]
        if bad:
            raise ValueError(f"{where}: {bad} are named like inputs of {onnx_op} but are "
                             f"neither tensors nor ints/lists of ints (constant inputs)")
        known = set(schema.attributes)
        unknown = [a for a in attributes if a not in known]
        if unknown:
            raise ValueError(f"{where}: parameters {unknown} are neither tensors, inputs nor "
                             f"attributes of {onnx_op}-{schema.since_version} "
                             f"(attributes: {sorted(known)}); rename them or pass emit=")
        variadic = any(f.option == onnx.defs.OpSchema.FormalParameterOption.Variadic
                       for f in schema.inputs)
        if len(inputs) > len(schema.inputs) and not variadic:
            raise ValueError(f"{where}: {len(inputs)} input parameters but {onnx_op} has "
                             f"{len(schema.inputs)} inputs")

        def emit_at(version: int) -> Callable[..., Any]:
            try:
                onnx.defs.get_schema(onnx_op, version, domain)
            except Exception as exc:
                raise ValueError(f"{where}: onnx.defs has no {onnx_op} at opset "
                                 f"{version}") from exc
            return _default_emit(name, onnx_op, version, domain, sig, hints, inputs,
                                 attributes)

        emit = emit_at(opset)
    else:
        emit_at = None

    op_schema = torch.library.infer_schema(reference, mutates_args=())
    ref = ReferenceOp(name, onnx_op, domain, opset, reference, fake, inputs, attributes,
                      emit, op_schema, emit_at)
    _register(ref, where)
    return ref


def _default_emit(name: str, onnx_op: str, opset: int, domain: str, sig: inspect.Signature,
                  hints: Mapping[str, Any], inputs: tuple[str, ...],
                  attributes: tuple[str, ...]) -> Callable[..., Any]:
    """One ``onnx_op`` node: input parameters as inputs (ints and lists of ints through a
    ``Constant`` node), the others as attributes."""

    constants = {p for p in inputs if not _is_tensor_annotation(hints[p])}

    def emit(*args: Any, **kwargs: Any) -> Any:
        op = onnx_opset(exporter_opset(opset), domain)
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        node_inputs = [bound.arguments[p] for p in inputs]
        for k, p in enumerate(inputs):
            value = node_inputs[k]
            if p in constants and value is not None:   # an int64 constant input
                node_inputs[k] = (op.Constant(value_ints=[int(v) for v in value])
                                  if isinstance(value, (list, tuple))
                                  else op.Constant(value_int=int(value)))
        node_attrs = {a: _attribute_value(bound.arguments[a]) for a in attributes
                      if bound.arguments[a] is not None}
        return node_op(onnx_op, opset, domain)(*node_inputs, **node_attrs)

    # The exporter reads the translation's signature (annotated = attribute, bare = input).
    emit.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[p.replace(annotation=inspect.Parameter.empty if p.name in inputs
                              else hints[p.name]) for p in sig.parameters.values()],
        return_annotation=inspect.Signature.empty)
    emit.__annotations__ = {a: hints[a] for a in attributes}
    emit.__name__ = emit.__qualname__ = f"{name}_to_{onnx_op}"
    return emit


def _register(ref: ReferenceOp, where: str) -> None:
    """Define ``torch_prover::<name>`` once; a later definition only rebinds the reference."""
    qualname = f"{NAMESPACE}::{ref.name}"
    namespace = getattr(torch.ops, NAMESPACE)
    if hasattr(namespace, ref.name):
        defined = str(getattr(namespace, ref.name).default._schema)
        wanted = str(torch._C.parse_schema(qualname + ref.schema))
        if defined != wanted:
            raise ValueError(f"{where}: {defined} already exists; a reference with the "
                             f"signature {ref.schema} needs another name")
        LIVE[ref.name] = ref
        return
    LIVE[ref.name] = ref

    # Both look the reference up at call time, so a re-definition takes effect.
    def kernel(*args: Any, **kwargs: Any) -> Any:
        with torch.no_grad():
            return _detached_copy(LIVE[ref.name].reference(*args, **kwargs))

    def fake(*args: Any, **kwargs: Any) -> Any:
        live = LIVE[ref.name]
        return _detached_copy((live.fake or live.reference)(*args, **kwargs))

    custom = torch.library.custom_op(qualname, kernel, mutates_args=(), schema=ref.schema)
    custom.register_fake(fake)
