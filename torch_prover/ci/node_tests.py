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
is *explained*, with its record's reason. One with no record, a record that does not
re-derive (its test_data is not its numeric check's, a verdict not its witnesses': the
re-check check-evidence makes), or files that do not match its record (the model's sha256,
missing data) is *refused*. Nothing is guessed: every reason is a field of a re-checked
record.

OUT's kind directories are node-tests' only while the last run's ``node-tests.json`` lists
each with the digest of its tree (ownership by manifest, ``ownership.listed``: ONNX's own
backend-test data has the same shape), and the kinds and the manifest are one commit
(``output/commit.py``; docs/safety.md).

A record whose runtime ran a float32 copy (``test_data.copy``: onnxruntime has no float64
kernel for its version, ``engine/versions/float32_copy.py``) becomes the test ONNX's runner can run:
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
import stat
from dataclasses import dataclass
from ..compat import StrEnum
from pathlib import Path
from typing import Any, Callable

from ..engine import test_data
from ..inputs import Bound, read_bytes
from ..vocab import OutputCheck, Runtime

MANIFEST = "node-tests.json"
DATA_JSON = "data.json"
"""Beside a test's model.onnx: the tolerances ONNX's loader reads (a float32 copy's)."""
KIND_OF = {Runtime.ONNXRUNTIME: "onnxruntime", Runtime.REFERENCE: "onnx-reference"}
"""The record's runtime -> the loader's kind directory."""
KINDS = tuple(KIND_OF.values())
_OUR_DATA = re.compile(r"^(input|output)_\d+\.pb$")


class Status(StrEnum):
    WRITTEN = "written"
    EXPLAINED = "explained"   # the record says no runtime reproduces its outputs
    REFUSED = "refused"       # the files do not show what the record claims


class Why(StrEnum):
    """Why a directory was not written (each read from its record or its files)."""
    NO_RECORD = "no torch-prover record"
    RECORD = "the record does not re-derive"
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
    source: str                 # relative to MODELS (its name, when MODELS is the directory)
    where: Path                 # the directory itself
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


def judge(d: Path, root: Path, rec: dict[str, Any] | None) -> Entry:
    """What node-tests does with evidence directory ``d``: from its record, re-checked as
    check-evidence re-checks it (``report_io.evidence_record_problem``: its test_data
    re-derived from its numeric check and model.onnx, its verdicts from its witnesses),
    then its files. No record, or one that does not re-derive, is refused, never explained.
    ``rec``: ``d``'s record as ``check_evidence.read_records`` read it (None: none)."""
    import onnx
    from ..batch.report_io import evidence_record_problem
    from ..output.check_evidence import NOT_RECHECKED, OLDER, older
    rel = d.relative_to(root).as_posix() if d != root else d.name

    def entry(status: Status, detail: str, why: Why | None, **kw: Any) -> Entry:
        return Entry(rel, d, status, detail, why, **kw)

    if rec is None:
        return entry(Status.REFUSED, "no proof.json: nothing says what these files show",
                     Why.NO_RECORD)
    if older(rec):
        return entry(Status.EXPLAINED, OLDER, Why.NO_TEST_DATA, record=rec)
    if rec["kind"] == "failed-case":
        why = evidence_record_problem(rec, None)
        if why is not None and not why.startswith(NOT_RECHECKED):
            return entry(Status.REFUSED, f"proof.json: {why}", Why.RECORD, record=rec)
        return entry(Status.EXPLAINED, rec["error"], Why.FAILED_CASE, record=rec)
    model = d / "model.onnx"
    model_bytes = read_bytes(model, Bound.EVIDENCE, follow=False) if _regular(model) else b""
    if hashlib.sha256(model_bytes).hexdigest() != rec["model"]["sha256"]:
        return entry(Status.REFUSED, "model.onnx is missing, not a regular file, or its "
                                     "sha256 is not the record's", Why.MODEL_MISMATCH,
                     record=rec)
    proto = onnx.load_model_from_string(model_bytes)   # parsed once: every check below reads it
    why = evidence_record_problem(rec, proto)
    if why is not None and not why.startswith(NOT_RECHECKED):
        return entry(Status.REFUSED, f"proof.json: {why}", Why.RECORD, record=rec)
    data = rec["test_data"]
    if data["runtime"] not in KIND_OF:
        return entry(Status.EXPLAINED, str(data["why"]), Why.NO_RUNTIME, record=rec)
    other = [o for o in data["outputs"] if o["check"] != OutputCheck.COMPARE]
    if other:
        return entry(Status.EXPLAINED, "; ".join(
            f"{o['file']}: {o['check']} ({o['reason']})" for o in other),
            Why.NOT_COMPARED, record=rec)
    num = rec["numeric"] or {}
    if num.get("forward_ok") is False:   # a failed proof: PyTorch's outputs, another function
        ran = "onnxruntime's float32 copy" if data.get("copy") else data["runtime"]
        return entry(Status.EXPLAINED, f"forward mismatch in {ran}: "
                                       f"{num.get('forward_detail')}", Why.FORWARD, record=rec)
    problem = _data_problem(d, proto.graph, len(data["outputs"]))
    if problem:
        return entry(Status.REFUSED, problem, Why.DATA, record=rec)
    runtime = Runtime(data["runtime"])
    detail = data.get("why") or f"the record's runtime: {runtime}"
    atol = None
    if data.get("copy") == "float32":
        atol = _copy_bound(d, data, proto)
        if atol is None:
            return entry(Status.REFUSED, "no float32 copy of model.onnx runs in onnxruntime",
                         Why.NO_COPY, record=rec)
        why = ((rec.get("numeric") or {}).get("copy") or {}).get("why") or "a float32 copy"
        detail = f"written as its float32 copy, atol {atol:.3g} (the record's bound): {why}"
    return entry(Status.WRITTEN, detail, None, kind=KIND_OF[runtime],
                 name=test_name(rec["case"]), record=rec, atol=atol)


