"""All outputs of a command commit together (docs/safety.md, "What torch-prover writes and
deletes"): a kill at any instant leaves the old set of files or the new one, and no
temporary that outlives the next run.

A command's outputs in one directory (a report and its details file; fix-tags' patch, PR
text and evidence file; node-tests' kind directories and ``node-tests.json``; a single
file alike) are built in one hidden scratch directory beside them,
``.torch-prover-commit.<boot>.<pid>.<start>.<random>`` (named after the process that made
it, as ``output/scratch.py`` names fix-tags' copies), under ``new/<i>``. Then, holding an
exclusive ``flock`` on the directory:

1. the journal (``journal.json``: the final names, in order, the digest of what is at each
   now and of what replaces it, and the directory's device and inode) is written and
   renamed into the scratch directory -- from that rename on, the new set is committed;
2. each final name in the journal's order: ``new/<i>`` and the old file or directory are
   exchanged in one ``renameat2(RENAME_EXCHANGE)`` -- the name never stands empty, even
   between a kill and the next command -- and the old one is moved to ``old/<i>`` (an
   entry with nothing staged is a removal: the old one is moved there alone; where the
   filesystem has no exchange, two renames);
3. the journal is removed (the commit is done), then the scratch directory with the old
   files.

A file staged with what it holds (``text(..., holds=)``: a report, a patch, a script...) is
listed in the directory's manifest (``ownership.OUTPUTS``) with its digest; the manifest is
read, updated and staged as the last entry while the lock is held, so two commands
committing into one directory cannot drop each other's entries, and it is committed with
the files it lists (``ownership``: what makes such a file ours to replace next time).

A kill before step 1 leaves the old set and a scratch directory without a journal; after
it, each name holds its old file or its new one, and a journal that ``recover`` (run by
the next command writing there, before its checks: ``preflight.outputs_checked``) plays
forward -- an entry whose name already holds the new file is skipped, so playing it again
is harmless -- and the new set is whole. A name is moved only while it still holds what
the journal recorded (the old file, by digest): one that holds anything else -- the report
you edited after the kill -- stops the replay before anything moves, naming it. A journal
made on another boot or in another directory (a restored CI cache, a copied tree) is never
replayed: it stops the command the same way. Only scratch directories with exactly that
name, owned by this user, not symlinks, whose process is gone are touched; a live
command's is left alone, and the lock keeps two commits in one directory apart.

``TORCH_PROVER_TEST_STOP_AT=<step>`` makes a process stop itself (SIGSTOP) at a named step
(``staged``, ``journal``, ``moved:<name>``, ``placed:<name>``, ``committed``), so a test
can kill it there with -9 deterministically (tests/test_reliability_commit.py) -- when
``TORCH_PROVER_TEST_HOOKS=1`` is set as well, which only tests/conftest.py does.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import shutil
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ..errors import OutputError
from ..inputs import Bound, InputError, read_bytes
from .ownership import OUTPUTS, Holds, digest, entry, outputs_text, read_outputs
from .scratch import boot_id, leftovers, process_prefix, scratch_boot

PURPOSE = "commit"
JOURNAL = "journal.json"
JOURNAL_FORMAT = 2
STOP_AT = "TORCH_PROVER_TEST_STOP_AT"
TEST_HOOKS = "TORCH_PROVER_TEST_HOOKS"


def _step(name: str) -> None:
    """The test hook (module docstring): stop here when asked to -- only in a process whose
    environment also holds ``TEST_HOOKS=1``, which tests/conftest.py alone sets: a
    ``TORCH_PROVER_TEST_STOP_AT`` left in a shell or a CI job stops nothing."""
    if os.environ.get(STOP_AT) == name and os.environ.get(TEST_HOOKS) == "1":
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


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange(a: Path, b: Path) -> bool:
    """Swap two existing entries (files or directories) atomically -- Linux
    ``renameat2(RENAME_EXCHANGE)``: a reader of either name sees one or the other, never
    nothing. False where the kernel or the filesystem lacks it (nothing was done)."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _swap(new: Path, final: Path, old: Path) -> None:
    """``new`` into ``final``'s place and the old ``final`` into ``old``: one exchange (the
    name is never absent), or two renames where there is none."""
    if exchange(new, final):
        _step(f"placed:{final.name}")
        os.rename(new, old)
        _step(f"moved:{final.name}")
    else:
        os.rename(final, old)
        _step(f"moved:{final.name}")
        os.rename(new, final)
        _step(f"placed:{final.name}")


