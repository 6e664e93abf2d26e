"""Numeric confirmation: the exported ONNX model computes PyTorch's forward and derivative.

Runs the model in onnxruntime, or in onnx.reference.ReferenceEvaluator where
onnxruntime cannot load or run it (an op, opset or float64 kernel it lacks), or, where
onnxruntime lacks the float64 kernel and no faithful float64 runtime ran it, a float32
copy of it in onnxruntime (``engine/versions/float32_copy.py``), and says which ran. The derivative check is a central finite difference of the ONNX model along a
seeded random direction v, compared with PyTorch's vector-Jacobian product:
``<dy, (f(x+hv) - f(x-hv)) / 2h>`` vs ``<grad_x, v>``.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Mapping, Sequence
import numpy as np
import onnx
import onnx.numpy_helper
import torch

from ...errors import describe
from ..versions import runtimes
from ..versions.float32_copy import (KernelGap, float32_copy, float64_gap, float64_names,
                                     make_float32, to_float32, to_float64)
from .precision import Given, Precision, model_precision, runtime_name

# float64: h ~ eps^(1/3) keeps truncation and rounding error near 1e-10 relative.
STEP = {"float64": 1e-6, "float32": 1e-3, "float16": 1e-2, "bfloat16": 1e-2}
FWD_TOL = {"float64": 1e-7, "float32": 1e-4, "float16": 1e-2, "bfloat16": 2e-2}
VJP_TOL = {"float64": 1e-6, "float32": 1e-2, "float16": 1e-1, "bfloat16": 1e-1}


def shown_error(err: float, tol: float) -> str:
    """An error magnitude as records and reasons hold it: the bound ``<= tol`` when within
    tolerance, one significant digit when not.

    Why: committed records must be identical on every machine, and the late digits of a
    passing error are floating-point noise (one record measured 1.7e-10 with numpy's
    AVX-512 BLAS kernel, 3.2e-11 with Haswell's). Whether it passed is not noise; a failing
    error is large, so its first digit is stable."""
    if err != err:
        return "nan"
    if err <= tol:
        return f"<= {tol:.3g}"
    return f"{err:.1g}"


def shown_value(x: float) -> str:
    """A derivative value for a message: three significant digits (stable across machines
    unless it sits on a rounding boundary at the 1e-10 level)."""
    return f"{x:.3g}"


@dataclass(frozen=True)
class VjpCheck:
    source: str         # graph input or initializer name
    fd: float           # <dy, (f(x+hv) - f(x-hv)) / 2h>
    analytic: float     # <grad, v>
    rel_err: float
    ok: bool
    seed: int = 0       # the probe seed whose inputs, dy and gradient were compared
    noise: float = 0.0  # what rounding alone can put into fd: below it, nothing is compared


@dataclass(frozen=True)
class SeedPoint:
    """One probe seed's inputs, dy and PyTorch gradients, for the VJP check."""

    seed: int
    feeds: dict[str, np.ndarray]
    dy: list[torch.Tensor | None]
    grads: dict[str, torch.Tensor]


@dataclass(frozen=True)
class NumericResult:
    runtime: str | None           # "onnxruntime" | "reference" | None
    why: str                      # why a runtime was skipped / none could run
    forward_max_abs_err: float | None
    forward_ok: bool
    forward_detail: str
    vjp: dict[str, VjpCheck] = field(default_factory=dict)   # worst check per source
    step: float | None = None
    fwd_tol: float | None = None
    vjp_tol: float | None = None
    fwd_bound: float | None = None   # fwd_tol scaled by the outputs' magnitude
    vjp_all: dict[str, tuple[VjpCheck, ...]] = field(default_factory=dict)  # every seed
    outputs_ok: tuple[bool, ...] = ()   # per graph output: within the forward bound
    vjp_skipped: str = ""               # why no VJP was compared (a random draw with a dy)
    drawn: tuple[tuple[int, str], ...] = ()   # outputs compared by shape only: (index, op)
    precision: Precision | None = None  # what the runtime computed in, when below the dtype
    copy: KernelGap | None = None       # onnxruntime ran a float32 copy: the kernel it lacks

    @property
    def ran_in(self) -> str | None:
        """The runtime as a reason names it: ``onnxruntime's float32 copy`` for a copy."""
        return f"{self.runtime}'s float32 copy" if self.copy is not None else self.runtime

    def vjp_ok(self, source: str) -> bool | None:
        c = self.vjp.get(source)
        return None if c is None else c.ok


class Runner:
    """Runs the model with optional initializer overrides, through one runtime. ``copy``:
    onnxruntime lacks a float64 kernel for the model (``float32_copy.float64_gap``), so it
    runs the model's float32 copy instead, fed float32 and handing back float64 what the
    model types float64 -- the float64 model's values, computed in float32 (``given``)."""

    def __init__(self, model: onnx.ModelProto, kind: str, copy: KernelGap | None = None):
        self.model = model
        self.kind = kind
        self.copy = copy
        self.given = None if copy is None else Given("float32", copy.short())
        self._float64 = float64_names(model) if copy is not None else frozenset()
        self._names = [o.name for o in model.graph.output]
        self._base = self._session(model if copy is None else float32_copy(model))

    def _session(self, model: onnx.ModelProto):
        """A session of ``model`` as it runs (for a copy: the float32 copy, already made)."""
        run = self._plain_session(model)
        if self.copy is None:
            return run

        def back(feeds):
            got = run({k: to_float32(v) for k, v in feeds.items()})
            return [to_float64(y) if n in self._float64 else y
                    for n, y in zip(self._names, got)]
        return back

    def _plain_session(self, model: onnx.ModelProto):
        if self.kind == "onnxruntime":
            import onnxruntime as ort
            # a kernel refusing float64 at run time is logged by the default logger before
            # we fall back; the record says what happened, stderr need not
            ort.set_default_logger_severity(4)
            # random ops (RandomNormal, Bernoulli...) draw from onnxruntime's global
            # generator; seed it so a record is the same on every run
            ort.set_seed(0)
            opts = ort.SessionOptions()
            opts.log_severity_level = 4
            # one thread: deterministic reductions (records must repeat bit for bit) and no
            # oversubscription when verify-all runs one worker per core
            opts.intra_op_num_threads = 1
            opts.inter_op_num_threads = 1
            # no graph rewrites: we check the op as exported, not ORT's fused version
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            sess = ort.InferenceSession(model.SerializeToString(), opts,
                                        providers=["CPUExecutionProvider"])
            return lambda feeds: sess.run(None, feeds)
        from onnx.reference import ReferenceEvaluator
        ev = ReferenceEvaluator(_seeded(model))
        return lambda feeds: ev.run(None, feeds)

    def run(self, feeds: dict[str, np.ndarray], overrides: dict[str, np.ndarray] | None = None):
        if not overrides:
            return self._base(feeds)
        m = copy.deepcopy(self.model)   # the one copy a run makes: overridden, then made float32
        for t in m.graph.initializer:
            if t.name in overrides:
                t.CopyFrom(onnx.numpy_helper.from_array(overrides[t.name], t.name))
        return self._session(m if self.copy is None else make_float32(m))(feeds)


RANDOM_OPS = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
              "Bernoulli", "Multinomial"}


