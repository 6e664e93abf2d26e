"""Reliability round 6 (issue 42), problems 1, 2, 4, 5, 8 and 10: what torch-prover reads
(a file a script left, the cache's store of ONNX's node tests, a checkout's model), empty
paths, a standard output that is not UTF-8, and the cost of a waivers file
(docs/safety.md, "What torch-prover reads").

Expectations come from outside the code under test: the files each test plants (a FIFO, a
symlink to /dev/zero, an ``.npy`` header the test writes, a model whose tensor lives in
/etc/passwd), the memory a process may use, what the docs promise.
"""
from __future__ import annotations

import io
import json
import os
import resource
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import onnx
import onnx.helper as h
import pytest
from cli_lines import deadline, one_line_exit_2
from test_reliability_run import RELU_METHOD1, write

from torch_prover import cli
from torch_prover.engine.onnx_points import source, store
from torch_prover.vocab import PointsSkip

ROOT = Path(__file__).resolve().parent.parent
TOOL = Path(sys.executable).parent / "torch-prover"


# --------------------------------------------------------------------- problem 1: `run`
@pytest.mark.parametrize("swap", ["fifo", "dev-zero"])
def test_problem_01_run_never_reads_what_the_script_left_unbounded(tmp_path, swap):
    """The script exports relu.onnx, then leaves a FIFO (no writer) or a symlink to
    /dev/zero there: the proof ends (exit 0) with a warning naming the file, within the
    time and memory one proof takes -- the file was read back whole (21.7 GB from
    /dev/zero) or forever (the FIFO), after ``--timeout`` no longer applied."""
    leave = ('os.mkfifo("relu.onnx")' if swap == "fifo"
             else 'os.symlink("/dev/zero", "relu.onnx")')
    script = write(tmp_path, "swap.py", RELU_METHOD1 + f"""\
    import os
    os.remove("relu.onnx")
    {leave}
    """)

    def limited():   # far above one proof's ~2 GB address space, far below /dev/zero's
        resource.setrlimit(resource.RLIMIT_AS, (16 * 2 ** 30, 16 * 2 ** 30))

    r = subprocess.run([str(TOOL), "run", str(script), "--no-numeric"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300, preexec_fn=limited)
    assert r.returncode == 0, r.stderr[-2000:]
    kind = "a FIFO" if swap == "fifo" else "a character device"
    assert f"relu.onnx cannot be read back (is {kind}, not a regular file)" in r.stderr, \
        r.stderr


# --------------------------------------------------- problem 2: the store of ONNX's tests
def _npy(x: np.ndarray) -> bytes:
    f = io.BytesIO()
    np.save(f, x)
    return f.getvalue()


def _store(path: Path, members: dict[str, bytes], compress: int = zipfile.ZIP_STORED) -> Path:
    """A store file as ``np.savez`` lays it out: one ``<key>.npy`` member per array."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=compress) as z:
        for key, data in members.items():
            z.writestr(f"{key}.npy", data)
    return path


def _one_test(model: bytes) -> dict[str, bytes]:
    """A store holding one node test with ``model`` as its model's bytes."""
    index = [{"name": "test_relu", "op": "Relu", "opset": 14, "version": 14, "rtol": 1e-3,
              "atol": 1e-7, "sets": [[1, 1]], "encoded": {}}]
    x = np.ones((2,), np.float32)
    return {"index": _npy(np.frombuffer(json.dumps(index).encode(), np.uint8)),
            "m0": _npy(np.frombuffer(model, np.uint8)), "i0_0_0": _npy(x), "o0_0_0": _npy(x)}


def test_problem_02_a_store_whose_model_is_not_a_model_is_a_miss(tmp_path):
    """An index entry whose bytes are not an ONNX model: a miss (None: collected again),
    not a DecodeError later, outside the load's checks (exit 3)."""
    good = h.make_model(h.make_graph([h.make_node("Relu", ["x"], ["y"])], "g", [], []))
    assert len(store._load(_store(tmp_path / "good.npz", _one_test(
        good.SerializeToString())))) == 1   # the same layout with a model is read
    assert store._load(_store(tmp_path / "bad.npz", _one_test(b"\xff" * 64))) is None


def test_problem_02_an_npy_header_declaring_8_tib_is_a_miss(tmp_path):
    """A member whose header declares 8 TiB of float64 (its body a few bytes): a miss,
    before anything is allocated -- not a MemoryError (exit 3)."""
    members = _one_test(b"")
    header = b"{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }"
    header += b" " * (63 - (10 + len(header)) % 64) + b"\n"
    members["i0_0_0"] = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + b"x"
    assert store._load(_store(tmp_path / "huge.npz", members)) is None


BOMB = """
import resource, sys
from pathlib import Path
from torch_prover.engine.onnx_points import store
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
loaded = store._load(Path(sys.argv[1]))
print(loaded is None, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""


def test_problem_02_a_deflated_bomb_is_a_miss_in_little_memory(tmp_path):
    """A member of 1 GiB of zeros deflated to ~1 MB (over the store's 256 MiB bound): a
    miss, read no further than its headers -- the load grows the process by far less than
    the member's size (it used to inflate it whole: 6.4 GB RSS for a 3 GiB member)."""
    path = _store(tmp_path / "bomb.npz", _one_test(b""), zipfile.ZIP_DEFLATED)
    head = _npy(np.zeros(0, np.uint8)).replace(b"(0,)", b"(1073741824,)").replace(
        b" " * 9 + b"\n", b"\n")   # numpy's own header, its length unchanged
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as z, \
            z.open("i1_0_0.npy", "w", force_zip64=True) as member:   # streamed: no 1 GiB here
        member.write(head)
        for _ in range(1024):
            member.write(bytes(2 ** 20))
    assert path.stat().st_size < 4 * 2 ** 20
    r = subprocess.run([sys.executable, "-c", BOMB, str(path)], capture_output=True,
                       text=True, timeout=300)
    miss, grown_mib = r.stdout.split()
    assert miss == "True" and int(grown_mib) < 100, (r.stdout, r.stderr[-800:])


# ------------------------------------------------ problem 4: a checkout's external data
@pytest.mark.parametrize("location", ["/etc/passwd", "../../../../../../etc/passwd",
                                      "shadow-link"])
def test_problem_04_a_checkouts_model_with_external_data_is_unreadable(tmp_path, location):
    """A PR's ``model.onnx`` whose initializer lives in an external file (an absolute path,
    ``../..``, a symlink to /etc/shadow): that test is skipped as unreadable, its external
    data never read -- not a ValidationError ending the whole gate run (exit 3)."""
    node_dir = tmp_path / source.NODE_DATA / "test_add_external"
    (node_dir / "test_data_set_0").mkdir(parents=True)
    w = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=[1],
                         data_location=onnx.TensorProto.EXTERNAL)
    w.external_data.add(key="location", value=location)
    graph = h.make_graph([h.make_node("Add", ["x", "w"], ["y"])], "g",
                         [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
                         [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])], [w])
    (node_dir / "model.onnx").write_bytes(h.make_model(graph).SerializeToString())
    if location == "shadow-link":
        os.symlink("/etc/shadow", node_dir / "shadow-link")
    (found,) = source.from_checkout(tmp_path)
    assert isinstance(found, source.Skipped) and found.reason == PointsSkip.UNREADABLE
    assert "external" in found.detail


