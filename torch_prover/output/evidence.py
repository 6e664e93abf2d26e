"""The only module that writes or deletes a case directory of the evidence.

Layout is ONNX's node-test data layout, so standard ONNX tooling can load it::

    <out>/<Op>/<case>/model.onnx
    <out>/<Op>/<case>/test_data_set_0/input_<j>.pb, output_<j>.pb,
                                     grad_output_<j>.pb, grad_input_<j>.pb
    <out>/<Op>/<case>/proof.json

``grad_output_<j>.pb`` is the dy backpropagated into graph output ``j`` and
``grad_input_<j>.pb`` the gradient PyTorch gave graph input ``j`` for it, so the gradients
can be re-checked from the files alone; the record's ``test_data`` says which runtime
reproduces the outputs and how each output is checked (``engine/test_data.py``).

Do no harm (docs/design.md §4). ``--out`` may be any directory a user names, holding anything:

- A case directory is built under a temporary name (``.<case>.torch-prover-<random>``)
  beside its final place and swapped in with one ``renameat2(RENAME_EXCHANGE)``, so a
  reader sees the old evidence or the new, complete, at every instant. Where the file
  system cannot exchange, two renames are used and a crash between them is repaired by
  the next run (the old directory is put back).
- Nothing is deleted or replaced unless it is provably ours: a case directory holding
  only the files above, whose ``proof.json`` parses as one of our records for that very
  op and case; a temporary directory with our name pattern and only our files in it.
  Anything else -- a ``.git``, a note beside a ``proof.json`` -- is left alone, and a write
  that would replace it is refused.
- No symlink is followed out of ``--out``: an op or case directory that is a symlink is
  refused with a clear message (``OutputError``).
- Files get the user's normal permissions (umask), not ``mkstemp``'s private 0600.

Reproducible on any machine: a rewrite that changes nothing keeps the files on disk
(``evidence_data.same_evidence``); the index files beside the evidence are
``index_files.py``'s.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterable

import onnx
import onnx.helper
import onnx.numpy_helper
import torch

from ..errors import OutputError
from ..inputs import Bound, InputError, read_bytes
from ..engine import test_data
from ..engine.export import output_index
from ..engine.prove import Proof
from .evidence_data import same_evidence
from .ownership import Holds

OWN_ENTRIES = frozenset({"model.onnx", "proof.json", "test_data_set_0"})
_DATA_FILE = re.compile(test_data.DATA_FILE_PATTERN)
_TMP_TAG = ".torch-prover-"
_TMP_NAME = re.compile(r"^\.(?P<case>.+)\.torch-prover-(?P<old>old-)?[A-Za-z0-9_]+$")


# ----------------------------------------------------------------------------- permissions
def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _share(path: Path | int, mode: int) -> None:
    """Give a file (path or fd) the permissions ``open()`` would: ``mode & ~umask``."""
    if isinstance(path, int):
        os.fchmod(path, mode & ~_umask())
    else:
        os.chmod(path, mode & ~_umask())


# ----------------------------------------------------------------------------- writing
def write_text(path: Path, text: str, holds: Holds | None = None) -> None:
    """Write ``text`` to ``path`` as a commit of one file (``output/commit.py``: staged in
    a scratch directory beside it, renamed, swept by the next run if killed). An OSError
    names ``path``, the file the user asked for, never the temporary. ``holds``: an output
    the output rule guards, listed in its directory's manifest (``output/ownership.py``)."""
    from .commit import write_texts
    write_texts({Path(path): text}, {Path(path): holds} if holds is not None else None)


def dumps(record: Any) -> str:
    return json.dumps(record, indent=2, sort_keys=False) + "\n"


def case_dir(out: Path, proof: Proof) -> Path:
    return Path(out) / proof.op / proof.case.name


def check_case_dirs(out: Path, pairs: Iterable[tuple[str, str]]) -> None:
    """OutputError unless every op and case directory we would write is either absent or
    ours: never a symlink (writing through it would leave ``out``), never a directory
    holding files we did not write. verify-all calls it before any work."""
    out = Path(out)
    for op, case in pairs:
        for d in (out / op, out / op / case):
            if d.is_symlink():
                raise OutputError(f"{d} is a symlink; torch-prover never writes through a "
                                  "symlink out of the evidence directory: remove it or "
                                  "choose another --out")
            if d.exists() and not d.is_dir():
                raise OutputError(f"{d} exists and is not a directory; torch-prover will not "
                                  "replace it: move it or choose another --out")
        d = out / op / case
        why = why_not_ours(d, op, case) if d.exists() else None
        if why is not None:
            raise OutputError(f"{d} {why}; refusing to replace it: move it or choose "
                              "another --out")


