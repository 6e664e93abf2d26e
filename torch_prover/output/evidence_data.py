"""Whether a case directory just built holds the evidence already on disk, and the
evidence's files read back: a rewrite that changes nothing keeps the files (and their
mtimes) where they are (``evidence.write_proof``).

Reproducible on any machine: a rewrite whose ``proof.json`` and ``model.onnx`` are byte for
byte the ones on disk, and whose test data differ only by floating-point noise (torch's
AVX2 and AVX-512 exp/log kernels differ in the last bit: ``data_noise``), keeps the files on
disk. The record is the claim and must repeat exactly; the sample tensors are PyTorch's
values on the machine that first wrote them, and stay valid to within that noise.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import onnx.numpy_helper

from ..inputs import Bound, read_bytes

NOISE_ULPS = 1000
"""Test data equal to within this many units of the dtype's epsilon, relative to the
tensor's largest magnitude, count as the same sample (the module docstring)."""


def load_pb(path: str | os.PathLike) -> np.ndarray:
    """The tensor a ``.pb`` of an evidence tree holds, read by the one reader
    (``inputs.read_bytes``: a regular file, no symlink followed, bounded); InputError
    naming the file otherwise."""
    t = onnx.TensorProto()
    t.ParseFromString(read_bytes(path, Bound.EVIDENCE, follow=False))
    return onnx.numpy_helper.to_array(t)


def data_noise(a: np.ndarray, b: np.ndarray) -> bool:
    """``a`` and ``b`` are the same tensor up to floating-point noise (exact otherwise)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.complexfloating)):
        return bool(np.array_equal(a, b))
    if np.array_equal(a, b, equal_nan=True):
        return True
    same_nan = np.array_equal(np.isnan(a), np.isnan(b))
    x, y = np.nan_to_num(a), np.nan_to_num(b)
    scale = max(float(np.abs(x).max(initial=0.0)), float(np.abs(y).max(initial=0.0)),
                float(np.finfo(a.dtype).tiny))
    eps = float(np.finfo(a.dtype).eps)
    return same_nan and float(np.abs(x - y).max(initial=0.0)) <= NOISE_ULPS * eps * scale


def same_evidence(old: Path, new: Path) -> bool:
    """Same record and model byte for byte, same data files up to ``data_noise``. A file
    missing from ``old`` (a deleted model.onnx, no test_data_set_0) is not the same: the
    directory is rewritten, never left broken."""
    try:
        for name in ("proof.json", "model.onnx"):
            if _read(old / name) != _read(new / name):
                return False
        a, b = old / "test_data_set_0", new / "test_data_set_0"
        names = sorted(p.name for p in a.iterdir())
        if names != sorted(p.name for p in b.iterdir()):
            return False
        for name in names:
            if _read(a / name) != _read(b / name) and \
                    not data_noise(load_pb(a / name), load_pb(b / name)):
                return False
    except Exception:   # unreadable (a FIFO, a truncated .pb...): not the same
        return False
    return True


def _read(path: Path) -> bytes:
    return read_bytes(path, Bound.EVIDENCE, follow=False)
