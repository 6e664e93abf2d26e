"""Which runtime computes which schema version: data, each entry backed by a test.

A number is evidence about schema version V of an op only if the runtime that computed it
implements V (docs/versions.md, "Which runtime runs which version"). Two runtimes run
models here, and they differ in exactly this:

- **onnxruntime** registers one kernel per version range of an op, and loads the kernel
  of the version in force at the model's opset: Hardmax-11 (axis=0 on a 3-D input)
  coerces the input to 2-D there and Hardmax-13 does not; Resize-10's ``linear`` samples
  at ``x / scale``, Resize-11's at ``(x + 0.5) / scale - 0.5``; Sum-6 refuses inputs of
  different shapes, Sum-8 broadcasts them. It guarantees opsets from
  ``ONNXRUNTIME_MIN_OPSET`` on (below it, its own log says support "may" work).
- **onnx.reference** implements most ops once, at their *newest* semantics, whatever the
  model's opset: at opset 11 its Hardmax is Hardmax-13's, its Sum broadcasts at opset 7,
  its GridSample refuses GridSample-16's ``bilinear`` mode (renamed ``linear`` in 20) and
  its Resize cannot run a Resize-10 node. So it counts for V only where ``REFERENCE_FOLLOWS``
  records that it follows V: the op's newest version, or the versions an entry lists.

Each entry of ``REFERENCE_FOLLOWS`` is backed by a test (tests/test_runtimes.py) that runs a node
of the op in onnx.reference at each listed version's opset and compares it with that
version's definition computed independently (numpy, or onnxruntime's kernel at that opset,
in float32): for ops whose versions compute differently, on a node that tells them apart.
Whether a *node* is valid at V at all (an attribute value, broadcasting) is
``engine.versions.fidelity``'s question, asked before any runtime.
"""
from __future__ import annotations

from dataclasses import dataclass

import onnx
import onnx.defs

ONNXRUNTIME = "onnxruntime"
REFERENCE = "reference"
"""numeric.Runner's kinds."""

ONNXRUNTIME_MIN_OPSET = 7
"""onnxruntime "only guarantees support for models stamped with opset version 7 or above"
(its own warning, logged when it loads an older model)."""


@dataclass(frozen=True)
class Follows:
    """The schema versions of ``op`` whose semantics onnx.reference computes (on a node valid
    at that version: ``engine.versions.fidelity``), and why we know: ``witness`` names the node of
    the test that shows it (tests/test_runtimes.py)."""

    op: str
    versions: tuple[int, ...]
    witness: str


REFERENCE_FOLLOWS: dict[str, Follows] = {f.op: f for f in (
    # versions that compute differently: onnx.reference follows only some of them
    Follows("Hardmax", (13,), "axis=0 on a 3-D input: Hardmax-1/-11 coerce it to 2-D"),
    Follows("Softmax", (13,), "axis=0 on a 3-D input: Softmax-1/-11 coerce it to 2-D"),
    Follows("LogSoftmax", (13,), "axis=0 on a 3-D input: LogSoftmax-1/-11 coerce it to 2-D"),
    Follows("Resize", (11, 13, 18, 19),
            "linear upsampling by 2: Resize-10 samples at x / scale, Resize-11 on at "
            "(x + 0.5) / scale - 0.5 by default (half_pixel)"),
    Follows("GridSample", (20, 22), "mode bilinear (GridSample-16) / linear (20, 22)"),
    # a per-version implementation (onnx.reference's Clip_6 / Clip_11 classes)
    Follows("Clip", (6, 11, 12, 13), "bounds as attributes (Clip-6) or inputs (Clip-11 on)"),
    # the same computation on every node each version accepts (a broadcast node is refused
    # at Sum/Mean/Max/Min-6 by engine.versions.fidelity, which onnx.reference would broadcast)
    Follows("Sum", (6, 8, 13), "[2,3] + [3]: Sum-6 refuses it, Sum-8 broadcasts"),
    Follows("Mean", (6, 8, 13), "[2,3] and [3]: Mean-6 refuses it, Mean-8 broadcasts"),
    Follows("Max", (6, 8, 12, 13), "[2,3] and [3]: Max-6 refuses it, Max-8 broadcasts"),
    Follows("Min", (6, 8, 12, 13), "[2,3] and [3]: Min-6 refuses it, Min-8 broadcasts"),
    # a per-version implementation (onnx.reference's RNN_7 / RNN_14 classes)
    Follows("RNN", (7, 14, 22), "layout=1 (batch first, from RNN-14) against RNN-7's "
                                "sequence-first input"),
    # versions that differ in their types only: an elementwise function, the same on every
    # value each accepts (the test compares with onnxruntime's kernel of that version)
    Follows("Softplus", (1, 22), "Softplus(x) = log(1 + exp(x))"),
    Follows("Softsign", (1, 22), "Softsign(x) = x / (1 + |x|)"),
    Follows("Elu", (6, 22), "Elu(x; alpha=0.7)"),
    Follows("Selu", (6, 22), "Selu(x)"),
    Follows("HardSwish", (14, 22), "HardSwish(x) = x * max(0, min(1, x / 6 + 1 / 2))"),
    Follows("Mish", (18, 22), "Mish(x) = x * tanh(log(1 + exp(x)))"),
    Follows("LeakyRelu", (6, 16), "LeakyRelu(x; alpha=0.2)"),
    Follows("HardSigmoid", (6, 22), "HardSigmoid(x; alpha=0.3, beta=0.4)"),
    Follows("ThresholdedRelu", (10, 22), "ThresholdedRelu(x; alpha=0.5)"),
    Follows("Acos", (7, 22), "acos(x) on (-1, 1)"),
    Follows("Asin", (7, 22), "asin(x) on (-1, 1)"),
    Follows("Atan", (7, 22), "atan(x)"),
    Follows("Tan", (7, 22), "tan(x)"),
    Follows("Acosh", (9, 22), "acosh(x) on (1, 3)"),
    Follows("Asinh", (9, 22), "asinh(x)"),
    Follows("Atanh", (9, 22), "atanh(x) on (-1, 1)"),
    Follows("Cosh", (9, 22), "cosh(x)"),
    Follows("Sinh", (9, 22), "sinh(x)"),
    Follows("GlobalAveragePool", (1, 22), "the mean over the spatial axes"),
    Follows("GlobalMaxPool", (1, 22), "the maximum over the spatial axes"),
    Follows("Upsample", (9,), "nearest upsampling by [1, 1, 2, 2] (its scales an input)"),
)}


