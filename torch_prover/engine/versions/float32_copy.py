"""A float32 copy of a float64 model, for a version whose only faithful runtime lacks float64.

Why: cases run and export in float64 (docs/design.md §5), but onnxruntime registers no
float64 kernel for many ops (Conv, ConvTranspose, the pools, Det, InstanceNormalization,
Hardmax, Resize-10, NonZero-9, PRelu-7/-9; GRU and LSTM refuse double when run), and
onnx.reference counts for a version only where it follows it (``engine/versions/runtimes.py``). For
Conv-11 nothing else computes Conv-11: onnxruntime's Conv-11 kernel does, in float32. So
when onnxruntime refuses the float64 model for want of a float64 kernel (``float64_gap``:
the one place that reads onnxruntime's failure) and no faithful float64 runtime ran it,
``numeric.choose_runtime`` runs a float32 copy in onnxruntime at the same opset: the same
function, rounded to float32. The witnesses then take float32 steps and tolerances from
``engine/numeric/precision.py`` (the copy's precision is given, not only measured), and the record
says so (``numeric.copy``, ``test_data.copy``).

The copy (``float32_copy``) is derived deterministically from the float64 model: every
float64 tensor made float32 -- graph inputs, outputs and value_info types (tensors,
sequences, optionals, maps), initializers, sparse initializers, attribute tensors
(``Constant``'s value, ``ConstantOfShape``'s value) and type attributes (``Optional``'s
``type``), every attribute that carries an element type (``ELEMENT_TYPE``: ``Cast``'s
``to``, the random ops' ``dtype``, the normalizations' ``stash_type``...), in subgraphs
(If, Loop, Scan) and function bodies alike. A model it cannot copy faithfully (a
``BitCast``: float32 has other bits than float64) raises ``CopyError``.

The same copy widens a float16 or bfloat16 model (``widened_copy``): numpy has no bfloat16,
so those values cross to the runtimes as float32 (which holds each exactly), and a finite
difference at float16's resolution cannot tell a derivative from rounding; the node's own
witness runs on the float32 copy, and the record says so (``engine/prove.py``).
"""
from __future__ import annotations

import copy as _copy
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import AttributeProto, TensorProto

from ...errors import EXIT_FINDING, ProverError
from .runtimes import model_opset, version_at

FROM, TO = "float64", "float32"
"""What the copy changes: every float64 tensor becomes float32."""

ELEMENT_TYPE: dict[str, tuple[str, ...]] = {
    "Cast": ("to",),
    "EyeLike": ("dtype",),
    "RandomNormal": ("dtype",), "RandomNormalLike": ("dtype",),
    "RandomUniform": ("dtype",), "RandomUniformLike": ("dtype",),
    "Bernoulli": ("dtype",), "Multinomial": ("dtype",),
    "SequenceEmpty": ("dtype",),
    "HammingWindow": ("output_datatype",), "HannWindow": ("output_datatype",),
    "BlackmanWindow": ("output_datatype",), "MelWeightMatrix": ("output_datatype",),
    "QuantizeLinear": ("output_dtype", "precision"), "DequantizeLinear": ("output_dtype",),
    "LayerNormalization": ("stash_type",), "GroupNormalization": ("stash_type",),
    "RMSNormalization": ("stash_type",), "Range": ("stash_type",),
    "Attention": ("softmax_precision",),
}
"""ai.onnx attributes whose value is a ``TensorProto.DataType`` (an int): a float64 one is
made float32. Each entry is an attribute whose schema text says it holds a data type or a
precision (tests/test_float32_copy.py reads every schema and keeps this list complete)."""

NOT_COPIED = {"BitCast": "BitCast reinterprets the bits of its input: a float32 copy "
                         "reinterprets other bits"}
"""ai.onnx ops whose float64 function a float32 copy does not compute (``CopyError``)."""


class CopyError(ProverError):
    """The model has something a float32 copy cannot carry over faithfully."""

    exit_code = EXIT_FINDING


@dataclass(frozen=True)
class KernelGap:
    """onnxruntime refused a float64 model for want of a float64 kernel: of ``op`` (its
    schema version in force, when known), at load (no kernel registered) or when run (a
    kernel that refuses double). Only ``float64_gap`` makes one."""

    op: str | None
    version: int | None

    @property
    def label(self) -> str:
        if self.op is None:
            return "a node of the model"
        return self.op if self.version is None else f"{self.op}-{self.version}"

    def short(self) -> str:
        """Why the copy ran, beside the runtime's name: ``no float64 kernel for Conv-11``."""
        return f"no float64 kernel for {self.label}"

    def words(self) -> str:
        """Why the copy ran, in a reason's words."""
        return f"onnxruntime has {self.short()}"

    def record(self) -> dict[str, Any]:
        """``numeric.copy`` of a proof record (schemas/defs.json ``float32_copy``)."""
        return {"dtype": TO, "from": FROM, "op": self.op, "version": self.version,
                "why": f"{self.words()}: it ran a float32 copy of the model"}

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> "KernelGap":
        return cls(rec.get("op"), rec.get("version"))