def write_proof(out: Path, proof: Proof) -> Path:
    """Write the evidence of one proof; returns its directory."""
    final = case_dir(out, proof)
    check_case_dirs(out, [(proof.op, proof.case.name)])
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}{_TMP_TAG}", dir=final.parent))
    try:
        _share(tmp, 0o777)
        _fill(tmp, proof)
        if final.exists() and same_evidence(final, tmp):
            shutil.rmtree(tmp)    # current already: keep the files (and their mtimes)
        elif final.exists():
            _replace_dir(tmp, final)
        else:
            os.rename(tmp, final)
    except BaseException as exc:
        if tmp.exists() and not tmp.is_symlink():
            shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError) and str(tmp) in str(exc.filename or ""):
            # name the case directory asked for, not the temporary being filled
            raise OSError(exc.errno, exc.strerror or type(exc).__name__, str(final)) from exc
        raise
    return final


def _fill(d: Path, proof: Proof) -> None:
    _write_file(d / "model.onnx", proof.model_bytes)
    data = d / "test_data_set_0"
    data.mkdir()
    _share(data, 0o777)
    run = proof.probe.runs[0]
    names = proof.case.names
    for j, name in enumerate(proof.graph_inputs):
        i = names.index(name)
        _pb(data / test_data.input_file(j), run.inputs[i], name)
        grad = run.input_grads[i]
        if grad is not None:
            _pb(data / test_data.grad_input_file(j), grad, f"grad_{name}")
    for j, name in enumerate(proof.graph_outputs):
        k = output_index(name)
        _pb(data / test_data.output_file(j), run.outputs[k], name)
        if run.dy[k] is not None:
            _pb(data / test_data.grad_output_file(j), run.dy[k], f"dy_{name}")
    _write_file(d / "proof.json", dumps(proof.record()).encode("utf-8"))


