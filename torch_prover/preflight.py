"""Checks made before any work: every argument and every output location.

A bad input must cost the user one line and exit 2 at once, not a 40-second batch that
ends in "internal error: OSError". Each check raises ``UsageError`` with a message that
names the option, the value and what to do.

Writability is tested by creating (and removing) a temporary file where the output will
go, or in its nearest existing parent: permission bits lie for root and for read-only
mounts, a real attempt does not.
"""
from __future__ import annotations

import contextlib
import math
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from .errors import UsageError
from .inputs import Bound, file_kind, read_bytes, read_text
from .output.ownership import Holds


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


def not_empty(path: str | os.PathLike, what: str) -> str:
    """``path``, refused when empty or blank: ``''`` is never "not given" nor ``.`` (it used
    to be both: ``fix-tags --report ''`` ran its own verify-all, ``check-evidence ''``
    checked the current directory). UsageError, one line, before any work."""
    if not str(path).strip():
        raise UsageError(f"{what}: empty path")
    return str(path)


def writable_dir(path: str | os.PathLike, what: str) -> Path:
    """``path`` is, or can become, a directory we can write in."""
    p = Path(path)
    not_empty(path, what)
    base = _nearest_existing(p.absolute())
    if not base.is_dir():
        raise UsageError(f"{what} {p}: {base} is not a directory")
    _try_write(base, what, p)
    return p


def cache_dir(path: str | os.PathLike) -> str | None:
    """``--cache-dir``: a warning (None when writable) for an existing cache that cannot be
    written -- it is still read, so a read-only warm cache costs a warning, not the batch;
    UsageError for an empty path or a new one that cannot be created."""
    p = Path(path)
    if str(path).strip() and p.is_dir():
        try:
            _try_write(p, "--cache-dir", p)
        except UsageError as exc:
            return f"{exc}; its results are read, new ones are not kept"
        return None
    writable_dir(path, "--cache-dir")
    return None


def writable_file(path: str | os.PathLike, what: str) -> Path:
    """``path`` is a regular file we can replace, or absent and creatable: never a symlink,
    a FIFO, a device or a directory (replacing one would destroy what it is)."""
    p = Path(path)
    not_empty(path, what)
    try:
        mode = os.lstat(p).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise UsageError(f"{what} {p}: cannot look at it ({exc.strerror})") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise UsageError(f"{what} {p}: is a directory; give a file name")
    if mode is not None and not stat.S_ISREG(mode):
        raise UsageError(f"{what} {p}: is {file_kind(mode)}; torch-prover writes only a "
                         "regular file or a new one: give another name")
    writable_dir(p.absolute().parent, what)
    return p


def in_checkout(cwd: Path) -> bool:
    """``cwd`` is the root of a torch_prover checkout: its pyproject.toml is this package's
    and it holds the committed evidence (models/). Where ``prove`` and ``verify-all`` write
    ./models by default."""
    from .compat import tomllib
    try:
        name = tomllib.loads(read_text(cwd / "pyproject.toml", Bound.TOML)).get(
            "project", {}).get("name")
    except (UsageError, ValueError, AttributeError):   # absent, not a file, not TOML...
        return False
    return name == "torch-prover" and (cwd / "models").is_dir() and (
        cwd / "torch_prover").is_dir()


def _real(path: str | os.PathLike) -> Path:
    return Path(os.path.realpath(os.path.abspath(path)))


PACKAGE_DIR = Path(__file__).resolve().parent
"""torch-prover's own package: every command reads it (the cache keys on its source)."""


@dataclass(frozen=True)
class Output:
    """One place a command writes: the option that names it (``-o (its PR text)`` for a
    derived name), the path, and what the command writes there (``ownership.Holds``;
    None: a directory, whose entries the evidence writer checks one by one)."""

    option: str
    path: str | os.PathLike
    holds: Holds | None


def report_files(path: str | None, fmt: str) -> list[Output]:
    """``--report PATH`` in ``fmt``: the report, and a Markdown report's details file beside
    it (``batch_render.report_outputs``), each replaced only when it holds a report
    torch-prover wrote."""
    from .output.batch_render import report_outputs
    return [Output(what, p, Holds.REPORT) for what, p in report_outputs(path, fmt)]


