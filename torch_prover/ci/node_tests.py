"""``node-tests MODELS -o OUT``: an evidence tree in the layout ONNX's backend test loader
reads (``onnx.backend.test.loader.load_model_tests(data_dir=OUT, kind=KIND)``).

ONNX's loader takes ``<data_dir>/<kind>/<test name>/model.onnx`` and, beside it,
``test_data_set_*/input_<i>.pb`` and ``output_<i>.pb``; its runner refuses a test whose
name does not start with ``test_`` and compares with ``rtol=1e-3, atol=1e-7`` (a
``data.json`` could change them: none is written, ONNX's defaults hold). So each evidence
directory ``<Op>/<case>`` becomes ``OUT/<kind>/test_<case>`` (``@N`` of a variant becomes
``_opsetN``), with ``model.onnx`` and its ``input_``/``output_`` files *copied*: a hard
link would let a write into OUT change the committed evidence, a symlink would lead a
user out of OUT into models/. The gradients (``grad_input_*``, ``grad_output_*``) are not
part of ONNX's format: its runner counts ``input_*.pb`` and ``output_*.pb`` by glob, which
they do not match, and ignores them; they are left out so no reader can mistake them.

The kind is the runtime the directory's own record names as reproducing its outputs
(``test_data.runtime``): ``onnxruntime``, or ``onnx-reference`` where onnxruntime lacks the
op, the opset or the kernel. A directory whose outputs no runtime can reproduce -- no
runtime ran it, its runtime did not reproduce PyTorch's outputs (a forward mismatch: the
proof failed), or an output is a random draw or a declared mismatch -- is not written: it
is *explained*, with its record's reason. One whose files do not match its record (the
model's sha256, missing data) is *refused*. Nothing is guessed: every reason is a field
of the record.

A record whose runtime ran a float32 copy (``test_data.copy``: onnxruntime has no float64
kernel for its version, ``engine/float32_copy.py``) becomes the test ONNX's runner can run:
the float32 copy derived from ``model.onnx`` (the proof's own function), its float64
inputs and outputs written as float32, and a ``data.json`` giving the loader the record's
forward bound as ``atol`` (``numeric.forward_bound``: what the proof and check-evidence
compare within; ONNX's default rtol stays). ``kind="node"`` is not usable: ONNX's loader answers it with ONNX's own
node tests, whatever ``data_dir`` says.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass
from ..compat import StrEnum
from pathlib import Path
from typing import Any

from ..engine import test_data
from ..output.evidence import read_record, replace_dir, write_text
from ..vocab import OutputCheck, Runtime

MANIFEST = "node-tests.json"
DATA_JSON = "data.json"
"""Beside a test's model.onnx: the tolerances ONNX's loader reads (a float32 copy's)."""
KIND_OF = {Runtime.ONNXRUNTIME: "onnxruntime", Runtime.REFERENCE: "onnx-reference"}
"""The record's runtime -> the loader's kind directory."""
KINDS = tuple(KIND_OF.values())
_OUR_DATA = re.compile(r"^(input|output)_\d+\.pb$")
_TMP = ".torch-prover-"


class Status(StrEnum):
    WRITTEN = "written"
    EXPLAINED = "explained"   # the record says no runtime reproduces its outputs
    REFUSED = "refused"       # the files do not show what the record claims


class Why(StrEnum):
    """Why a directory was not written (each read from its record or its files)."""
    NO_RECORD = "no torch-prover record"
    FAILED_CASE = "the record is a failed case"
    NO_TEST_DATA = "the record has no test_data"
    NO_RUNTIME = "the record names no runtime"
    NOT_COMPARED = "an output is not compared"
    FORWARD = "the record's runtime does not reproduce its outputs"
    MODEL_MISMATCH = "model.onnx is not the record's model"
    DATA = "test data missing or not regular files"
    NO_COPY = "the record runs a float32 copy the model cannot have"


@dataclass(frozen=True)
class Entry:
    """One evidence directory and what node-tests makes of it."""
    source: str                 # relative to MODELS
    status: Status
    detail: str                 # the record's reason (explained, refused), or its runtime's why
    why: Why | None = None
    kind: str | None = None     # loader kind (written)
    name: str | None = None     # test name (written)
    record: dict | None = None
    atol: float | None = None   # written as a float32 copy: the record's forward bound

    def as_json(self) -> dict[str, Any]:
        r = self.record or {}
        return {"source": self.source, "status": self.status, "why": self.why,
                "detail": self.detail, "kind": self.kind, "name": self.name,
                "op": r.get("op"), "case": r.get("case"), "opset": r.get("opset"),
                "schema_version": r.get("schema_version"),
                **({"copy": "float32"} if self.atol is not None else {})}


def test_name(case: str) -> str:
    """``test_<case>``, a Python identifier (the runner makes it a method name)."""
    return "test_" + re.sub(r"[^0-9A-Za-z_]", "_", case.replace("@", "_opset"))


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def judge(d: Path, root: Path) -> Entry:
    """What node-tests does with evidence directory ``d``: from its record, then its files."""
    rel = d.relative_to(root).as_posix() if d != root else d.name
    rec = read_record(d / "proof.json") if _regular(d / "proof.json") else None
    if rec is None:
        return Entry(rel, Status.EXPLAINED, "proof.json missing or not a proof record",
                     Why.NO_RECORD)
    if rec.get("status") == "error":
        return Entry(rel, Status.EXPLAINED, str(rec.get("error")), Why.FAILED_CASE, record=rec)
    data = rec.get("test_data")
    if not isinstance(data, dict) or not isinstance(data.get("outputs"), list):
        return Entry(rel, Status.EXPLAINED, "written by an older torch-prover: rerun verify-all",
                     Why.NO_TEST_DATA, record=rec)
    if data.get("runtime") not in KIND_OF:
        return Entry(rel, Status.EXPLAINED, str(data.get("why")), Why.NO_RUNTIME, record=rec)
    other = [o for o in data["outputs"] if o.get("check") != OutputCheck.COMPARE]
    if other:
        return Entry(rel, Status.EXPLAINED, "; ".join(
            f"{o.get('file')}: {o.get('check')} ({o.get('reason')})" for o in other),
            Why.NOT_COMPARED, record=rec)
    num = rec.get("numeric") or {}
    if num.get("forward_ok") is False:   # a failed proof: PyTorch's outputs, another function
        ran = "onnxruntime's float32 copy" if data.get("copy") else data["runtime"]
        return Entry(rel, Status.EXPLAINED, f"forward mismatch in {ran}: "
                                            f"{num.get('forward_detail')}", Why.FORWARD,
                     record=rec)
    model = d / "model.onnx"
    if not _regular(model) or hashlib.sha256(model.read_bytes()).hexdigest() != \
            rec.get("model", {}).get("sha256"):
        return Entry(rel, Status.REFUSED, "model.onnx is missing, not a regular file, or its "
                                          "sha256 is not the record's", Why.MODEL_MISMATCH,
                     record=rec)
    problem = _data_problem(d, model, len(data["outputs"]))
    if problem:
        return Entry(rel, Status.REFUSED, problem, Why.DATA, record=rec)
    runtime = Runtime(data["runtime"])
    detail = data.get("why") or f"the record's runtime: {runtime}"
    atol = None
    if data.get("copy") == "float32":
        atol = _copy_bound(d, data)
        if atol is None:
            return Entry(rel, Status.REFUSED, "no float32 copy of model.onnx runs in "
                                              "onnxruntime", Why.NO_COPY, record=rec)
        why = ((rec.get("numeric") or {}).get("copy") or {}).get("why") or "a float32 copy"
        detail = f"written as its float32 copy, atol {atol:.3g} (the record's bound): {why}"
    return Entry(rel, Status.WRITTEN, detail, kind=KIND_OF[runtime],
                 name=test_name(rec["case"]), record=rec, atol=atol)


def _copy_bound(d: Path, data: dict[str, Any]) -> float | None:
    """The record's forward bound over its compared outputs, when model.onnx has a float32
    copy (None: it has none -- a record claiming one for a model that cannot)."""
    import onnx
    from ..engine.float32_copy import CopyError, float32_copy
    from ..engine.numeric import forward_bound
    from ..output.evidence import load_pb
    try:
        float32_copy(onnx.load_model_from_string((d / "model.onnx").read_bytes()))
    except CopyError:   # model.onnx is the record's (its sha256 was checked): it loads
        return None
    outputs = [load_pb(d / "test_data_set_0" / o["file"]) for o in data["outputs"]]
    return forward_bound(float(data.get("fwd_tol") or 0.0), outputs)


def _data_problem(d: Path, model: Path, outputs: int) -> str | None:
    """Why the test data cannot make a test (None: one input file per graph input, one
    output file per output the record checks, every one a regular file)."""
    import onnx
    graph = onnx.load_model_from_string(model.read_bytes()).graph
    files = d / "test_data_set_0"
    want = ([test_data.input_file(j) for j in range(len(graph.input))]
            + [test_data.output_file(j) for j in range(outputs)])
    missing = [n for n in want if not _regular(files / n)]
    return f"test_data_set_0: {', '.join(missing)} missing or not regular files" \
        if missing else None


def _is_ours(kind_dir: Path) -> bool:
    """A kind directory node-tests wrote: test_* directories holding only model.onnx (and a
    float32 copy's data.json) and test_data_set_0/{input,output}_N.pb, no symlink anywhere."""
    if kind_dir.is_symlink() or not kind_dir.is_dir():
        return False
    for t in kind_dir.iterdir():
        if t.is_symlink() or not t.is_dir() or not t.name.startswith("test_"):
            return False
        for e in t.iterdir():
            if e.is_symlink():
                return False
            if e.name in ("model.onnx", DATA_JSON) and e.is_file():
                continue
            if e.name != "test_data_set_0" or not e.is_dir() or not all(
                    f.is_file() and not f.is_symlink() and _OUR_DATA.match(f.name)
                    for f in e.iterdir()):
                return False
    return True


def _manifest_is_ours(path: Path) -> bool:
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("kind") == "node-tests"
    except (OSError, ValueError, AttributeError):
        return False


def not_ours(out: Path) -> str | None:
    """Why node-tests may not write into ``out`` (None: every entry it would replace is
    absent or its own)."""
    for kind in KINDS:
        d = out / kind
        if os.path.lexists(d) and not _is_ours(d):
            return (f"{d} exists and is not a node-tests tree (a symlink, or it holds files "
                    "node-tests did not write); move it or choose another -o")
    m = out / MANIFEST
    if os.path.lexists(m) and (m.is_symlink() or not m.is_file() or not _manifest_is_ours(m)):
        return f"{m} exists and was not written by node-tests; move it or choose another -o"
    return None


def write(models: Path, out: Path, entries: list[Entry]) -> None:
    """Each kind directory built beside its place and swapped in whole; a kind with no
    test left is removed (it is ours: ``not_ours`` said so before any work)."""
    out.mkdir(parents=True, exist_ok=True)
    for kind in KINDS:
        mine = [e for e in entries if e.status is Status.WRITTEN and e.kind == kind]
        final = out / kind
        if not mine:
            if final.is_dir() and _is_ours(final):
                shutil.rmtree(final)
            continue
        tmp = Path(tempfile.mkdtemp(prefix=f".{kind}{_TMP}", dir=out))
        try:
            os.chmod(tmp, 0o777 & ~_umask())
            for e in mine:
                if e.atol is None:
                    _copy_test(models / e.source, tmp / str(e.name))
                else:
                    _float32_test(models / e.source, tmp / str(e.name), e.atol)
            if final.exists():
                replace_dir(tmp, final)
            else:
                os.rename(tmp, final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _copy_test(src: Path, dst: Path) -> None:
    """model.onnx and test_data_set_0/{input,output}_N.pb, copied (never linked)."""
    (dst / "test_data_set_0").mkdir(parents=True)
    shutil.copyfile(src / "model.onnx", dst / "model.onnx", follow_symlinks=False)
    for f in sorted((src / "test_data_set_0").iterdir()):
        if _OUR_DATA.match(f.name) and _regular(f):
            shutil.copyfile(f, dst / "test_data_set_0" / f.name, follow_symlinks=False)


def _float32_test(src: Path, dst: Path, atol: float) -> None:
    """The float32 copy of model.onnx, the float64 data as float32, and data.json's atol."""
    import onnx
    from onnx import numpy_helper
    from ..engine.float32_copy import float32_copy, to_float32
    (dst / "test_data_set_0").mkdir(parents=True)
    model = float32_copy(onnx.load_model_from_string((src / "model.onnx").read_bytes()))
    (dst / "model.onnx").write_bytes(model.SerializeToString(deterministic=True))
    for f in sorted((src / "test_data_set_0").iterdir()):
        if _OUR_DATA.match(f.name) and _regular(f):
            t = onnx.TensorProto()
            t.ParseFromString(f.read_bytes())
            value = numpy_helper.from_array(to_float32(numpy_helper.to_array(t)), t.name)
            (dst / "test_data_set_0" / f.name).write_bytes(value.SerializeToString())
    (dst / DATA_JSON).write_text(json.dumps({"atol": atol}) + "\n", encoding="utf-8")


def write_manifest(out: Path, doc: dict[str, Any]) -> None:
    from ..output.evidence import dumps
    write_text(out / MANIFEST, dumps(doc))
