"""Checks made before any work: every argument and every output location.

A bad input must cost the user one line and exit 2 at once, not a 40-second batch that
ends in "internal error: OSError". Each check raises ``UsageError`` with a message that
names the option, the value and what to do.

Writability is tested by creating (and removing) a temporary file where the output will
go, or in its nearest existing parent: permission bits lie for root and for read-only
mounts, a real attempt does not.
"""
from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import Iterable

from .errors import UsageError


def _nearest_existing(path: Path) -> Path:
    p = path
    while not os.path.lexists(p) and p != p.parent:
        p = p.parent
    return p


def _try_write(directory: Path, what: str, shown: Path) -> None:
    try:
        with tempfile.TemporaryFile(dir=directory, prefix=".torch-prover-probe-"):
            pass
    except OSError as exc:
        raise UsageError(f"{what} {shown}: cannot write there "
                         f"({exc.strerror or type(exc).__name__})") from None


def writable_dir(path: str | os.PathLike, what: str) -> Path:
    """``path`` is, or can become, a directory we can write in."""
    p = Path(path)
    if not str(path).strip():
        raise UsageError(f"{what}: empty path")
    base = _nearest_existing(p.absolute())
    if not base.is_dir():
        raise UsageError(f"{what} {p}: {base} is not a directory")
    _try_write(base, what, p)
    return p


def writable_file(path: str | os.PathLike, what: str) -> Path:
    """``path`` is a file we can create or replace."""
    p = Path(path)
    if not str(path).strip():
        raise UsageError(f"{what}: empty path")
    if p.is_dir():
        raise UsageError(f"{what} {p}: is a directory; give a file name")
    writable_dir(p.absolute().parent, what)
    return p


def in_checkout(cwd: Path) -> bool:
    """``cwd`` is the root of a torch_prover checkout: its pyproject.toml is this package's
    and it holds the committed evidence (models/). Where ``prove`` and ``verify-all`` write
    ./models by default."""
    import tomllib
    try:
        with open(cwd / "pyproject.toml", "rb") as f:
            name = tomllib.load(f).get("project", {}).get("name")
    except (OSError, ValueError):
        return False
    return name == "torch-prover" and (cwd / "models").is_dir() and (
        cwd / "torch_prover").is_dir()


def positive_int(value: int, what: str) -> int:
    if value < 1:
        raise UsageError(f"{what} {value}: must be at least 1")
    return value


def positive_seconds(value: float, what: str) -> float:
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"{what} {value:g}: must be a finite number of seconds above 0")
    return value


def op_names(text: str, what: str) -> list[str]:
    """A comma-separated list of known ops (any capitalisation), at least one."""
    from .tags.schema import canonical_op
    names = [o.strip() for o in text.split(",") if o.strip()]
    if not names:
        raise UsageError(f"{what} {text!r}: names no op; e.g. {what} Relu,Add")
    return list(dict.fromkeys(canonical_op(n) for n in names))


def readable_file(path: str | os.PathLike, what: str) -> Path:
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{what} {p}: no such file")
    try:
        with open(p, "rb"):
            pass
    except OSError as exc:
        raise UsageError(f"{what} {p}: cannot read it ({exc.strerror})") from None
    return p


def onnx_source(path: str) -> Path:
    """An ONNX checkout's root (fix-tags --onnx-src): it must hold onnx/defs."""
    root = Path(path)
    if not (root / "onnx" / "defs").is_dir():
        raise UsageError(f"--onnx-src {path}: no onnx/defs there; give the root of an ONNX "
                         "checkout")
    return root


def evidence_dirs(out: Path, pairs: Iterable[tuple[str, str]]) -> None:
    """The case directories a run would write are absent or ours (see evidence)."""
    from .errors import OutputError
    from .output.evidence import check_case_dirs
    try:
        check_case_dirs(out, pairs)
    except OutputError as exc:
        raise UsageError(f"--out: {exc}") from None


# --------------------------------------------------------------------------- --tags-from
def load_docs(path: str | None):
    """The docs file for --tags-from (Operators.md or Changelog.md, told apart by content),
    or None for the installed onnx."""
    if not path:
        return None
    from .tags.docs import DocsError, load
    readable_file(path, "--tags-from")
    try:
        return load(path)
    except DocsError as exc:
        raise UsageError(f"--tags-from: {exc}") from None


def tags_of(doc, path: str | None):
    """(tags function, label, fingerprint) of a loaded docs file, or of the installed onnx."""
    if doc is None:
        return None, "onnx.defs", ""
    import hashlib
    return doc.tags, doc.source, hashlib.sha256(Path(path).read_bytes()).hexdigest()


def tag_source(path: str | None):
    """(tags function, label, fingerprint) for --tags-from, or the installed onnx."""
    return tags_of(load_docs(path), path)