ABSENT = "absent"
UNLISTABLE = "not a file or directory torch-prover writes"


def state(path: Path) -> str:
    """What is at ``path`` now, as a journal records it: absent, the sha256 of a file or a
    tree (``ownership.digest``), or anything else (a symlink, a FIFO)."""
    if not os.path.lexists(path):
        return ABSENT
    return digest(path) or UNLISTABLE


@dataclass(frozen=True)
class Journal:
    """What a commit recorded before its first move: each final name, what was there
    (``old``) and what it places there (``new``; None: a removal), and the directory it was
    made in (device, inode): a scratch directory copied elsewhere is not this one's."""

    names: tuple[str, ...]
    old: tuple[str, ...]
    new: tuple[str | None, ...]
    parent: tuple[int, int]

    def text(self) -> str:
        return json.dumps({"format": JOURNAL_FORMAT, "names": list(self.names),
                           "old": list(self.old), "new": list(self.new),
                           "parent": list(self.parent)})


def _parent_id(parent: Path) -> tuple[int, int]:
    st = os.stat(parent)
    return st.st_dev, st.st_ino


def _journal(scratch: Path) -> Journal | None:
    """The journal of ``scratch`` (None: not one this module writes, or unreadable)."""
    try:
        doc = json.loads(read_bytes(scratch / JOURNAL, Bound.RECORD, follow=False))
        j = Journal(tuple(doc["names"]), tuple(doc["old"]), tuple(doc["new"]),
                    tuple(doc["parent"]))
    except (InputError, ValueError, KeyError, TypeError, RecursionError):
        return None
    ok = doc.get("format") == JOURNAL_FORMAT and len(j.names) == len(j.old) == len(j.new) \
        and len(j.parent) == 2 and all(isinstance(x, int) for x in j.parent) and all(
            isinstance(n, str) and n and "/" not in n and "\0" not in n and n not in (".", "..")
            for n in j.names) and all(isinstance(x, str) for x in j.old) and all(
            x is None or isinstance(x, str) for x in j.new)
    return j if ok else None


def _play(parent: Path, scratch: Path, journal: Journal) -> None:
    """Step 2 for every journal entry (a live commit: nothing moved yet)."""
    for i, name in enumerate(journal.names):
        final, new, old = parent / name, scratch / "new" / str(i), scratch / "old" / str(i)
        try:
            if journal.new[i] is None:
                if os.path.lexists(final):   # a removal
                    os.rename(final, old)
                _step(f"placed:{name}")
            elif os.path.lexists(final):
                _swap(new, final, old)
            else:
                os.rename(new, final)
                _step(f"placed:{name}")
        except OSError as exc:   # name the output, never the scratch directory
            raise OSError(exc.errno, exc.strerror or type(exc).__name__, str(final)) from exc


def _undo(parent: Path, scratch: Path, journal: Journal) -> None:
    """A live commit whose step 2 failed: each entry undone in reverse (the placed file
    back to ``new/<i>``, the old one back in place), then the journal removed, so the old
    set stands and ``__exit__`` removes the scratch directory."""
    for i in reversed(range(len(journal.names))):
        final, new, old = (parent / journal.names[i], scratch / "new" / str(i),
                           scratch / "old" / str(i))
        if os.path.lexists(new) and os.path.lexists(final) and journal.new[i] is not None \
                and not os.path.lexists(old) and journal.old[i] != ABSENT:
            if state(new) != journal.new[i]:   # exchanged, not yet moved aside
                os.rename(new, old)
        if journal.new[i] is not None and not os.path.lexists(new) and os.path.lexists(final):
            os.rename(final, new)
        if os.path.lexists(old) and not os.path.lexists(final):
            os.rename(old, final)
    (scratch / JOURNAL).unlink()


