"""The installed onnx's node tests, collected once: ``collect_testcases`` builds every case
in Python (about 8 s on a quiet 2-core machine), so a run keeps what it collected in the
cache directory, keyed on what determines it -- the onnx version and the digest of the
generators' source (``onnx/backend/test/case/node/*.py``) -- and reads it back after. A run
that needs some ops' tests only builds and keeps those, one file per op (``installed_tests``
with ``ops``): ``--ops Relu`` runs Relu's generators, not all 1,884.

One ``.npz`` file written atomically, read with ``allow_pickle=False``: arrays and a JSON
index only, so a damaged or foreign file is a miss, never code that runs. ONNX's tests hold
values numpy's format keeps only by pickling (strings and ``TensorProto`` in object arrays) or
stores as anonymous bytes (ml_dtypes' bfloat16, float8, int4...): those are encoded as plain
arrays and named in the index (``_encode``), so they read back with their type -- format 1
pickled them, and ``allow_pickle=False`` then refused the whole file: every run collected
again.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import struct
import tempfile
import zipfile
from pathlib import Path
from typing import Collection

import numpy as np
import onnx
from google.protobuf.message import DecodeError

from ...inputs import Bound, InputError, read_bytes
from ...vocab import PointsSkip
from .source import NodeTest, Skipped, installed

FORMAT = 2
_OP = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,99}\Z")


def _encode(x: np.ndarray) -> tuple[np.ndarray, str | None]:
    """An array numpy's format stores as it is, and how to decode it (None: as stored)."""
    if x.dtype.kind == "O":
        items = x.reshape(-1).tolist()
        if x.ndim == 0 and isinstance(items[0], onnx.TensorProto):
            return np.frombuffer(items[0].SerializeToString(), dtype=np.uint8), "proto"
        if all(isinstance(i, str) for i in items):
            return x.astype(str), "str"
        raise ValueError(f"an object array of {type(items[0]).__name__} has no plain form")
    if x.dtype.type.__module__.split(".")[0] != "numpy":   # ml_dtypes: bfloat16, float8...
        plain = x.reshape(-1).view(f"u{x.dtype.itemsize}").reshape(x.shape)
        return plain, f"ml_dtypes:{x.dtype.name}"
    return x, None


def _decode(x: np.ndarray, how: str | None) -> np.ndarray:
    if how is None:
        return x
    if how == "proto":
        t = onnx.TensorProto()
        t.ParseFromString(x.tobytes())
        out = np.empty((), dtype=object)
        out[()] = t
        return out
    if how == "str":
        return x.astype(object)
    import ml_dtypes
    return x.view(getattr(ml_dtypes, how.partition(":")[2]))


def generators_digest() -> str:
    """The onnx version and its node test generators' source: what the points depend on."""
    root = Path(onnx.__file__).parent / "backend" / "test" / "case"
    h = hashlib.sha256(f"{onnx.__version__}\n{FORMAT}\n".encode())
    for p in sorted(root.rglob("*.py")):
        h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def _path(cache_dir: Path, op: str | None = None, digest: str | None = None) -> Path:
    """The whole collection's file, or (``op``) one op's."""
    name = (digest or generators_digest())[:32] + (f"-{op}" if op is not None else "")
    return Path(cache_dir) / f"onnx-node-tests-{name}.npz"