def _seeded(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy whose unseeded random nodes carry seed=0: the reference evaluator otherwise
    draws from OS entropy and a record would differ on every run. Only which samples are
    drawn changes; random outputs are never differentiated."""
    if not any(n.op_type in RANDOM_OPS for n in model.graph.node):
        return model
    model = copy.deepcopy(model)
    for n in model.graph.node:
        if n.op_type in RANDOM_OPS and not any(a.name == "seed" for a in n.attribute):
            n.attribute.append(onnx.helper.make_attribute("seed", 0.0))
    return model


def as_numpy(t: torch.Tensor, widen: bool = False) -> np.ndarray:
    """A tensor's values as numpy: bfloat16 (which numpy lacks) through float32, which holds
    each value exactly; with ``widen``, float16 too (the feeds of a widened copy of the
    model, ``float32_copy.widened_copy``)."""
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16 or (widen and t.dtype == torch.float16):
        t = t.float()
    return t.numpy()


_np = as_numpy


def _forward_error(got: list, want: list[torch.Tensor], drawn: Mapping[int, str] = {}
                   ) -> tuple[float, str, bool, tuple[float, ...]]:
    """Max abs error over float outputs; exact match required for integer/bool outputs.
    Also each output's own error (inf: wrong shape or an inexact integer output), so a
    record can say which outputs a runtime reproduces. An output in ``drawn`` is a random
    draw (its index -> the op that drew it): another generator draws other values, so only
    its shape and type are compared."""
    worst, detail, exact_ok = 0.0, "", True
    errs: list[float] = []
    for j, (g, w) in enumerate(zip(got, want)):
        w = _np(w)
        g = np.asarray(g)
        if g.shape != w.shape:
            errs += [float("inf")] * (len(want) - j)
            return float("inf"), f"output {j}: shape {g.shape} vs PyTorch {w.shape}", False, \
                tuple(errs)
        if j in drawn:
            same = g.dtype == w.dtype
            errs.append(0.0 if same else float("inf"))
            if not same:
                exact_ok, detail = False, f"output {j}: {g.dtype} vs PyTorch {w.dtype}"
            continue
        err = 0.0
        if np.issubdtype(w.dtype, np.floating) or np.issubdtype(w.dtype, np.complexfloating):
            if w.size:
                both_nan = np.isnan(g) & np.isnan(w)
                diff = np.where(both_nan, 0.0, np.abs(g.astype(np.float64) - w.astype(np.float64)))
                err = float(np.nan_to_num(diff, nan=np.inf).max())
                if err > worst:
                    worst, detail = err, f"output {j}"
        elif not np.array_equal(g, w):
            exact_ok, err = False, float("inf")
            detail = f"output {j} ({w.dtype}) differs in {int((g != w).sum())} of {w.size} elements"
        errs.append(err)
    return worst, detail, exact_ok, tuple(errs)


def _drawn_dy(drawn: Mapping[int, str], dy: Sequence[torch.Tensor | None]) -> str:
    """Why the VJP check cannot run: a random draw receives a dy ('' when none does)."""
    hit = [j for j in sorted(drawn) if j < len(dy) and dy[j] is not None]
    if not hit:
        return ""
    j = hit[0]
    return (f"no VJP compared: output {j} is a random draw ({drawn[j]}) that receives a dy; "
            "the runtime's draw is not PyTorch's, and a finite difference over two runs "
            "would differentiate two draws")


def forward_bound(fwd_tol: float, outputs: Sequence[np.ndarray]) -> float:
    """The forward check's absolute bound: ``fwd_tol`` scaled by the largest real float
    output's magnitude (at least 1). One formula for the proof and for check-evidence."""
    mags = [float(np.abs(o).max()) for o in map(np.asarray, outputs)
            if np.issubdtype(o.dtype, np.floating) and o.size]
    return fwd_tol * max(1.0, max(mags, default=1.0))


def choose_runtime(model, feeds, target: runtimes.Target | None = None
                   ) -> tuple[Runner | None, list, str]:
    """onnxruntime first; the reference evaluator where onnxruntime fails to load or run --
    each only where it implements ``target``'s schema version (every node's when None:
    ``engine/versions/runtimes.py``), so a number is never another version's; last, where
    onnxruntime refused the model for want of a float64 kernel and no faithful float64
    runtime ran it, onnxruntime on a float32 copy (``Runner.copy``)."""
    reasons: list[str] = []
    gap: KernelGap | None = None
    for kind in (runtimes.ONNXRUNTIME, runtimes.REFERENCE):
        why_not = runtimes.unfaithful(kind, model, target)
        if why_not is not None:
            reasons.append(f"{kind}: {why_not}")
            continue
        try:
            runner = Runner(model, kind)
            got = runner.run(feeds)
            return runner, got, "; ".join(reasons)
        except Exception as exc:
            if kind == runtimes.ONNXRUNTIME:
                gap = float64_gap(exc, model)
            reasons.append(f"{kind}: {describe(exc)}")
    if gap is not None:
        # the last resort: onnxruntime's kernel of the version, in float32 (float32_copy)
        try:
            runner = Runner(model, runtimes.ONNXRUNTIME, copy=gap)
            got = runner.run(feeds)
            return runner, got, "; ".join(reasons)
        except Exception as exc:
            reasons.append(f"onnxruntime's float32 copy: {describe(exc)}")
    return None, [], "; ".join(reasons)


def check(model: onnx.ModelProto, *, feeds: dict[str, np.ndarray],
          expected_outputs: list[torch.Tensor], dy: list[torch.Tensor | None],
          grads: dict[str, torch.Tensor], zero_grads: set[str], initializers: set[str],
          float_dtype: str, seed: int = 0, fwd_tol: float | None = None,
          vjp_tol: float | None = None, more: Sequence[SeedPoint] = (),
          drawn: Mapping[int, str] = {},
          target: runtimes.Target | None = None) -> NumericResult:
    """Forward check of ``model`` against PyTorch's outputs, then one FD-vs-VJP check per
    tensor in ``grads`` (graph input or initializer name -> PyTorch gradient), on this
    seed and on every seed in ``more``: a gradient that is zero on one seed and not on
    another is checked where it is not. ``zero_grads`` lists sources whose PyTorch
    gradient is identically zero: their FD must vanish too. ``drawn``: graph outputs that
    are random draws (index -> the op that drew them), compared by shape and type only;
    when one of them carries a dy, no VJP is compared (the runtime's draw is not PyTorch's,
    and a finite difference across runs differentiates two draws), and ``vjp_skipped``
    says so. ``target``: the node under proof, whose schema version the runtime must
    implement (``choose_runtime``)."""
    runner, got, why = choose_runtime(model, feeds, target)
    if runner is None:
        return NumericResult(None, f"no runtime could run the model ({why})", None, False,
                             "not run")
    # steps and tolerances follow the precision the runtime really computed in
    computed = model_precision(runner.run, feeds, float_dtype, runtime_name(runner.kind),
                               drawn=set(drawn), given=runner.given)
    float_dtype = computed.computed
    fwd_tol = fwd_tol if fwd_tol is not None else FWD_TOL.get(float_dtype, 1e-4)
    vjp_tol = vjp_tol if vjp_tol is not None else VJP_TOL.get(float_dtype, 1e-2)
    h = STEP.get(float_dtype, 1e-3)
    err, where, exact_ok, errs = _forward_error(got, expected_outputs, drawn)
    bound = forward_bound(fwd_tol, [_np(t) for j, t in enumerate(expected_outputs)
                                    if j not in drawn])
    fwd_ok = exact_ok and err <= bound
    detail = f"max abs error {shown_error(err, bound)}" + (f" ({where})" if where and not fwd_ok
                                                           else "")
    if not exact_ok:
        detail = where
    if drawn:
        detail += "; " + "; ".join(f"output {j} is a random draw ({op}): its shape and type "
                                   "compared, not its values" for j, op in sorted(drawn.items()))
    skipped = _drawn_dy(drawn, dy)
    if skipped:
        return NumericResult(runner.kind, why, err, fwd_ok, detail, {}, h, fwd_tol, vjp_tol,
                             bound, {}, tuple(e <= bound for e in errs), vjp_skipped=skipped,
                             drawn=tuple(sorted(drawn.items())),
                             precision=computed if computed.lowered else None,
                             copy=runner.copy)
    init_values = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer
                   if t.name in initializers}
    every: dict[str, list[VjpCheck]] = {}
    for point in [SeedPoint(seed, feeds, dy, grads)] + list(more):
        checks, trouble = vjp_checks(runner, point, init_values, zero_grads, h, vjp_tol,
                                     EPS.get(float_dtype, 1e-7))
        for c in checks:
            every.setdefault(c.source, []).append(c)
        if trouble:
            detail += trouble
    worst = {k: max(v, key=lambda c: (not c.ok, c.rel_err)) for k, v in every.items()}
    return NumericResult(runner.kind, why, err, fwd_ok, detail, worst, h, fwd_tol, vjp_tol,
                         bound, {k: tuple(v) for k, v in every.items()},
                         tuple(e <= bound for e in errs), drawn=tuple(sorted(drawn.items())),
                         precision=computed if computed.lowered else None, copy=runner.copy)


