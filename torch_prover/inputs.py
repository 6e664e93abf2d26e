"""Every file torch-prover reads as an input: its kind checked and its size bounded before
a byte of it is read (docs/safety.md, "What torch-prover reads").

Why one reader: a FIFO named as a docs file blocks the read forever, a device (``/dev/zero``)
never ends, and a 2 GB file given as a base costs twice its size in memory before its first
line could be judged. ``read_bytes`` opens without blocking (``O_NONBLOCK``: opening a FIFO
for reading would wait for a writer), refuses anything but a regular file after symlinks,
refuses a file over its kind's bound by its size, and reads at most one byte more than the
bound (a file that grows while it is read is refused too). Each error is an ``InputError``:
one line naming the file (exit 2). The bounds (``Bound``) are far above any real input and
far below what a machine has. Files inside an evidence tree (``proof.json``, ``model.onnx``,
the ``.pb`` test data) are read the same way, without following a symlink out of the tree
(``follow=False``): check-evidence, node-tests and the evidence writer call it too.
"""
from __future__ import annotations

import errno
import os
import stat
from enum import Enum

from .errors import UsageError


class Bound(Enum):
    """The largest input of each kind, in bytes, and what the kind is called in a refusal.

    ONNX's docs/Changelog.md of main is 1.4 MB and its Operators.md 1.3 MB (docs: 64 MiB);
    a waivers file or a pyproject.toml is a few kB (TOML: 16 MiB); the all-versions report is
    ~7 MB, ~9 MB with a Changelog.md inside it (report: 256 MiB); a proof script is a page
    (script: 16 MiB); ONNX's largest onnx/defs source, tensor/old.cc, is ~340 kB (C++
    source: 16 MiB); the largest proof record and cache entry ~20 kB (record: 16 MiB); the
    largest ``model.onnx`` and ``.pb`` under models/ are ~19 kB and ~1 kB, but a ``run``
    script may export real weights, so evidence files are bounded by protobuf's own limit on
    a serialized message (2 GiB). A checkout's committed node tests (``--onnx-src``: a PR's
    files) are ONNX's own, whose largest file is 393 kB (``test_*pool_3d_default``'s
    input): node test 64 MiB."""

    DOCS = (64 * 2 ** 20, "ONNX docs file")
    TOML = (16 * 2 ** 20, "TOML file")
    REPORT = (256 * 2 ** 20, "report")
    SCRIPT = (16 * 2 ** 20, "proof script")
    CPP = (16 * 2 ** 20, "C++ source file")
    RECORD = (16 * 2 ** 20, "proof record or cache entry")
    POINTS = (256 * 2 ** 20, "store of ONNX's node tests")
    EVIDENCE = (2 ** 31, "model or test-data file")
    NODE_TEST = (64 * 2 ** 20, "node-test model or tensor file")

    @property
    def limit(self) -> int:
        return self.value[0]

    @property
    def noun(self) -> str:
        return self.value[1]


class InputError(UsageError):
    """An input that is not a regular file, cannot be read, or is larger than its kind can
    be: one line naming the file (``what`` the option that gave it, when there is one) and
    the ``problem`` alone, for a reader whose errors read otherwise (``path:line: ...``)."""

    def __init__(self, path: str | os.PathLike, problem: str, what: str = ""):
        self.path, self.problem = os.fspath(path), problem
        named = " ".join(x for x in (what, shown(path)) if x) or "input"
        super().__init__(f"{named}: {problem}")


def shown(path: str | os.PathLike) -> str:
    """``path`` as text a message can carry: a name that is not UTF-8 shows its bytes as
    ``\\xff`` (as a terminal would not), never as a lone surrogate no UTF-8 writer takes."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def utf8_name(path: str | os.PathLike, what: str = "") -> str:
    """``path``, whose name must be UTF-8: torch-prover writes the paths it is given into
    UTF-8 documents (a report's provenance, fix-tags' PR text, a JSON document), and a name
    holding other bytes cannot be written there -- so it is refused before any work, not
    found after it. InputError otherwise."""
    text = os.fspath(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(path, "the name is not UTF-8 (a byte that is not text): torch-prover "
                               "writes the paths it is given into UTF-8 reports; rename it",
                         what) from None
    return text


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words (for "--report X: is a FIFO")."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symlink"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read_bytes(path: str | os.PathLike, bound: Bound, what: str = "",
               follow: bool = True, head: int | None = None) -> bytes:
    """The bytes of ``path``, a regular file (after symlinks; ``follow=False``: a symlink is
    refused, as inside an evidence tree) of at most ``bound`` bytes; InputError otherwise,
    before anything is read. ``head``: only the first ``head`` bytes are read (and
    returned), the file still held to ``bound``. An empty path is refused as one (every
    command refuses an empty path; it is never "no file given")."""
    if not os.fspath(path):   # not "no such file": an empty argument is a usage slip
        raise InputError(path, "empty path", what)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags if follow else flags | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise InputError(path, "no such file", what) from None
    except OSError as exc:
        if not follow and exc.errno == errno.ELOOP:   # O_NOFOLLOW's answer to a symlink
            raise InputError(path, "is a symlink, not a regular file", what) from None
        raise InputError(path, f"cannot read it ({exc.strerror or exc})", what) from None
    except ValueError as exc:   # an embedded NUL
        raise InputError(path, f"cannot read it ({exc})", what) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(path, f"is {file_kind(st.st_mode)}, not a regular file", what)
        if st.st_size > bound.limit:
            raise InputError(path, f"{st.st_size} bytes, too large to be a {bound.noun} (at "
                                   f"most {bound.limit})", what)
        with os.fdopen(fd, "rb", buffering=0) as f:
            fd = None    # the file object closes it
            data = (_read_upto(f, st.st_size, bound.limit + 1) if head is None
                    else _read_upto(f, min(st.st_size, head), head))
    except OSError as exc:
        raise InputError(path, f"cannot read it ({exc.strerror or exc})", what) from None
    finally:
        if fd is not None:
            os.close(fd)
    if len(data) > bound.limit:
        raise InputError(path, f"grew past {bound.limit} bytes while read: too large to be a "
                               f"{bound.noun}", what)
    return data


def _read_upto(f, size: int, most: int) -> bytes:
    """At most ``most`` bytes of ``f``, its stated ``size`` first: ``read(n)`` allocates
    ``n`` bytes up front, so a bound-sized read would cost the bound (256 MiB for a report)
    for every few-kB file; a file that grows past its size is read on, a MiB at a time,
    until the bound."""
    chunks = [f.read(min(size + 1, most))]
    total = len(chunks[0])
    while chunks[-1] and total < most:
        chunks.append(f.read(min(2 ** 20, most - total)))
        total += len(chunks[-1])
    return b"".join(chunks)


def read_text(path: str | os.PathLike, bound: Bound, what: str = "",
              encoding: str = "utf-8") -> str:
    """``read_bytes`` decoded (universal newlines, as ``open`` reads text); InputError when
    the bytes are not ``encoding``."""
    data = read_bytes(path, bound, what)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 text (byte {exc.start}): not a {bound.noun}",
                         what) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")
