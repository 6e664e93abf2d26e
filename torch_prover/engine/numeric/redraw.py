"""Zero at the script's own inputs is not the op's math: the node measured at re-drawn values.

Why: a proof script's inputs are the contributor's choice, and a selecting op (Max, Min,
Where, Relu, Clip, Gather...) gives an input no gradient wherever the values never select
it: ``torch.maximum(a, b)`` with every ``a`` below ``b`` leaves ``a`` flat on every seed
and at every nearby point, on both witnesses, though ``a`` is differentiable wherever it
is the maximum. Before such a zero counts as "non-differentiable", the node's own witness
(:mod:`node_witness`) is measured again with the model's floating graph inputs re-drawn
(same shapes and dtypes, standard normal: seeded, so each selecting branch is hit with
overwhelming probability on a few draws) and its bool inputs re-drawn (a ``Where``'s
condition takes both values); integer inputs (indices, shapes) stay as the script gave
them. What is smooth at a re-drawn point and flat at the script's is "not exercised
there", never a disagreement (docs/verdicts.md, "Zero at the measured points").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import onnx

from ...vocab import NumericOutcome
from .node_witness import witness

DRAWS = 4
"""Re-drawn points per proof: with n elements per input, a branch a draw misses on all
four has probability about 2^(-4n) for a two-way choice."""


@dataclass(frozen=True)
class Redrawn:
    """What the node witness found at the re-drawn points, per (io, index)."""

    smooth: Mapping[tuple[str, int], int]     # (io, index) -> draws where it was smooth
    draws: int

    def exercised(self, io: str, index: int) -> int:
        return self.smooth.get((io, index), 0)


def redraw_feeds(feeds: Mapping[str, np.ndarray], seed: int) -> dict[str, np.ndarray]:
    """The feeds with every floating array re-drawn from a standard normal, every bool one
    re-drawn uniformly; others (indices, shapes) kept."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, x in feeds.items():
        if isinstance(x, np.ndarray) and x.dtype.kind == "f":
            out[name] = rng.standard_normal(x.shape).astype(x.dtype)
        elif isinstance(x, np.ndarray) and x.dtype.kind == "b":
            out[name] = rng.random(x.shape) < 0.5
        else:
            out[name] = x
    return out


def measure_redrawn(model: onnx.ModelProto, node_index: int,
                    feeds: Sequence[Mapping[str, np.ndarray]], seed: int = 0,
                    draws: int = DRAWS) -> Redrawn:
    """The node's witness at ``draws`` re-drawn points (from each probe seed's feeds in
    turn): per node input and output, on how many it was smooth."""
    smooth: dict[tuple[str, int], int] = {}
    for k in range(draws):
        base = feeds[k % len(feeds)]
        w = witness(model, node_index, redraw_feeds(base, 7919 * (seed + 1) + k), seed=k)
        for io, items in (("input", w.inputs), ("output", w.outputs)):
            for item in items:
                if item.outcome is NumericOutcome.SMOOTH:
                    key = (io, item.index)
                    smooth[key] = smooth.get(key, 0) + 1
    return Redrawn(smooth, draws)
