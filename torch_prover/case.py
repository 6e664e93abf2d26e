"""The Case type: one op, one set of inputs, everything the engine needs to prove it.

A case is plain data (a frozen dataclass). Quirks of an op live here, as fields with
a required reason, never as ``if op == ...`` in the engine.
"""
from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import torch

from .conventions import Applies
from .errors import CaseError
from .vocab import Verdict

VERDICTS = tuple(Verdict)

DEFAULT_OPSET = 25
"""Newest opset torch 2.13's exporter produces reliably: asked for 26-28 it returns an
opset-18 model whenever the graph holds an op its version converter cannot adapt (every
op new in 26-28), which export.py refuses."""
TORCHSCRIPT_MAX_OPSET = 20
"""Newest opset the TorchScript exporter supports."""
TORCHSCRIPT_MIN_OPSET = 7
"""Oldest opset the TorchScript exporter supports."""
DYNAMO_MIN_OPSET = 18
"""Oldest opset the torch.export-based exporter builds (below it, torch converts an
opset-18 model down when its version converter can, and else returns the opset-18 model:
relu_basic asked for 7 to 13 comes back at 18)."""



# --------------------------------------------------------------------------- inputs
@dataclass(frozen=True)
class Spec:
    """One PyTorch input, made from a seed.

    kind: "float" (random normal, or uniform in [low, high)), "int" (uniform integers in
    [low, high)), "bool", "fixed" (``value`` exactly, for indices, permutations...),
    "custom" (``make(generator, float_dtype) -> Tensor``).
    Floating tensors get ``requires_grad`` unless ``requires_grad=False``.
    """

    kind: str
    shape: tuple[int, ...] = ()
    low: float | None = None
    high: float | None = None
    dtype: torch.dtype | None = None
    value: Any = None
    make: Callable[[torch.Generator, torch.dtype], torch.Tensor] | None = None
    requires_grad: bool = True

    def build(self, gen: torch.Generator, float_dtype: torch.dtype) -> torch.Tensor:
        if self.kind == "float":
            dtype = self.dtype or float_dtype
            if self.low is None:
                t = torch.randn(self.shape, generator=gen, dtype=torch.float64)
            else:
                t = torch.rand(self.shape, generator=gen, dtype=torch.float64)
                t = self.low + (self.high - self.low) * t
            return t.to(dtype)
        if self.kind == "int":
            return torch.randint(int(self.low or 0), int(self.high), self.shape, generator=gen,
                                 dtype=self.dtype or torch.int64)
        if self.kind == "bool":
            return torch.rand(self.shape, generator=gen) < 0.5
        if self.kind == "fixed":
            t = torch.as_tensor(self.value, dtype=self.dtype)
            return t.to(float_dtype) if t.is_floating_point() and self.dtype is None else t
        if self.kind == "custom":
            return self.make(gen, float_dtype)
        raise CaseError(f"unknown input kind {self.kind!r}")


def Float(*shape: int, low: float | None = None, high: float | None = None,
      dtype: torch.dtype | None = None, requires_grad: bool = True) -> Spec:
    """A floating input: standard normal, or uniform in [low, high)."""
    return Spec("float", tuple(shape), low, high, dtype, requires_grad=requires_grad)


def Int(*shape: int, high: int, low: int = 0, dtype: torch.dtype = torch.int64) -> Spec:
    """An integer input, uniform in [low, high)."""
    return Spec("int", tuple(shape), low, high, dtype)


def Bool(*shape: int) -> Spec:
    """A boolean input."""
    return Spec("bool", tuple(shape))


def Fixed(value: Any, dtype: torch.dtype | None = None) -> Spec:
    """A fixed input (same on every seed): indices, permutations, shapes."""
    return Spec("fixed", value=value, dtype=dtype)


def Custom(make: Callable[[torch.Generator, torch.dtype], torch.Tensor]) -> Spec:
    """An input made by ``make(generator, float_dtype)``: SPD matrices, sorted values..."""
    return Spec("custom", make=make)