# ----------------------------------------------------------------------------- detection
_AT_LOAD = re.compile(r"Could not find an implementation for (\w+)\(\d+\) node")
_AT_RUN = re.compile(r"while running (\w+) node")


def float64_gap(exc: BaseException, model: onnx.ModelProto) -> KernelGap | None:
    """The float64 kernel onnxruntime lacks, when ``exc`` is its refusal of ``model`` for
    want of one (None otherwise). Typed first: a NOT_IMPLEMENTED status when the session
    loads (no kernel registered for the node's types) or a RUNTIME_EXCEPTION when it runs
    (a kernel that refuses double: GRU, LSTM), and only for a model that holds float64
    tensors -- so the copy is the one thing that changes. Which op, onnxruntime says only
    in its message; that is read here and nowhere else. Whether float64 was the cause is
    settled by the copy itself: ``numeric.choose_runtime`` uses it only if it runs."""
    try:
        from onnxruntime.capi import onnxruntime_pybind11_state as state
    except ImportError:   # no onnxruntime: nothing it refused
        return None
    if not isinstance(exc, (state.NotImplemented, state.RuntimeException)):
        return None
    if not has_float64(model):
        return None
    pattern = _AT_LOAD if isinstance(exc, state.NotImplemented) else _AT_RUN
    found = pattern.search(str(exc))
    if isinstance(exc, state.NotImplemented) and found is None:
        return None      # NOT_IMPLEMENTED for something else than a kernel
    op = found[1] if found else None
    return KernelGap(op, _version(model, op))


def _version(model: onnx.ModelProto, op: str | None) -> int | None:
    """``op``'s schema version in force at the model's ai.onnx opset."""
    opset = model_opset(model)
    return version_at(op, opset) if op is not None and opset else None


def has_float64(model: onnx.ModelProto) -> bool:
    """Whether anything the copy would change is in ``model``."""
    return _copy_model(model, dry=True)


# ----------------------------------------------------------------------------- the copy
WIDE = frozenset({TensorProto.DOUBLE})
NARROW = frozenset({TensorProto.FLOAT16, TensorProto.BFLOAT16})
"""The element types each copy makes float32: float64 (``float32_copy``), and the types
narrower than float32 that a runtime computes in (``widened_copy``)."""
NARROW_NAMES = {TensorProto.FLOAT16: "float16", TensorProto.BFLOAT16: "bfloat16"}


def float32_copy(model: onnx.ModelProto, sources: frozenset[int] = WIDE) -> onnx.ModelProto:
    """A copy of ``model`` with every float64 tensor (every ``sources`` tensor) made float32
    (module docstring)."""
    return make_float32(_copy.deepcopy(model), sources)


def make_float32(model: onnx.ModelProto, sources: frozenset[int] = WIDE) -> onnx.ModelProto:
    """``model`` itself made float32 (``float32_copy`` without the copy): for a caller that
    already holds a copy of its own (``numeric.Runner.run``'s, with its overrides)."""
    _copy_model(model, dry=False, sources=sources)
    return model


def narrow_types(model: onnx.ModelProto) -> tuple[str, ...]:
    """The float types narrower than float32 the model's graph inputs, outputs and
    initializers hold (``float16``, ``bfloat16``), sorted: what ``widened_copy`` widens."""
    g = model.graph
    elems = {vi.type.tensor_type.elem_type for vi in list(g.input) + list(g.output)
             if vi.type.HasField("tensor_type")} | {t.data_type for t in g.initializer}
    return tuple(sorted(NARROW_NAMES[e] for e in elems & NARROW))


def widened_copy(model: onnx.ModelProto) -> onnx.ModelProto:
    """A float32 copy of a float16 / bfloat16 model (module docstring)."""
    return float32_copy(model, NARROW)


def _copy_model(model: onnx.ModelProto, dry: bool, sources: frozenset[int] = WIDE) -> bool:
    """Whether ``model`` holds float64 (``sources``; ``dry``: changed in nothing), made
    float32 if not ``dry``."""
    c = _Copier(dry, sources)
    c.graph(model.graph)
    for f in model.functions:
        c.function(f)
    return c.changed