def _copy_bound(d: Path, data: dict[str, Any], model: Any) -> float | None:
    """The record's forward bound over its compared outputs, when ``model`` (d's
    model.onnx, parsed) has a float32 copy (None: it has none -- a record claiming one for a
    model that cannot)."""
    from ..engine.versions.float32_copy import CopyError, float32_copy
    from ..engine.numeric.numeric import forward_bound
    from ..output.evidence_data import load_pb
    try:
        float32_copy(model)
    except CopyError:
        return None
    outputs = [load_pb(d / "test_data_set_0" / o["file"]) for o in data["outputs"]]
    return forward_bound(float(data.get("fwd_tol") or 0.0), outputs)


def _data_problem(d: Path, graph: Any, outputs: int) -> str | None:
    """Why the test data cannot make a test (None: one input file per graph input of
    ``graph``, d's model's, one output file per output the record checks, every one a
    regular file)."""
    files = d / "test_data_set_0"
    want = ([test_data.input_file(j) for j in range(len(graph.input))]
            + [test_data.output_file(j) for j in range(outputs)])
    missing = [n for n in want if not _regular(files / n)]
    return f"test_data_set_0: {', '.join(missing)} missing or not regular files" \
        if missing else None


def _manifest(out: Path) -> dict[str, Any] | None:
    """OUT's node-tests.json, when it is one node-tests wrote (None: absent or not)."""
    path = out / MANIFEST
    if not stat.S_ISREG(_lstat_mode(path)):
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("kind") == "node-tests" else None


def _lstat_mode(path: Path) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


def not_ours(out: Path) -> str | None:
    """Why node-tests may not write into ``out`` (None: every entry it would replace or
    remove is absent or listed, with its digest, in the last run's manifest: ownership by
    manifest, ``ownership.listed``)."""
    from ..output.ownership import listed
    m = out / MANIFEST
    manifest = _manifest(out)
    if os.path.lexists(m) and manifest is None:
        return f"{m} exists and was not written by node-tests; move it or choose another -o"
    written = (manifest or {}).get("written")
    for kind in KINDS:
        d = out / kind
        if os.path.lexists(d) and not listed(d, written if isinstance(written, dict) else None):
            return (f"{d} exists and is not what node-tests last wrote there ({MANIFEST} "
                    "does not list it with its contents); move it or choose another -o")
    return None


def write(out: Path, entries: list[Entry], manifest: Callable[[dict[str, str]], str]) -> None:
    """Every kind directory and the manifest, committed together (``output/commit.py``); a
    kind with no test left is removed (it is ours: ``not_ours`` said so before any work).
    ``manifest``: the digests of the kind directories written -> node-tests.json's text."""
    from ..output.commit import Commit
    from ..output.ownership import digest
    written: dict[str, str] = {}
    with Commit(out) as c:
        for kind in KINDS:
            mine = [e for e in entries if e.status is Status.WRITTEN and e.kind == kind]
            if not mine:
                if os.path.lexists(out / kind):
                    c.remove(out / kind)
                continue
            slot = c.stage(out / kind, lambda tmp, mine=mine: _fill(tmp, mine))
            written[kind] = str(digest(slot))
        c.text(out / MANIFEST, manifest(written))
        c.commit()


def _fill(tmp: Path, mine: list[Entry]) -> None:
    from ..output.commit import umask
    tmp.mkdir()
    os.chmod(tmp, 0o777 & ~umask())
    for e in mine:
        if e.atol is None:
            _copy_test(e.where, tmp / str(e.name))
        else:
            _float32_test(e.where, tmp / str(e.name), e.atol)


def _copy(src: Path, dst: Path) -> None:
    """Copy one file (never linked); a failed write names ``dst``, a failed read ``src``
    (``shutil.copyfile``'s error names the source whichever failed)."""
    data = src.read_bytes()
    _write(dst, data)


def _write(dst: Path, data: bytes) -> None:
    try:
        with open(dst, "wb") as f:
            f.write(data)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or type(exc).__name__, str(dst)) from exc


def _copy_test(src: Path, dst: Path) -> None:
    """model.onnx and test_data_set_0/{input,output}_N.pb, copied (never linked)."""
    (dst / "test_data_set_0").mkdir(parents=True)
    _copy(src / "model.onnx", dst / "model.onnx")
    for f in sorted((src / "test_data_set_0").iterdir()):
        if _OUR_DATA.match(f.name) and _regular(f):
            _copy(f, dst / "test_data_set_0" / f.name)


def _float32_test(src: Path, dst: Path, atol: float) -> None:
    """The float32 copy of model.onnx, the float64 data as float32, and data.json's atol."""
    import onnx
    from onnx import numpy_helper
    from ..engine.versions.float32_copy import float32_copy, to_float32
    (dst / "test_data_set_0").mkdir(parents=True)
    model = float32_copy(onnx.load_model_from_string((src / "model.onnx").read_bytes()))
    _write(dst / "model.onnx", model.SerializeToString(deterministic=True))
    for f in sorted((src / "test_data_set_0").iterdir()):
        if _OUR_DATA.match(f.name) and _regular(f):
            t = onnx.TensorProto()
            t.ParseFromString(f.read_bytes())
            value = numpy_helper.from_array(to_float32(numpy_helper.to_array(t)), t.name)
            _write(dst / "test_data_set_0" / f.name, value.SerializeToString())
    _write(dst / DATA_JSON, (json.dumps({"atol": atol}) + "\n").encode("utf-8"))