# --------------------------------------------------------------------------- expectations
@dataclass(frozen=True)
class Expect:
    """A declared deviation from the default expectation (agree, or proposed for unknown tags).

    The reason is required: a reviewer reads it next to the verdict.
    """

    verdict: str
    reason: str

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise CaseError(f"Expect verdict must be one of {VERDICTS}, not {self.verdict!r}")
        if not self.reason.strip():
            raise CaseError("Expect needs a non-empty reason")


# --------------------------------------------------------------------------- the case
@dataclass(frozen=True)
class Case:
    """One proof case.

    model: a function of the tensor inputs (``def f(x, shape): ...``), an ``nn.Module``
        subclass with a no-argument constructor, or a no-argument factory returning a
        module. Non-tensor arguments (Python ints, tuples) belong inside it: they export
        as constants, which is itself evidence.
    inputs: one Spec per tensor input, in call order.
    input_names: names of the ONNX graph inputs (default x0, x1, ...).
    expect: deviations keyed "input 1" / "output 0" with a reason, for parameters whose
        verdict is not agree/proposed.
    unexercised: parameters this case deliberately does not exercise, keyed like expect,
        with the reason (another case may exercise them).
    gradient_conventions: tensor (source) name -> a PyTorch gradient convention that makes
        its gradient differ from the op's derivative on purpose (``nn.Embedding``'s
        ``padding_idx``): a VJP mismatch there is named, not counted (``run`` sets it from
        the script's module, ``pr/grad_conventions.py``)
    surrogate: parameters whose PyTorch backward is a surrogate, not the op's derivative
        (bernoulli's zero gradient in p, a straight-through estimator), keyed like expect,
        with the reason: their autograd evidence counts as ``unsupported``.
    conventions: parameters whose tag a named convention decides (``conventions.py``:
        ``Applies(Convention.STATE_OUTPUT, "the math it sets aside")``), keyed like expect.
    export_options: extra keyword arguments for torch.onnx.export (e.g. optimize=False),
        each needing a reason in ``notes``.
    fixed_draw: why the case's sampling op (Bernoulli, Multinomial, Dropout in training,
        Random*) draws the same values on every run (p in {0, 1}, a one-hot distribution,
        p=0): its outputs are then compared like any other, not marked as random draws
        (``engine/test_data.py``).
    float_dtype: float64 by default so numeric checks can be tight; a case whose op the
        runtimes lack in float64 says float32 and why in ``notes``.
    opsets: (first, last) opsets at which the module computes the op as the schema
        versions in force there define it (default: every opset an exporter reaches);
        ``verify-all --versions`` proves older schema versions only inside it.
    fails_at: schema versions of the op (by number) at which this case's variant is known
        not to prove it, each with the reason (the version lacks an attribute value, an
        input or a broadcast the module needs; no runtime implements it): ``verify-all
        --versions`` still runs the variant and lists its failure, but a declared failure
        does not fail the run (an undeclared one does; docs/versions.md).
    variant_of: set by ``batch.versions.variant``: this is the named case exported at
        another opset to prove another schema version.
    origin: set with ``variant_of``: the (exporter, opset) of the named case itself, where
        the relabelled route exports when no exporter reaches the variant's opset.
    without_torchscript: for a case with ``exporter="torchscript"``, the fields that prove
        it with the dynamo exporter instead (``verify-all --no-torchscript``, and the
        default where torch has no TorchScript exporter): ``{"export_options": {"optimize":
        False}}``, another module, a reference translation... Their reason goes in
        ``notes``. None: no dynamo way yet (such a run leaves the case out, and says so).
        A dynamo case sets it when its variants below opset 18 -- TorchScript's by default,
        relabelled from the opset-18 export without it -- fail there: ``{"fails_at": ...}``.
    """

    op: str
    name: str
    model: Callable[..., Any]
    inputs: tuple[Spec, ...]
    input_names: tuple[str, ...] | None = None
    domain: str = ""
    exporter: str = "dynamo"
    opset: int | None = None
    dynamic: bool = False
    export_options: Mapping[str, Any] = field(default_factory=dict)
    float_dtype: torch.dtype = torch.float64
    expect: Mapping[str, Expect] = field(default_factory=dict)
    unexercised: Mapping[str, str] = field(default_factory=dict)
    surrogate: Mapping[str, str] = field(default_factory=dict)
    gradient_conventions: Mapping[str, str] = field(default_factory=dict)
    conventions: Mapping[str, Applies] = field(default_factory=dict)
    kind: str = "natural"
    translation: Mapping[Any, Any] | None = None
    fwd_tol: float | None = None
    vjp_tol: float | None = None
    notes: str = ""
    seeds: tuple[int, ...] = (0, 1)
    fixed_draw: str = ""
    opsets: tuple[int, int] | None = None
    fails_at: Mapping[int, str] = field(default_factory=dict)
    variant_of: str | None = None
    origin: tuple[str, int] | None = None
    without_torchscript: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.exporter not in ("dynamo", "torchscript"):
            raise CaseError(f"{self.name}: exporter must be 'dynamo' or 'torchscript'")
        if self.kind not in ("natural", "reference"):
            raise CaseError(f"{self.name}: kind must be 'natural' or 'reference'")
        if self.input_names is not None and len(self.input_names) != len(self.inputs):
            raise CaseError(f"{self.name}: {len(self.input_names)} input_names for "
                            f"{len(self.inputs)} inputs")
        for key in (list(self.expect) + list(self.unexercised) + list(self.surrogate)
                    + list(self.conventions)):
            io, _, idx = key.partition(" ")
            if io not in ("input", "output") or not idx.isdigit():
                raise CaseError(f"{self.name}: key {key!r} must look like 'input 1' or 'output 0'")
        for key, applies in self.conventions.items():
            if not isinstance(applies, Applies):
                raise CaseError(f"{self.name}: conventions[{key!r}] must be an Applies")
        if len(self.seeds) < 2:
            raise CaseError(f"{self.name}: needs at least two seeds")
        if self.opsets is not None and not (
                len(self.opsets) == 2 and 1 <= self.opsets[0] <= self.opsets[1]):
            raise CaseError(f"{self.name}: opsets must be (first, last) with first <= last")
        for version, reason in self.fails_at.items():
            if not isinstance(version, int) or version < 1 or not str(reason).strip():
                raise CaseError(f"{self.name}: fails_at maps a schema version (an int) to a "
                                f"non-empty reason, not {version!r}: {reason!r}")
        if self.export_options and not self.notes:
            raise CaseError(f"{self.name}: export_options need a reason in notes")

    @property
    def names(self) -> tuple[str, ...]:
        return self.input_names or tuple(f"x{i}" for i in range(len(self.inputs)))

    @property
    def export_opset(self) -> int:
        if self.opset is not None:
            return self.opset
        return DEFAULT_OPSET if self.exporter == "dynamo" else TORCHSCRIPT_MAX_OPSET

    def build_module(self) -> torch.nn.Module:
        """A fresh module, parameters seeded so every run is identical."""
        torch.manual_seed(0)
        m = self.model
        if inspect.isclass(m) and issubclass(m, torch.nn.Module):
            module = m()
        elif isinstance(m, torch.nn.Module):
            raise CaseError(f"{self.name}: pass the Module class or a factory, not an instance")
        else:
            try:
                params = inspect.signature(m).parameters
            except (TypeError, ValueError):
                params = {}
            if len(params) == 0:
                module = m()
                if not isinstance(module, torch.nn.Module):
                    raise CaseError(f"{self.name}: a no-argument model must return an nn.Module")
            else:
                module = FunctionModule(m)
        return module.to(self.float_dtype).eval()

    def build_inputs(self, seed: int) -> tuple[torch.Tensor, ...]:
        gen = torch.Generator().manual_seed(seed)
        return tuple(s.build(gen, self.float_dtype) for s in self.inputs)

    def replace(self, **changes: Any) -> "Case":
        return dataclasses.replace(self, **changes)


class FunctionModule(torch.nn.Module):
    """Wraps a plain function so it can be exported as a module."""

    def __init__(self, fn: Callable[..., Any]):
        super().__init__()
        self.fn = fn

    def forward(self, *args: torch.Tensor) -> Any:
        return self.fn(*args)