EPS = {"float64": float(np.finfo(np.float64).eps), "float32": float(np.finfo(np.float32).eps),
        "float16": float(np.finfo(np.float16).eps), "bfloat16": 2.0 ** -7}
NOISE_FACTOR = 4.0
"""Rounding puts at most ~eps*|y| into each output of f(x +- hv); contracted with dy and
divided by 2h that is eps * sum|dy||y| / h. A VJP difference within NOISE_FACTOR times
that (plus the relative tolerance) is rounding, not a mismatch -- which matters in
float32, where a small directional derivative of large outputs is below resolution."""


def vjp_checks(runner: Runner, point: SeedPoint, init_values: dict[str, np.ndarray],
                zero_grads: set[str], h: float, vjp_tol: float,
                eps: float) -> tuple[list[VjpCheck], str]:
    feeds, dy = point.feeds, point.dy
    gen = torch.Generator().manual_seed(20_000 + point.seed)
    checks: list[VjpCheck] = []
    trouble = ""
    for source, grad in sorted(point.grads.items()):
        base = feeds[source] if source in feeds else init_values.get(source)
        if base is None:
            continue
        v = torch.randn(base.shape, generator=gen, dtype=torch.float64).numpy()

        def shifted(sign: float) -> list:
            # np.asarray: a 0-d input would otherwise become a numpy scalar ORT rejects
            moved = np.asarray(base.astype(np.float64) + sign * h * v).astype(base.dtype)
            if source in feeds:
                return runner.run({**feeds, source: moved})
            return runner.run(feeds, {source: moved})

        try:
            plus, minus = shifted(1.0), shifted(-1.0)
        except Exception as exc:
            checks.append(VjpCheck(source, float("nan"), float("nan"), float("inf"), False,
                                   point.seed))
            trouble += f"; perturbing {source} failed: {describe(exc)}"
            continue
        fd, noise = 0.0, 0.0
        for j, d in enumerate(dy):
            if d is None or j >= len(plus):
                continue
            p_j = np.asarray(plus[j], dtype=np.float64)
            m_j = np.asarray(minus[j], dtype=np.float64)
            d_j = _np(d).astype(np.float64)
            fd += float(np.sum(d_j * (p_j - m_j)) / (2 * h))
            noise += float(np.sum(np.abs(d_j) * np.maximum(np.abs(p_j), np.abs(m_j)))) * eps / h
        noise *= NOISE_FACTOR
        analytic = float(np.sum(_np(grad).astype(np.float64) * v))
        scale = float(np.linalg.norm(v)) * max(
            (float(np.linalg.norm(_np(d))) for d in dy if d is not None), default=1.0)
        denom = max(abs(analytic), abs(fd), 1e-3 * scale * vjp_tol, noise / vjp_tol)
        rel = abs(fd - analytic) / denom if denom else 0.0
        if source in zero_grads:
            rel = max(abs(fd) - noise, 0.0) / (scale or 1.0)   # must vanish: relative to |dy||v|
        checks.append(VjpCheck(source, fd, analytic, rel, bool(rel <= vjp_tol), point.seed,
                               noise))
    return checks, trouble