class _Copier:
    def __init__(self, dry: bool, sources: frozenset[int] = WIDE):
        self.dry, self.changed, self.sources = dry, False, sources

    def elem(self, t: int) -> int:
        if t in self.sources:
            self.changed = True
            return t if self.dry else TensorProto.FLOAT
        return t

    def type_proto(self, tp: onnx.TypeProto) -> None:
        which = tp.WhichOneof("value")
        if which == "tensor_type":
            tp.tensor_type.elem_type = self.elem(tp.tensor_type.elem_type)
        elif which == "sparse_tensor_type":
            tp.sparse_tensor_type.elem_type = self.elem(tp.sparse_tensor_type.elem_type)
        elif which == "sequence_type":
            self.type_proto(tp.sequence_type.elem_type)
        elif which == "optional_type":
            self.type_proto(tp.optional_type.elem_type)
        elif which == "map_type":
            self.type_proto(tp.map_type.value_type)

    def tensor(self, t: TensorProto) -> None:
        if t.data_type not in self.sources:
            return
        self.changed = True
        if self.dry:
            return
        if t.data_location == TensorProto.EXTERNAL:
            raise CopyError(f"tensor {t.name!r} holds external data: not copied")
        value = onnx.numpy_helper.to_array(t).astype(np.float32)
        t.CopyFrom(onnx.numpy_helper.from_array(value, t.name))

    def sparse(self, s: onnx.SparseTensorProto) -> None:
        self.tensor(s.values)

    def values(self, infos: Iterable[onnx.ValueInfoProto]) -> None:
        for vi in infos:
            if vi.HasField("type"):
                self.type_proto(vi.type)

    def attribute(self, op: str, domain: str, a: AttributeProto) -> None:
        if a.ref_attr_name:
            return
        carriers = {AttributeProto.TENSOR: ([a.t], self.tensor),
                    AttributeProto.TENSORS: (a.tensors, self.tensor),
                    AttributeProto.SPARSE_TENSOR: ([a.sparse_tensor], self.sparse),
                    AttributeProto.SPARSE_TENSORS: (a.sparse_tensors, self.sparse),
                    AttributeProto.GRAPH: ([a.g], self.graph),
                    AttributeProto.GRAPHS: (a.graphs, self.graph),
                    AttributeProto.TYPE_PROTO: ([a.tp], self.type_proto),
                    AttributeProto.TYPE_PROTOS: (a.type_protos, self.type_proto)}
        if a.type in carriers:
            items, convert = carriers[a.type]
            for item in items:
                convert(item)
        elif (a.type == AttributeProto.INT and domain in ("", "ai.onnx")
              and a.name in ELEMENT_TYPE.get(op, ())):
            a.i = self.elem(a.i)

    def nodes(self, nodes: Iterable[onnx.NodeProto]) -> None:
        for n in nodes:
            if not self.dry and n.domain in ("", "ai.onnx") and n.op_type in NOT_COPIED:
                raise CopyError(NOT_COPIED[n.op_type])
            for a in n.attribute:
                self.attribute(n.op_type, n.domain, a)

    def graph(self, g: onnx.GraphProto) -> None:
        self.values(list(g.input) + list(g.output) + list(g.value_info))
        for t in g.initializer:
            self.tensor(t)
        for s in g.sparse_initializer:
            self.sparse(s)
        self.nodes(g.node)

    def function(self, f: onnx.FunctionProto) -> None:
        self.values(f.value_info)
        for a in f.attribute_proto:
            self.attribute("", "", a)
        self.nodes(f.node)


# ----------------------------------------------------------------------------- running it
def float64_names(model: onnx.ModelProto) -> frozenset[str]:
    """The values of ``model``'s main graph typed float64 (declared or inferred): the ones
    whose copy's float32 outputs are handed back as float64. A value no type reaches
    (an untyped extra output shape inference cannot type) counts as float64 when the
    model has float64 tensors and no float32 one."""
    # an untyped graph output (isolate's captured intermediates) is typed by inference only
    # as an intermediate value: infer without it
    bare = _copy.deepcopy(model)
    typed_outputs = [o for o in bare.graph.output if o.HasField("type")]
    del bare.graph.output[:]
    bare.graph.output.extend(typed_outputs)
    try:
        g = onnx.shape_inference.infer_shapes(bare, strict_mode=False).graph
    except Exception:   # inference refusing the model leaves what it declares
        g = bare.graph
    typed = {vi.name: vi.type for vi in list(g.input) + list(g.value_info) + list(g.output)
             if vi.HasField("type")}
    typed.update({t.name: onnx.helper.make_tensor_type_proto(t.data_type, None)
                  for t in g.initializer})
    out = {n for n, tp in typed.items() if _holds(tp, TensorProto.DOUBLE)}
    if not any(_holds(tp, TensorProto.FLOAT) for tp in typed.values()):
        out |= {o.name for o in model.graph.output if o.name not in typed}
    return frozenset(out)


def _holds(tp: onnx.TypeProto, elem: int) -> bool:
    which = tp.WhichOneof("value")
    if which == "tensor_type":
        return tp.tensor_type.elem_type == elem
    if which == "sequence_type":
        return _holds(tp.sequence_type.elem_type, elem)
    if which == "optional_type":
        return _holds(tp.optional_type.elem_type, elem)
    return False


def to_float32(value: Any) -> Any:
    """A feed for the copy: float64 arrays (and sequences of them) as float32."""
    if isinstance(value, list):
        return [to_float32(v) for v in value]
    a = np.asarray(value)
    return a.astype(np.float32) if a.dtype == np.float64 else value


def to_float64(value: Any) -> Any:
    """An output of the copy handed back as the float64 model's: float32 as float64."""
    if isinstance(value, list):
        return [to_float64(v) for v in value]
    if value is None:
        return None
    a = np.asarray(value)
    return a.astype(np.float64) if a.dtype == np.float32 else value
