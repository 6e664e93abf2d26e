"""All outputs of a command commit together (docs/safety.md, "What torch-prover writes and
deletes"): a kill at any instant leaves the old set of files or the new one, and no
temporary that outlives the next run.

A command's outputs in one directory (a report and its details file; fix-tags' patch, PR
text and evidence file; node-tests' kind directories and ``node-tests.json``; a single
file alike) are built in one hidden scratch directory beside them,
``.torch-prover-commit.<boot>.<pid>.<start>.<random>`` (named after the process that made
it, as ``output/scratch.py`` names fix-tags' copies), under ``new/<i>``. Then, holding an
exclusive ``flock`` on the directory:

1. the journal (``journal.json``: the final names, in order) is written and renamed into
   the scratch directory -- from that rename on, the new set is committed;
2. each final name in the journal's order: the old file or directory (if any) is renamed
   to ``old/<i>``, then ``new/<i>`` to the final name (an entry with nothing staged is a
   removal: only the first rename);
3. the journal is removed (the commit is done), then the scratch directory with the old
   files.

A file staged with what it holds (``text(..., holds=)``: a report, a patch, a script...) is
listed in the directory's manifest (``ownership.OUTPUTS``) with its digest; the manifest is
read, updated and staged as the last entry while the lock is held, so two commands
committing into one directory cannot drop each other's entries, and it is committed with
the files it lists (``ownership``: what makes such a file ours to replace next time).

A kill before step 1 leaves the old set and a scratch directory without a journal; after
it, a journal that ``recover`` (run by the next command writing there, before its checks:
``preflight.outputs_checked``) plays forward -- each step is skipped once done, so playing
it again is harmless -- and the new set is whole. Only scratch directories with exactly
that name, owned by this user, not symlinks, whose process is gone are touched; a live
command's is left alone, and the lock keeps two commits in one directory apart.

``TORCH_PROVER_TEST_STOP_AT=<step>`` makes a process stop itself (SIGSTOP) at a named step
(``staged``, ``journal``, ``moved:<name>``, ``placed:<name>``, ``committed``), so a test
can kill it there with -9 deterministically (tests/test_reliability_commit.py).
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Callable, Iterator

from .ownership import OUTPUTS, Holds, entry, outputs_text, read_outputs
from .scratch import leftovers, process_prefix

PURPOSE = "commit"
JOURNAL = "journal.json"
STOP_AT = "TORCH_PROVER_TEST_STOP_AT"


def _step(name: str) -> None:
    """The test hook (module docstring): stop here when asked to."""
    if os.environ.get(STOP_AT) == name:
        os.kill(os.getpid(), signal.SIGSTOP)


def umask() -> int:
    """The process's umask (read without changing it for good)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def _locked(parent: Path) -> Iterator[None]:
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _play(parent: Path, scratch: Path, names: list[str]) -> None:
    """Step 2 for every journal entry, each skipped once done (so a replay is harmless)."""
    for i, name in enumerate(names):
        try:
            _play_one(parent / name, scratch, i)
        except OSError as exc:   # name the output, never the scratch directory
            raise OSError(exc.errno, exc.strerror or type(exc).__name__,
                          str(parent / name)) from exc


def _play_one(final: Path, scratch: Path, i: int) -> None:
    name, new, old = final.name, scratch / "new" / str(i), scratch / "old" / str(i)
    if os.path.lexists(new):
        if os.path.lexists(final):
            os.rename(final, old)
            _step(f"moved:{name}")
        os.rename(new, final)
        _step(f"placed:{name}")
    elif not (scratch / "staged" / str(i)).exists() and not os.path.lexists(old) and \
            os.path.lexists(final):
        os.rename(final, old)   # a removal
        _step(f"placed:{name}")


def _undo(parent: Path, scratch: Path, names: list[str]) -> None:
    """A live commit whose step 2 failed: each entry undone in reverse (a placed file back
    to ``new/<i>``, the old one back in place), then the journal removed, so the old set
    stands and ``__exit__`` removes the scratch directory."""
    for i in reversed(range(len(names))):
        final, new, old = parent / names[i], scratch / "new" / str(i), scratch / "old" / str(i)
        if (scratch / "staged" / str(i)).exists() and not os.path.lexists(new) and \
                os.path.lexists(final):
            os.rename(final, new)
        if os.path.lexists(old) and not os.path.lexists(final):
            os.rename(old, final)
    (scratch / JOURNAL).unlink()


def _done(scratch: Path) -> None:
    """Step 3: the journal goes first (a replay of a half-removed scratch directory could
    otherwise take a placed file for a removal), then the rest."""
    (scratch / JOURNAL).unlink(missing_ok=True)
    _step("committed")
    shutil.rmtree(scratch)