def outputs_checked(outputs: Iterable[Output],
                    inputs: Iterable[tuple[str, str | os.PathLike | None]] = (),
                    trees: Iterable[tuple[str, str | os.PathLike | None]] = ()) -> None:
    """The output rule, one check for every command that writes (docs/safety.md): an output
    path is never an input, never inside an input tree, and never a file this command did
    not create -- derived names included.

    ``inputs`` are the files the command reads and ``trees`` the directories it reads or
    writes as a whole (``(option, path)``; a ``None`` path is skipped); torch-prover's own
    package is always one, and every pyproject.toml at or above the current directory is
    always an input (``config.candidates``: the settings are read from them). A file that
    is appended to, not replaced (the step summary: ownership cannot protect what it is
    added to), lies in no directory output either (``--out``: the evidence, its index). UsageError, one line, before any work, when an output is not a
    regular file or creatable (``writable_file``; a directory output: ``writable_dir``), is
    an input or another output, lies inside a tree, or exists and is not listed in its
    directory's manifest as what this command writes there (``ownership.written_by_us``: an
    empty file holds nothing); then an older torch-prover's half-written temporaries of
    each output are swept (``output/leftovers.py``).
    A killed run's commit of outputs in their directory (``output/commit.py``) is
    finished or undone first, so the checks see the old set or the new one."""
    from .config import candidates
    from .output.commit import recover
    from .output.leftovers import sweep_output
    from .output.ownership import OUTPUTS, read_outputs, written_by_us
    outputs = list(outputs)
    for o in outputs:   # a killed run's commit there is finished (or undone) first
        with contextlib.suppress(OSError):
            recover(o.path if o.holds is None else Path(o.path).parent)
    for o in outputs:
        (writable_file if o.holds is not None else writable_dir)(o.path, o.option)
    settings = [("pyproject.toml", p) for p in candidates(Path.cwd())]
    _apart([(o.option, o.path) for o in outputs], [*inputs, *settings],
           [("torch-prover's own package", PACKAGE_DIR), *trees])
    appended = [o for o in outputs if o.holds is Holds.STEP_SUMMARY]
    _apart([(o.option, o.path) for o in appended],
           trees=[(o.option, o.path) for o in outputs if o.holds is None])
    listed = [o for o in outputs if o.holds is not None and o.holds.listed]
    for o in listed:
        manifest = Path(o.path).parent / OUTPUTS
        if Path(o.path).name == OUTPUTS:
            raise UsageError(f"{o.option} {o.path}: is the name of the list of outputs "
                             "torch-prover keeps in a directory; give the output another name")
        if read_outputs(manifest.parent) is None:
            raise UsageError(f"{o.option} {o.path}: {manifest} beside it is not the list of "
                             "outputs torch-prover keeps there; it is left alone: move it or "
                             "give the output another directory")
    for o in outputs:
        if o.holds is not None and os.path.lexists(o.path) and \
                not written_by_us(Path(o.path), o.holds):
            raise UsageError(f"{o.option} {o.path}: exists and is not {o.holds} torch-prover "
                             f"wrote ({OUTPUTS} beside it does not list it, as it is now); "
                             "it is left alone: give another name or remove it")
    for o in listed:   # every check passed: an older run's half-written temporaries go
        sweep_output(o.path, o.holds)


def dirs_apart(dirs: Iterable[tuple[str, str | os.PathLike | None]]) -> None:
    """UsageError when one of the directories a command writes as a whole (``--out``,
    ``--cache-dir``) lies inside another: cache files would land among the evidence (and
    the next run refuse them as foreign), or evidence among the cache's entries."""
    given = [(w, _real(p)) for w, p in dirs if p is not None and str(p)]
    for i, (what, path) in enumerate(given):
        for j, (other, tree) in enumerate(given):
            if i != j and path.is_relative_to(tree):
                raise UsageError(f"{what} {path}: is inside {other} ({tree}); give each its "
                                 "own directory")


def _apart(outputs: Iterable[tuple[str, str | os.PathLike]],
           inputs: Iterable[tuple[str, str | os.PathLike | None]] = (),
           trees: Iterable[tuple[str, str | os.PathLike | None]] = ()) -> None:
    """UsageError when an output is an input (the same file, by path after symlinks or by
    inode), another output, or lies inside one of the trees."""
    inputs = [(w, p) for w, p in inputs if p is not None and str(p)]
    trees = [(w, _real(p)) for w, p in trees if p is not None and str(p)]
    seen: list[tuple[str, Path]] = []
    for what, out in outputs:
        real = _real(out)
        for other, src in inputs:
            same = _real(src) == real
            if not same and os.path.exists(out) and os.path.exists(src):
                same = os.path.samefile(out, src)
            if same:
                raise UsageError(f"{what} {out}: is the {other} file this run reads; "
                                 "give the output another name")
        for other, done in seen:
            if done == real:
                raise UsageError(f"{what} {out}: is also {other}; give it another name")
        for other, tree in trees:
            if real == tree or real.is_relative_to(tree):
                raise UsageError(f"{what} {out}: is inside {other} ({tree}), which "
                                 "torch-prover writes or reads as a whole; write it elsewhere")
        seen.append((what, real))