def _replay(parent: Path, scratch: Path, journal: Journal) -> None:
    """A dead process's journal played forward -- only where each final name still holds
    what the journal recorded there (the old file, or the new one already placed); one that
    holds anything else (you edited the report you saw after the kill) stops the replay
    before anything moves, naming it (OutputError): nothing of yours is replaced."""
    for i, name in enumerate(journal.names):
        now = state(parent / name)
        moved_aside = now == ABSENT and os.path.lexists(scratch / "old" / str(i))
        if now not in (journal.old[i], journal.new[i] or ABSENT) and not moved_aside:
            raise OutputError(
                f"{parent / name}: changed since a killed torch-prover run recorded it in "
                f"{scratch} (its unfinished commit of {', '.join(journal.names)}); nothing is "
                "replayed over it: keep what you need of that directory (new/: what the run "
                "wrote) and remove it")
    for i, name in enumerate(journal.names):
        final, new, old = parent / name, scratch / "new" / str(i), scratch / "old" / str(i)
        now = state(final)
        if now == (journal.new[i] or ABSENT):
            continue   # placed (or removed) before the kill
        if journal.new[i] is None:
            os.rename(final, old)
        elif now == ABSENT:
            os.rename(new, final)
        else:
            _swap(new, final, old)


def _done(scratch: Path) -> None:
    """Step 3: the journal goes first (a replay of a half-removed scratch directory could
    otherwise take a placed file for a removal), then the rest."""
    (scratch / JOURNAL).unlink(missing_ok=True)
    _step("committed")
    shutil.rmtree(scratch)


def _foreign(parent: Path, scratch: Path, journal: Journal | None) -> str | None:
    """Why a dead commit's scratch directory is not this directory's to replay (None: it
    is): made on another boot (a CI cache, a copied tree), or in another directory, or its
    journal is not one this torch-prover can check."""
    if journal is None:
        return "its journal is not one this torch-prover writes"
    if scratch_boot(scratch) != boot_id():
        return "it was made on another boot (a restored cache, a copied tree)"
    if tuple(journal.parent) != _parent_id(parent):
        return "it was made in another directory (a copied tree)"
    return None


def recover(parent: str | os.PathLike) -> list[Path]:
    """Finish the commits in ``parent`` whose process is gone (module docstring); returns
    the scratch directories removed. One without a journal is removed (nothing was moved);
    one whose journal is foreign (``_foreign``) or no longer matches what is there
    (``_replay``) stops with an OutputError naming it, everything left as it is. A directory
    that does not exist or cannot be read has nothing to recover."""
    parent = Path(parent)
    dead = leftovers(PURPOSE, parent, hidden=True)
    if not dead:
        return []
    with _locked(parent):
        for scratch in dead:
            if os.path.lexists(scratch / JOURNAL):
                journal = _journal(scratch)
                why = _foreign(parent, scratch, journal)
                if why is not None:
                    raise OutputError(
                        f"{scratch}: an unfinished torch-prover commit that is not replayed "
                        f"here: {why}; keep what you need of it (new/: what that run wrote, "
                        "old/: what it had moved aside) and remove it")
                _replay(parent, scratch, journal)
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
            staged = self.scratch / "staged"
            journal = Journal(
                tuple(self.names), tuple(state(self.parent / n) for n in self.names),
                tuple(state(self.scratch / "new" / str(i)) if (staged / str(i)).exists()
                      else None for i in range(len(self.names))),
                _parent_id(self.parent))
            tmp = self.scratch / (JOURNAL + ".tmp")
            tmp.write_text(journal.text(), encoding="utf-8")
            os.rename(tmp, self.scratch / JOURNAL)
            _step("journal")
            try:
                _play(self.parent, self.scratch, journal)
            except OSError:   # alive (a full disk): put the old set back, commit nothing
                _undo(self.parent, self.scratch, journal)
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