def _journal(scratch: Path) -> list[str] | None:
    """The journal's names (None: no journal, or not one this module writes)."""
    try:
        names = json.loads((scratch / JOURNAL).read_text(encoding="utf-8"))["names"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    ok = isinstance(names, list) and all(
        isinstance(n, str) and n and "/" not in n and "\0" not in n and n not in (".", "..")
        for n in names)
    return names if ok else None


def recover(parent: str | os.PathLike) -> list[Path]:
    """Finish or undo the commits in ``parent`` whose process is gone (module docstring);
    returns the scratch directories removed. A directory that does not exist or cannot be
    read has nothing to recover."""
    parent = Path(parent)
    dead = leftovers(PURPOSE, parent, hidden=True)
    if not dead:
        return []
    with _locked(parent):
        for scratch in dead:
            names = _journal(scratch)
            if names is not None:
                _play(parent, scratch, names)
            _done(scratch)
    return dead


class Commit:
    """One command's outputs in ``parent``, staged then committed together (module
    docstring). Use as a context manager; ``commit()`` inside it, or nothing is changed."""

    def __init__(self, parent: str | os.PathLike):
        self.parent = Path(parent)
        self.parent.mkdir(parents=True, exist_ok=True)
        recover(self.parent)
        self.scratch = Path(tempfile.mkdtemp(prefix=process_prefix(PURPOSE, hidden=True),
                                             dir=self.parent))
        os.chmod(self.scratch, 0o700)
        (self.scratch / "new").mkdir()
        (self.scratch / "old").mkdir()
        (self.scratch / "staged").mkdir()
        self.names: list[str] = []
        self.finals: dict[Path, Path] = {}   # staged path -> the final path it becomes
        self.owned: dict[str, tuple[Holds, Path]] = {}   # name -> what it holds, staged path

    def __enter__(self) -> Commit:
        return self

    def __exit__(self, *exc: object) -> None:
        # with a journal the new set is committed: what is left is ``recover``'s to finish
        if self.scratch.exists() and not (self.scratch / JOURNAL).exists():
            shutil.rmtree(self.scratch, ignore_errors=True)

    def _slot(self, final: Path) -> Path:
        final = Path(final)
        if final.parent.resolve() != self.parent.resolve():
            raise ValueError(f"{final} is not in {self.parent}")
        if final.name in self.names:
            raise ValueError(f"{final.name} staged twice")
        self.names.append(final.name)
        return self.scratch / "new" / str(len(self.names) - 1)

    def stage(self, final: str | os.PathLike, fill: Callable[[Path], None]) -> Path:
        """Stage ``final`` (a file or a directory): ``fill(path)`` creates it at ``path``. An
        OSError while filling names the output (its path under ``final``), never the
        scratch directory; one naming another file (an input being read) is left as it is."""
        final = Path(final)
        slot = self._slot(final)
        self.finals[slot] = final
        try:
            fill(slot)
        except OSError as exc:
            raise self._named(exc, slot, final) from exc
        (self.scratch / "staged" / str(len(self.names) - 1)).touch()
        return slot

    def text(self, final: str | os.PathLike, text: str, holds: Holds | None = None) -> None:
        """Stage a text file (UTF-8), with the permissions ``open()`` gives; ``holds``: list
        it in the directory's manifest as holding that (module docstring)."""
        def fill(path: Path) -> None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(path, 0o666 & ~umask())
        slot = self.stage(final, fill)
        if holds is not None:
            self.owned[Path(final).name] = (holds, slot)

    def _list_owned(self) -> None:
        """Stage the directory's manifest with this commit's files in it (under the lock):
        the entries of files still there kept, those of files gone or replaced dropped."""
        path = self.parent / OUTPUTS
        files = read_outputs(self.parent)
        if files is None:   # preflight refused it before any work: it appeared since
            raise OSError(errno.EEXIST, "exists and is not torch-prover's manifest of its "
                                        "outputs; it is left alone", str(path))
        kept = {n: e for n, e in files.items()
                if n not in self.names and os.path.lexists(self.parent / n)}
        kept.update({n: entry(holds, slot) for n, (holds, slot) in self.owned.items()})
        self.text(path, outputs_text(kept))

    def remove(self, final: str | os.PathLike) -> None:
        """Remove ``final`` with the set (the caller proved it is ours)."""
        self._slot(Path(final))

    @staticmethod
    def _named(exc: OSError, slot: Path, final: Path) -> OSError:
        name = exc.filename
        if name is not None and not str(name).startswith(str(slot)):
            return exc   # another file: an input being read
        where = final if name is None else Path(str(final) + str(name)[len(str(slot)):])
        return OSError(exc.errno, exc.strerror or type(exc).__name__, str(where))

    def commit(self) -> None:
        """Steps 1-3 of the module docstring; an OSError names the output it concerns."""
        _step("staged")
        with _locked(self.parent):
            if self.owned:
                self._list_owned()
            tmp = self.scratch / (JOURNAL + ".tmp")
            tmp.write_text(json.dumps({"names": self.names}), encoding="utf-8")
            os.rename(tmp, self.scratch / JOURNAL)
            _step("journal")
            try:
                _play(self.parent, self.scratch, self.names)
            except OSError:   # alive (a full disk): put the old set back, commit nothing
                _undo(self.parent, self.scratch, self.names)
                raise
            _done(self.scratch)


def write_texts(files: dict[Path, str], holds: dict[Path, Holds] | None = None) -> None:
    """Files of one directory written together (all or none): ``{path: text}``; ``holds``:
    what each output holds, listed in the directory's manifest (``Commit.text``)."""
    paths = list(files)
    parents = {Path(p).parent for p in paths}
    if len(parents) != 1:
        raise ValueError("write_texts: one directory at a time")
    with Commit(parents.pop()) as c:
        for path, text in files.items():
            c.text(path, text, (holds or {}).get(path))
        c.commit()