def newest_version(op: str, domain: str = "") -> int | None:
    try:
        return onnx.defs.get_schema(op, domain).since_version
    except onnx.defs.SchemaError:
        return None


def version_at(op: str, opset: int, domain: str = "") -> int | None:
    """The schema version of ``op`` in force at ``opset`` (None: the op has none there)."""
    try:
        return onnx.defs.get_schema(op, opset, domain).since_version
    except onnx.defs.SchemaError:
        return None


def reference_follows(op: str, version: int, domain: str = "") -> bool:
    """Whether onnx.reference computes ``op``-``version`` (``REFERENCE_FOLLOWS``; an op without an
    entry: its newest version only)."""
    entry = REFERENCE_FOLLOWS.get(op) if domain in ("", "ai.onnx") else None
    if entry is not None:
        return version in entry.versions
    return version == newest_version(op, domain)


def model_opset(model: onnx.ModelProto, domain: str = "") -> int | None:
    for imp in model.opset_import:
        if imp.domain in (domain, "ai.onnx" if domain == "" else domain):
            return imp.version
    return None


@dataclass(frozen=True)
class Target:
    """The node whose schema version a run must implement: its op and domain."""

    op: str
    domain: str = ""


def unfaithful(kind: str, model: onnx.ModelProto, target: Target | None) -> str | None:
    """Why runtime ``kind`` would not compute ``target``'s schema version in ``model`` (every
    node's, when ``target`` is None: a one-node model), or None when it does."""
    targets = [target] if target is not None else _node_targets(model)
    for t in targets:
        opset = model_opset(model, t.domain)
        if opset is None:
            continue
        version = version_at(t.op, opset, t.domain)
        if version is None:
            continue
        if kind == ONNXRUNTIME and t.domain in ("", "ai.onnx") and opset < ONNXRUNTIME_MIN_OPSET:
            return (f"it guarantees opsets {ONNXRUNTIME_MIN_OPSET} and above only (the model "
                    f"is opset {opset})")
        if kind == REFERENCE and not reference_follows(t.op, version, t.domain):
            return why_not_reference(t.op, version, t.domain)
    return None


def why_not_reference(op: str, version: int, domain: str = "") -> str:
    """One line: why onnx.reference does not count for ``op``-``version``."""
    entry = REFERENCE_FOLLOWS.get(op) if domain in ("", "ai.onnx") else None
    if entry is not None:
        follows = ", ".join(f"{op}-{v}" for v in entry.versions)
        return (f"onnx.reference computes {follows}, not {op}-{version} "
                f"({entry.witness})")
    return (f"onnx.reference implements {op} at its newest version "
            f"({op}-{newest_version(op, domain)}); nothing records that it follows "
            f"{op}-{version}")


def _node_targets(model: onnx.ModelProto) -> tuple[Target, ...]:
    return tuple(dict.fromkeys(Target(n.op_type, n.domain) for n in model.graph.node))