# -------------------------------------------------------------- problem 5: empty paths
@pytest.mark.parametrize("argv, what", [
    (["fix-tags", "--onnx-src", "ONNX", "--report", "", "-o", "OUT/x.patch"], "--report"),
    (["verify-all", "--ops", "Relu", "--waivers", "", "--no-cache"], "--waivers"),
    (["check-evidence", ""], "DIR"),
    (["node-tests", "", "-o", "OUT/nt"], "MODELS"),
    (["run", ""], "SCRIPT"),
])
def test_problem_05_an_empty_path_is_refused_never_taken_as_none(tmp_path, capsys, argv,
                                                                  what):
    """``''`` given for a path is refused in one line, exit 2, before any work -- it was
    read as "no report" (fix-tags then ran its own verify-all, minutes), "no waivers", or
    the current directory."""
    from fix_report import SRC
    argv = [a.replace("ONNX", str(SRC)).replace("OUT", str(tmp_path)) for a in argv]
    os.chdir(tmp_path)
    try:
        with deadline(60):
            code = cli.main(argv)
    finally:
        os.chdir(ROOT)
    one_line_exit_2(capsys, code, f"{what}: empty path")


# -------------------------------------------------- problem 8: a stdout that is not UTF-8
def test_problem_08_a_stdout_that_is_not_utf8_is_no_internal_error(tmp_path):
    """``PYTHONIOENCODING=ascii``: verify-all's summary ends with an em dash; it is written
    escaped (``\\u2014``), exit 0 -- it was an internal error (exit 3)."""
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    r = subprocess.run([str(TOOL), "verify-all", "--ops", "Relu", "--cache-dir",
                        str(tmp_path / "cache"), "--no-numeric"], cwd=tmp_path, env=env,
                       capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode("ascii", "replace")[-1500:]
    assert r.stdout.decode("ascii").rstrip().endswith("\\u2014 exit 0")


# ------------------------------------------------------- problem 10: waivers in linear time
def test_problem_10_waivers_read_onnx_defs_once_whatever_their_number(monkeypatch):
    """10,000 waivers are checked against one reading of onnx.defs' schemas (each waiver:
    set lookups) -- each waiver read them all again (~21 ms each: 10,000 took over 200 s).
    The timing itself is scripts/benchmark.py's (``waivers``)."""
    import onnx.defs

    from torch_prover.batch import waivers
    real, calls = onnx.defs.get_all_schemas_with_history, []
    monkeypatch.setattr(onnx.defs, "get_all_schemas_with_history",
                        lambda: calls.append(1) or real())
    many = [waivers.Waiver("Mod", "input 1", f"reason {i}") for i in range(10_000)]
    waivers.check(many, {})
    assert len(calls) == 1
    with pytest.raises(waivers.WaiverError, match="Mod has no parameter 'input 7'"):
        waivers.check(many + [waivers.Waiver("Mod", "input 7", "r")], {})
    records = [{"op": "Mod", "case": f"c{i}", "parameters": [
        {"io": "input", "index": 1, "name": "B", "verdict": "disagree"}]} for i in range(50)]
    waived, stale = waivers.apply(many, records)
    assert len(waived) == 50 and len(stale) == 10_000 - 1