def _save(path: Path, tests: list[NodeTest | Skipped]) -> None:
    arrays: dict[str, np.ndarray] = {}
    index = []
    for k, t in enumerate(tests):
        if isinstance(t, Skipped):
            index.append({"name": t.name, "op": t.op, "skip": t.reason.value, "detail": t.detail})
            continue
        arrays[f"m{k}"] = np.frombuffer(t.model, dtype=np.uint8)
        shapes, encoded = [], {}
        for d, (ins, outs) in enumerate(t.data_sets):
            for side, values in (("i", ins), ("o", outs)):
                for j, x in enumerate(values):
                    key = f"{side}{k}_{d}_{j}"
                    arrays[key], how = _encode(x)
                    if how is not None:
                        encoded[key] = how
            shapes.append([len(ins), len(outs)])
        index.append({"name": t.name, "op": t.op, "opset": t.opset, "version": t.version,
                      "rtol": t.rtol, "atol": t.atol, "sets": shapes, "encoded": encoded})
    arrays["index"] = np.frombuffer(json.dumps(index).encode(), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".onnx-node-tests-", suffix=".npz", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_HEADER = re.compile(r"\{'descr': '([^']+)', 'fortran_order': (True|False), "
                     r"'shape': \(([\d, ]*)\), \}\s*")


def _arrays(data: bytes) -> dict[str, np.ndarray] | None:
    """The store's arrays, each checked by its headers before it is built (None: a miss).
    Not ``np.load``: it allocates the shape an ``.npy`` header declares before reading a
    byte (8 TiB, a MemoryError) -- here the zip's unpacked sizes together are held to the
    store's bound (a deflated bomb), each member is read no further than its unpacked size,
    and its array must be exactly what that holds: numpy's own header, a plain dtype, no
    object array."""
    out = {}
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        infos = zf.infolist()
        if sum(i.file_size for i in infos) > Bound.POINTS.limit:
            return None
        for info in infos:
            raw = zf.read(info)
            if raw[:6] != b"\x93NUMPY" or not info.filename.endswith(".npy"):
                return None
            size, start = ((struct.unpack("<H", raw[8:10])[0], 10) if raw[6] == 1
                           else (struct.unpack("<I", raw[8:12])[0], 12))
            m = _HEADER.fullmatch(raw[start:start + size].decode("latin-1"))
            if m is None:
                return None
            dtype = np.dtype(m.group(1))
            shape = tuple(int(n) for n in m.group(3).split(",") if n.strip())
            body = memoryview(raw)[start + size:]
            if dtype.hasobject or math.prod(shape) * dtype.itemsize != len(body):
                return None
            x = np.frombuffer(body, dtype=dtype).copy()
            out[info.filename[:-4]] = (x.reshape(shape[::-1]).T if m.group(2) == "True"
                                       else x.reshape(shape))
    return out


def _load(path: Path) -> list[NodeTest | Skipped] | None:
    """The store's tests, or None -- a miss, collected again -- when any check fails: the
    file read through the one bounded reader (a regular file of at most 256 MiB), every
    array within it by its headers (``_arrays``), every model a ``ModelProto``."""
    try:
        z = _arrays(read_bytes(path, Bound.POINTS, follow=False))
        if z is None:
            return None
        index = json.loads(z["index"].tobytes())
        tests: list[NodeTest | Skipped] = []
        for k, e in enumerate(index):
            if "skip" in e:
                tests.append(Skipped(e["name"], e["op"], PointsSkip(e["skip"]), e["detail"]))
                continue
            how = e["encoded"]
            sets = tuple((tuple(_decode(z[f"i{k}_{d}_{j}"], how.get(f"i{k}_{d}_{j}"))
                                for j in range(n_in)),
                          tuple(_decode(z[f"o{k}_{d}_{j}"], how.get(f"o{k}_{d}_{j}"))
                                for j in range(n_out)))
                         for d, (n_in, n_out) in enumerate(e["sets"]))
            model = z[f"m{k}"].tobytes()
            onnx.ModelProto.FromString(model)   # parsed here: bytes that are no model miss
            tests.append(NodeTest(e["name"], e["op"], e["opset"], e["version"],
                                  model, sets, e["rtol"], e["atol"]))
        return tests
    except (InputError, OSError, ValueError, KeyError, TypeError, AttributeError, EOFError,
            IndexError, struct.error, zipfile.BadZipFile, NotImplementedError, RuntimeError,
            DecodeError, RecursionError):   # RuntimeError: an encrypted member
        return None


def _written(path: Path, tests: list[NodeTest | Skipped], cache_dir: Path) -> str | None:
    try:
        _save(path, tests)
    except (OSError, ValueError) as exc:
        return (f"cache {cache_dir} not written ({getattr(exc, 'strerror', None) or exc}); "
                "ONNX's node tests are kept")
    return None


def installed_tests(cache_dir: Path | None, ops: Collection[str] | None = None
                    ) -> tuple[list[NodeTest | Skipped], str | None]:
    """The installed onnx's node tests (``ops``: only those ops' -- ``source.installed``),
    from the cache when it holds them; and a warning when the cache could not be written
    (the tests are still returned)."""
    if ops is not None:
        return _some(cache_dir, sorted(set(ops)))
    if cache_dir is None:
        return installed(), None
    path = _path(cache_dir)
    cached = _load(path) if os.path.lexists(path) else None
    if cached is not None:
        return cached, None
    tests = installed()
    return tests, _written(path, tests, cache_dir)


def prefetch(cache_dir: Path, ops: Collection[str]) -> None:
    """Collect and cache, each in its own file, the tests of ``ops`` the cache lacks: what
    ``installed_tests(cache_dir, ops)`` would build and write, done ahead (verify-all runs
    it beside its workers, batch/verify.py), so that call then reads them back."""
    todo = uncached(cache_dir, ops)
    if todo:
        _some(cache_dir, todo)


def uncached(cache_dir: Path, ops: Collection[str]) -> list[str]:
    """The ops among ``ops`` whose tests the cache holds neither in their own file nor in
    the whole collection's: what ``prefetch`` builds."""
    digest = generators_digest()
    if _path(cache_dir, None, digest).is_file():
        return []
    return [op for op in sorted(set(ops)) if _OP.match(op)
            and not _path(cache_dir, op, digest).is_file()]


def _some(cache_dir: Path | None, ops: list[str]) -> tuple[list[NodeTest | Skipped], str | None]:
    """Some ops' tests: each op's own file, else the whole collection's when it is cached
    (filtered, nothing written), else built for the ops still missing and kept per op."""
    if cache_dir is None:
        return installed(ops), None
    digest = generators_digest()
    # an op's name becomes a file name: one no ONNX op could have (PR mode reads names from
    # a PR's docs: hostile input) has no tests and no file
    found: dict[str, list[NodeTest | Skipped]] = {op: [] for op in ops if not _OP.match(op)}
    for op in ops:
        if op in found:
            continue
        path = _path(cache_dir, op, digest)
        cached = _load(path) if path.is_file() else None
        if cached is not None:
            found[op] = cached
    missing = [op for op in ops if op not in found]
    warning = None
    if missing:
        whole = _path(cache_dir, None, digest)
        cached = _load(whole) if whole.is_file() else None
        built = cached if cached is not None else installed(missing)
        for op in missing:
            found[op] = [t for t in built if t.op == op and "_expanded" not in t.name]
            if cached is None:
                warning = _written(_path(cache_dir, op, digest), found[op], cache_dir) or warning
    return [t for op in ops for t in found[op]], warning