def is_decimal(text: str) -> bool:
    """ASCII digits only: ``str.isdigit`` takes '²' and '٣', which ``int`` refuses or reads
    as another number."""
    return text.isascii() and text.isdigit()


def positive_int(value: int, what: str) -> int:
    if value < 1:
        raise UsageError(f"{what} {value}: must be at least 1")
    return value


def positive_seconds(value: float, what: str) -> float:
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"{what} {value:g}: must be a finite number of seconds above 0")
    return value


MAX_SEED = 2 ** 63 - 2
"""The probe seeds torch with S and S + 1, and torch's seed is an int64."""


def seed(value: int | None) -> int | None:
    if value is not None and not 0 <= value <= MAX_SEED:
        raise UsageError(f"--seed {value}: must be 0 to {MAX_SEED} (the probe also uses "
                         "the next one)")
    return value


def opset_for(case, opset: int | None) -> int | None:
    """``--opset`` for ``case``: an opset some route reaches, 7 (the oldest onnxruntime runs
    and the TorchScript exporter builds) up to the installed onnx's newest; ``prove`` then
    proves the variant ``verify-all --versions`` proves there (``batch/versions.at_opset``:
    its exporter, or the relabelled route)."""
    if opset is None:
        return None
    import onnx.defs

    from .case import TORCHSCRIPT_MIN_OPSET
    low, high = TORCHSCRIPT_MIN_OPSET, onnx.defs.onnx_opset_version()
    if not low <= opset <= high:
        raise UsageError(f"--opset {opset}: {case.op}/{case.name} can be proved at opsets "
                         f"{low}..{high} (below {low} no runtime implements a schema version: "
                         f"engine/versions/runtimes.py)")
    return opset


def schema_opset(opset: int | None) -> int | None:
    """``tags --opset``: an opset the installed onnx knows (0 .. its newest)."""
    import onnx.defs
    newest = onnx.defs.onnx_opset_version()
    if opset is not None and not 0 <= opset <= newest:
        raise UsageError(f"--opset {opset}: the installed onnx knows opsets 1..{newest}")
    return opset


def op_names(text: str, what: str) -> list[str]:
    """A comma-separated list of known ops (any capitalisation), at least one."""
    from .tags.schema import canonical_op
    names = [o.strip() for o in text.split(",") if o.strip()]
    if not names:
        raise UsageError(f"{what} {text!r}: names no op; e.g. {what} Relu,Add")
    return list(dict.fromkeys(canonical_op(n) for n in names))


def readable_file(path: str | os.PathLike, what: str) -> Path:
    """``path`` is a regular file (after symlinks) we can open: a FIFO would block the
    read forever, a directory is not a file -- each said as what it is."""
    p = Path(path)
    not_empty(path, what)
    try:
        mode = os.stat(p).st_mode
    except FileNotFoundError:
        raise UsageError(f"{what} {p}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{what} {p}: cannot look at it ({exc.strerror})") from None
    if not stat.S_ISREG(mode):
        raise UsageError(f"{what} {p}: is {file_kind(mode)}, not a regular file")
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


def has_node_tests(path: str) -> bool:
    """An ONNX checkout that commits its node tests (verify-all --onnx-src: ONNX's points)."""
    from .engine.onnx_points.source import NODE_DATA
    return (Path(path) / NODE_DATA).is_dir()


def evidence_dirs(out: Path, pairs: Iterable[tuple[str, str]]) -> None:
    """The case directories a run would write are absent or ours (see evidence)."""
    from .errors import OutputError
    from .output.evidence import check_case_dirs
    try:
        check_case_dirs(out, pairs)
    except OutputError as exc:
        raise UsageError(f"--out: {exc}") from None


# --------------------------------------------------------------------------- --tags-from
def load_docs(path: str | None, domain: str = ""):
    """The docs file for --tags-from (Operators.md or Changelog.md, told apart by content)
    of ``domain``'s ops ("": ai.onnx; the PR gate's ai.onnx.ml: a Changelog-ml.md), or None
    for the installed onnx."""
    if not path:
        return None
    from .tags.docs import DocsError, load
    readable_file(path, "--tags-from")
    try:
        return load(path, domain)
    except DocsError as exc:
        raise UsageError(f"--tags-from: {exc}") from None


def tags_of(doc, path: str | None):
    """(tags function, label, fingerprint) of a loaded docs file, or of the installed onnx."""
    if doc is None:
        return None, "onnx.defs", ""
    import hashlib
    return doc.tags, doc.source, hashlib.sha256(read_bytes(path, Bound.DOCS,
                                                           "--tags-from")).hexdigest()


def tag_source(path: str | None):
    """(tags function, label, fingerprint) for --tags-from, or the installed onnx."""
    return tags_of(load_docs(path), path)