def _write_file(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:   # open() applies the umask
        f.write(data)


def _pb(path: Path, tensor, name: str) -> None:
    tensor = tensor.detach().cpu()
    if tensor.dtype == torch.bfloat16:
        # numpy has no bfloat16: write the TensorProto from the raw bits (BitCast's output)
        proto = onnx.helper.make_tensor(name, onnx.TensorProto.BFLOAT16, tensor.shape,
                                        tensor.view(torch.int16).numpy().tobytes(), raw=True)
    else:
        proto = onnx.numpy_helper.from_array(tensor.numpy(), name)
    _write_file(path, proto.SerializeToString())


def evidence_digests(d: Path) -> dict[str, str]:
    """sha256 of every file of a case directory but proof.json (model.onnx and the data
    files), by relative path: what the cache stores beside a record, so evidence changed
    on disk under a warm cache is noticed (batch/cache.py: cache_check)."""
    import hashlib
    d = Path(d)
    found = {}
    for p in sorted(d.rglob("*")):
        if p.is_file() and p.name != "proof.json":
            found[p.relative_to(d).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return found


def replace_dir(new: Path, final: Path) -> None:
    """Put directory ``new`` in place of ``final`` (provably ours: the caller checked)."""
    _replace_dir(new, final)


def _replace_dir(new: Path, final: Path) -> None:
    """Put ``new`` in place of ``final`` (ours): one atomic exchange, or two renames."""
    from .commit import exchange
    if exchange(new, final):
        shutil.rmtree(new)        # now holds the old evidence
        return
    old = final.with_name(f".{final.name}{_TMP_TAG}old-{new.name.rsplit('-', 1)[-1]}")
    os.rename(final, old)         # a crash here is repaired by sweep_temporaries
    os.rename(new, final)
    shutil.rmtree(old)


# ----------------------------------------------------------------------------- ownership
def _only_our_files(d: Path) -> bool:
    """``d`` is a real directory holding nothing but evidence files (any subset)."""
    if d.is_symlink() or not d.is_dir():
        return False
    for entry in d.iterdir():
        if entry.name not in OWN_ENTRIES or entry.is_symlink():
            return False
        if entry.name == "test_data_set_0":
            if not entry.is_dir() or not all(
                    _DATA_FILE.match(f.name) and f.is_file() and not f.is_symlink()
                    for f in entry.iterdir()):
                return False
        elif not entry.is_file():
            return False
    return True


def is_record(rec: Any, op: str | None = None, case: str | None = None) -> bool:
    """``rec`` has a proof record's shape (of any format), for ``op``/``case`` if given:
    what makes a proof.json or a cache entry provably ours."""
    return (isinstance(rec, dict) and isinstance(rec.get("format"), int)
            and isinstance(rec.get("op"), str) and isinstance(rec.get("case"), str)
            and isinstance(rec.get("parameters"), list)
            and op in (None, rec["op"]) and case in (None, rec["case"]))


def read_record(path: Path) -> dict[str, Any] | None:
    """A proof record read from ``path``, or None when it is not one of ours."""
    try:
        rec = json.loads(read_bytes(path, Bound.RECORD, follow=False).decode("utf-8"))
    except (InputError, ValueError, RecursionError):
        return None
    return rec if is_record(rec) else None


def is_our_case_dir(d: Path, op: str, case: str) -> bool:
    """Evidence torch-prover wrote for exactly this op and case, and nothing else."""
    if not _only_our_files(d):
        return False
    return is_record(read_record(d / "proof.json"), op, case)


def why_not_ours(d: Path, op: str, case: str) -> str | None:
    """Why ``d`` is not provably our evidence of ``op``/``case``, in words (None: it is);
    the same rule as ``is_our_case_dir``, said precisely: a damaged record of ours is not
    a stranger's files."""
    if is_our_case_dir(d, op, case):
        return None
    if not _only_our_files(d):
        foreign = sorted(e.name for e in d.iterdir()
                         if e.name not in OWN_ENTRIES or e.is_symlink())
        return (f"holds {', '.join(foreign[:3])}, which torch-prover did not write" if foreign
                else "holds files torch-prover did not write")
    proof = d / "proof.json"
    if not proof.exists():
        return "has no proof.json, so nothing shows it is torch-prover's evidence"
    try:
        rec = json.loads(read_bytes(proof, Bound.RECORD, follow=False).decode("utf-8"))
    except (InputError, ValueError, RecursionError):
        return "has a damaged proof.json (not JSON): it cannot show it is torch-prover's"
    if not is_record(rec):
        return "has a proof.json that is not a torch-prover record"
    return f"has a proof.json that is the record of {rec['op']}/{rec['case']}"


def sweep_temporaries(out: Path, ops: Iterable[str]) -> list[Path]:
    """Remove our temporary directories left by a worker killed mid-write, in the op
    directories of ``ops`` only; put back old evidence a crash left half-replaced."""
    removed = []
    for op in sorted(set(ops)):
        op_dir = Path(out) / op
        if op_dir.is_symlink() or not op_dir.is_dir():
            continue
        for d in sorted(op_dir.iterdir()):
            m = _TMP_NAME.match(d.name)
            if not m or not _only_our_files(d):
                continue
            final = op_dir / m["case"]
            if m["old"] and not final.exists() and is_our_case_dir(d, op, m["case"]):
                os.rename(d, final)
                continue
            shutil.rmtree(d)
            removed.append(d)
    return removed


def prune(out: Path, keep: set[tuple[str, str]]) -> list[Path]:
    """Remove evidence of cases that no longer exist: only case directories that are
    provably ours (``is_our_case_dir``); never a symlink, a dot-directory or anything else."""
    removed = []
    out = Path(out)
    if not out.is_dir():
        return removed
    for op_dir in sorted(out.iterdir()):
        if op_dir.name.startswith(".") or op_dir.is_symlink() or not op_dir.is_dir():
            continue
        mine = []
        for d in sorted(op_dir.iterdir()):
            if d.name.startswith(".") or (op_dir.name, d.name) in keep:
                continue
            if is_our_case_dir(d, op_dir.name, d.name):
                shutil.rmtree(d)
                mine.append(d)
        removed += mine
        if mine and not any(op_dir.iterdir()):
            op_dir.rmdir()
    return removed
