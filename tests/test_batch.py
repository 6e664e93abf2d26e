"""verify-all's engine: isolation of crashing / hanging / dying cases, cache, waivers."""
import json
import os
import time

import torch

import pytest

from torch_prover.batch import summary
from torch_prover.batch import cache, waivers
from torch_prover.output import batch_report
from torch_prover.batch.one_case import BatchOptions
from torch_prover.batch.pool import run_batch
from torch_prover.case import Case, Float
from torch_prover.cases import find_case
from torch_prover.output.coverage import coverage


def raises(x):
    raise ValueError("boom in the model")


def hangs(x):
    time.sleep(60)
    return x


def dies(x):
    os._exit(3)


def _bad(name, fn):
    return Case("Relu", name, fn, (Float(3),))


@pytest.fixture(autouse=True)
def _known_modules(monkeypatch):
    """Ad-hoc cases are not in a catalogue module; fingerprint them by this file."""
    real = cache.module_of
    monkeypatch.setattr(cache, "module_of",
                        lambda c: __name__ if c.name.startswith("bad_") else real(c))


def test_failures_are_isolated_and_the_batch_goes_on(tmp_path):
    cases = [_bad("bad_raises", raises), _bad("bad_hangs", hangs), _bad("bad_dies", dies),
             find_case("Reshape")]
    res = run_batch(cases, BatchOptions(jobs=2, timeout=12, out=tmp_path))
    by = {r["case"]: r for r in res.records}
    assert by["bad_raises"]["status"] == "error" and "boom in the model" in by["bad_raises"]["error"]
    # a hang or a dead worker is tried once more in a fresh worker, then is the case's
    # failure, typed (issue 28 finding 5: never a silent gap)
    assert by["bad_hangs"]["status"] == "error" and "timed out" in by["bad_hangs"]["error"]
    assert by["bad_dies"]["status"] == "error" and "worker died" in by["bad_dies"]["error"]
    assert (by["bad_hangs"]["failure"], by["bad_dies"]["failure"], by["bad_raises"]["failure"]
            ) == ("timed out", "worker died", "case error")
    assert "tried 2 times" in by["bad_hangs"]["error"] and "tried 2 times" in by["bad_dies"]["error"]
    assert by["reshape_basic"]["status"] == "proved"
    assert (tmp_path / "Reshape" / "reshape_basic" / "proof.json").exists()
    assert not list(tmp_path.glob("*/.*")), "no temporary directories left behind"


def test_a_worker_killed_once_is_retried_and_the_case_proved(tmp_path):
    """The out-of-memory killer takes a worker mid-case: the case is proved again in a
    fresh worker, and its record is the proof."""
    marker = tmp_path / "killed-once"

    def dies_once(x):
        if not marker.exists():
            marker.write_text("the first worker was killed here")
            os.kill(os.getpid(), 9)
        return torch.relu(x)
    res = run_batch([_bad("bad_dies_once", dies_once)], BatchOptions(jobs=1, timeout=60))
    (rec,) = res.records
    assert marker.exists() and rec["status"] == "proved", rec.get("error")


def test_cache_reuses_and_no_cache_recomputes(tmp_path):
    opts = BatchOptions(jobs=1, out=tmp_path / "m", cache_dir=tmp_path / "c", numeric=False)
    cases = [find_case("Floor")]
    first = run_batch(cases, opts)
    second = run_batch(cases, opts)
    assert first.cache_hits == 0 and second.cache_hits == 1
    assert first.records == second.records
    proof = tmp_path / "m" / "Floor" / "floor_basic" / "proof.json"
    stale = json.loads(proof.read_text())
    stale["status"] = "disagree"
    proof.write_text(json.dumps(stale))
    third = run_batch(cases, opts)       # evidence not current: recomputed and rewritten
    assert third.cache_hits == 0
    assert json.loads(proof.read_text()) == first.records[0]


def _disagreeing_records():
    rec = {"op": "Mod", "case": "mod_x", "status": "disagree", "parameters": [
        {"io": "input", "index": 1, "name": "B", "verdict": "disagree", "evidence": "grad",
         "rule": "both witnesses",
         "tag": "differentiable", "source": "b", "reason": "b requires grad but ..."}]}
    return [rec]


def test_waivers_match_and_stale_ones_are_reported(tmp_path):
    f = tmp_path / "w.toml"
    f.write_text('[[waiver]]\nop = "Mod"\nparameter = "B"\nreason = "known"\n\n'
                 '[[waiver]]\nop = "Abs"\nparameter = "input 0"\nreason = "fixed long ago"\n\n'
                 '[[waiver]]\nop = "LSTM"\nparameter = "initial_h"\nreason = "not run"\n')
    ws = waivers.load(f)
    records = _disagreeing_records() + [{"op": "Abs", "case": "abs_basic", "parameters": [
        {"io": "input", "index": 0, "name": "X", "verdict": "agree"}]}]
    waived, stale = waivers.apply(ws, records)
    assert list(waived) == [("Mod", "mod_x", "input", 1)]
    # Abs ran and showed no disagreement: stale; LSTM did not run: not judged
    assert [w.op for w in stale] == ["Abs"]


@pytest.mark.parametrize("text,needle", [
    ("[[waiver]]\nop = 'Mod'\n", "lacks parameter, reason"),
    ("not = [toml", "not valid TOML"),
    ("[[waiver]]\nop='A'\nparameter='B'\nreason='r'\ncolour='red'\n", "unknown key"),
])
def test_broken_waivers_file_is_one_line_error(tmp_path, text, needle):
    f = tmp_path / "w.toml"
    f.write_text(text)
    with pytest.raises(waivers.WaiverError) as e:
        waivers.load(f)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_batch_report_shape_and_markdown_order():
    recs = _disagreeing_records()
    recs[0].update(exporter="dynamo", opset=25, schema_version=13, latest_schema_version=13)
    recs.append({"op": "Abs", "case": "abs_basic", "status": "proved", "exporter": "dynamo",
                 "opset": 25, "latest_schema_version": 13, "parameters": [
                     {"io": "input", "index": 0, "name": "X", "verdict": "proposed",
                      "evidence": "grad", "tag": "unknown", "source": "x", "rule": "both witnesses",
                      "reason": "x received ... -> propose differentiable"}]})
    rep = summary.batch_report(recs, coverage(), 1.0)
    assert rep["format"] == 1 and len(rep["ops"]) == 203
    assert {o["op"]: o["status"] for o in rep["ops"]}["Mod"] == "disagrees"
    assert rep["summary"]["unwaived_disagreements"] == 1
    md = batch_report.batch_markdown(rep)
    assert md.index("## Disagreements") < md.index("## Proposed tags") < md.index("## Per-op")
    assert "torch-prover prove Mod --case mod_x" in md
    assert "`OpSchema::Differentiable`" in md


def _disk_full_for(monkeypatch, module, writer: str, where: str) -> None:
    """``module.writer(path, data)`` fails with ENOSPC for paths containing ``where``."""
    import errno
    real = getattr(module, writer)

    def full(path, data):
        if where in str(path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real(path, data)
    monkeypatch.setattr(module, writer, full)


def test_a_full_disk_fails_the_affected_cases_only(tmp_path, monkeypatch):
    """ENOSPC while writing one case's evidence: that case says why, the batch finishes,
    and nothing half-written is left (the workers are forked: they inherit the patch)."""
    from torch_prover.output import evidence
    _disk_full_for(monkeypatch, evidence, "_write_file", "floor_basic")
    out = tmp_path / "m"
    res = run_batch([find_case("Floor"), find_case("Reshape")],
                    BatchOptions(jobs=2, out=out, numeric=False))
    by = {r["case"]: r for r in res.records}
    assert by["floor_basic"]["status"] == "error"
    assert "No space left on device" in by["floor_basic"]["error"]
    assert by["reshape_basic"]["status"] == "proved"
    assert (out / "Reshape" / "reshape_basic" / "proof.json").exists()
    assert not (out / "Floor" / "floor_basic").exists()
    assert list(out.glob("*/.*")) == [], "a half-written temporary was left"


def test_a_cache_that_cannot_be_written_is_a_warning(tmp_path, monkeypatch):
    from torch_prover.output import evidence
    _disk_full_for(monkeypatch, evidence, "write_text", "cache")
    res = run_batch([find_case("Floor")], BatchOptions(jobs=1, cache_dir=tmp_path / "cache",
                                                        numeric=False))
    assert res.records[0]["status"] == "proved"
    assert len(res.warnings) == 1 and "No space left on device" in res.warnings[0]


@pytest.mark.parametrize("junk", ["[]", "{}", "null", '{"format": 1}', "not json"])
def test_a_damaged_cache_entry_is_a_miss(tmp_path, junk):
    opts = BatchOptions(jobs=1, cache_dir=tmp_path, numeric=False)
    case = find_case("Floor")
    (tmp_path / f"{cache.cache_key(case, opts)}.json").write_text(junk)
    res = run_batch([case], opts)
    assert res.cache_hits == 0 and res.records[0]["status"] == "proved"
    again = run_batch([case], opts)      # the entry was rewritten with a real record
    assert again.cache_hits == 1 and again.records == res.records


def test_the_cache_key_covers_every_source_a_verdict_depends_on():
    """Editing a shared catalogue helper (reference_ops.py, imported by other case modules)
    or the engine must invalidate cached verdicts: both are in the digest."""
    names = {p.relative_to(cache.PACKAGE_DIR).as_posix() for p in cache.source_files()}
    assert {"cases/reference_ops.py", "cases/__init__.py", "cases/reference.py", "case.py",
            "engine/rules/verdict.py", "engine/numeric/node_witness.py", "engine/numeric/isolate.py",
            "engine/numeric/measure.py", "tags/schema.py", "batch/pool.py", "batch/cache.py"} <= names
    assert names == {p.relative_to(cache.PACKAGE_DIR).as_posix()
                     for p in cache.PACKAGE_DIR.rglob("*.py")}   # every source file


def test_verify_all_is_one_library_call(tmp_path):
    """The batch without the CLI: ``verify.verify_all`` returns the report the CLI renders,
    with the exit code; the schema's tags (Relu X and Y differentiable) decide it."""
    from torch_prover.batch import verify
    outcome = verify.verify_all(verify.Request(ops="Relu", out=None, numeric=False))
    relu = [r for r in outcome.report["cases"] if r["op"] == "Relu"]
    assert relu and all(p["tag"] == "differentiable" and p["verdict"] == "agree"
                        for r in relu for p in r["parameters"])
    assert outcome.exit_code == 0 and not outcome.removed
    assert not list(tmp_path.iterdir())


def test_verify_all_refuses_before_any_work(monkeypatch):
    from torch_prover.batch import pool, verify
    from torch_prover.errors import UsageError

    def forbidden(*_a, **_k):
        raise AssertionError("work started before the request was checked")
    monkeypatch.setattr(pool, "run_batch", forbidden)
    with pytest.raises(UsageError, match="--jobs"):
        verify.prepare(verify.Request(ops="Relu", jobs=0))


def _flip_first_input(tags_of):
    """A tag source like ``tags_of`` whose Floor input 0 tag is flipped: what an ONNX
    branch build with a changed tag and the same version string reads."""
    import dataclasses

    def flipped(op, opset, domain):
        tags = tags_of(op, opset, domain)
        if op != "Floor":
            return tags
        first = tags.inputs[0]
        other = "differentiable" if first.tag == "non-differentiable" else "non-differentiable"
        return dataclasses.replace(tags, inputs=(dataclasses.replace(first, tag=other),)
                                   + tags.inputs[1:])
    return flipped


def test_the_cache_key_holds_the_tags_read_not_the_onnx_version(tmp_path, monkeypatch):
    """Same onnx version string, one tag changed in the tag source: the cached verdict is
    stale and must be a miss; the schema's new tag decides the fresh verdict."""
    from torch_prover.engine import prove as prove_mod
    opts = BatchOptions(jobs=1, cache_dir=tmp_path / "c", numeric=False)
    case = find_case("Floor")
    first = run_batch([case], opts)
    tag_before = first.records[0]["parameters"][0]["tag"]
    monkeypatch.setattr(prove_mod, "default_tags", _flip_first_input(prove_mod.default_tags))
    second = run_batch([case], opts)
    assert second.cache_hits == 0
    assert second.records[0]["parameters"][0]["tag"] != tag_before
    assert second.records[0]["parameters"][0]["verdict"] == "disagree"


def _warm(tmp_path):
    opts = BatchOptions(jobs=1, out=tmp_path / "m", cache_dir=tmp_path / "c", numeric=False)
    cases = [find_case("Floor")]
    first = run_batch(cases, opts)
    assert first.cache_hits == 0 and first.records[0]["status"] == "proved"
    return opts, cases, tmp_path / "m" / "Floor" / "floor_basic"


@pytest.mark.parametrize("damage", ["flip a byte of model.onnx", "truncate a .pb",
                                    "delete a .pb", "delete model.onnx"])
def test_damaged_evidence_is_rewritten_under_a_warm_cache(tmp_path, damage):
    """The cache holds the record; the evidence on disk must still be what was written,
    or the case is proved again and its directory rewritten (ours: a valid record of that
    very case and a subset of our files)."""
    opts, cases, d = _warm(tmp_path)
    written = {p.relative_to(d).as_posix(): p.read_bytes() for p in d.rglob("*") if p.is_file()}
    pb = d / "test_data_set_0" / "input_0.pb"
    if damage == "flip a byte of model.onnx":
        data = bytearray((d / "model.onnx").read_bytes())
        data[len(data) // 2] ^= 0x01
        (d / "model.onnx").write_bytes(bytes(data))
    elif damage == "truncate a .pb":
        pb.write_bytes(pb.read_bytes()[:-3])
    elif damage == "delete a .pb":
        pb.unlink()
    else:
        (d / "model.onnx").unlink()
    again = run_batch(cases, opts)
    assert again.cache_hits == 0, "damaged evidence was kept under a warm cache"
    assert again.records[0]["status"] == "proved"
    assert {p.relative_to(d).as_posix(): p.read_bytes()
            for p in d.rglob("*") if p.is_file()} == written
    assert run_batch(cases, opts).cache_hits == 1     # and the cache is warm again


@pytest.mark.parametrize("tamper", ["verdict", "tag", "status", "declared", "rule"])
def test_a_tampered_cache_entry_cannot_change_a_verdict(tmp_path, tamper):
    """An entry edited by hand (or written under other tags or rules) is a miss: the
    verdict comes from a fresh proof, whose tag is the schema's (Floor X: differentiable
    per onnx.defs, or whatever the installed schema says)."""
    from torch_prover.tags.schema import schema_tags
    opts = BatchOptions(jobs=1, cache_dir=tmp_path / "c", numeric=False)
    case = find_case("Floor")
    first = run_batch([case], opts)
    entry_path = next((tmp_path / "c").glob("*.json"))
    entry = json.loads(entry_path.read_text())
    rec = entry.get("record", entry)   # today: {"record", "files"}
    p = rec["parameters"][0]
    schema_tag = schema_tags("Floor", rec["opset"]).inputs[0].tag
    assert p["tag"] == schema_tag
    if tamper == "verdict":
        p["verdict"] = "disagree" if p["verdict"] != "disagree" else "agree"
    elif tamper == "tag":
        p["tag"] = "unknown" if p["tag"] != "unknown" else "differentiable"
    elif tamper == "status":
        rec["status"] = "failed" if rec["status"] != "failed" else "proved"
    elif tamper == "declared":
        p["expected"] = {"verdict": p["verdict"], "reason": "looks declared"}
    else:
        p["rule"] = "numeric witness only"
    entry_path.write_text(json.dumps(entry))
    again = run_batch([case], opts)
    assert again.cache_hits == 0
    assert again.records == first.records


@pytest.mark.parametrize("delay", [0.3, 1.2, 2.5])
def test_ctrl_c_in_the_warm_up_stops_the_batch(tmp_path, delay):
    """Ctrl-C (SIGINT to the whole process group) at moments around the workers' warm-up:
    the batch stops with exit 130 and one line, reports nothing, and leaves no worker."""
    import signal
    import subprocess
    import sys
    from conftest import _alive, _children
    p = subprocess.Popen(
        [sys.executable, "-m", "torch_prover", "verify-all", "--no-cache", "--jobs", "2",
         "--out", str(tmp_path / "m")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)
    first = p.stderr.readline()          # printed once the cases are chosen, before warm-up
    assert first.startswith("verify-all: 0/")
    time.sleep(delay)
    seen = _children(p.pid)
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, err[-500:]
    assert err.strip().splitlines()[-1].endswith(": interrupted") and "error" not in err
    assert out == ""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(w) for w in seen):
        time.sleep(0.2)
    assert not any(_alive(w) for w in seen)


def test_a_broken_case_is_cached_a_timeout_is_not(tmp_path):
    """A case whose export fails is as deterministic as a proof under the same key, so a
    warm rerun takes it from the cache (no exporter warm-up for it); a timeout may be the
    machine's, so it is tried again."""
    opts = BatchOptions(jobs=1, cache_dir=tmp_path / "c", numeric=False)
    broken = find_case("Relu").replace(name="relu_ts_at_25", exporter="torchscript", opset=25,
                                       variant_of="relu_basic")
    first = run_batch([broken], opts)
    assert first.records[0]["status"] == "error" and "__settled__" not in first.records[0]
    again = run_batch([broken], opts)
    assert again.cache_hits == 1 and again.records == first.records
    slow = Case("Relu", "relu_slow", lambda x: (time.sleep(30), torch.relu(x))[1], (Float(3),),
                variant_of="relu_basic")
    timed = BatchOptions(jobs=1, cache_dir=tmp_path / "t", numeric=False, timeout=3)
    assert run_batch([slow], timed).records[0]["status"] == "error"
    assert not list((tmp_path / "t").glob("*.json"))


def test_a_full_run_removes_the_evidence_of_a_case_that_no_longer_exports(tmp_path):
    """A variant whose export is now refused (a case error: the same every time) keeps no
    older evidence: a proof directory there would claim what the run no longer finds. A
    crash or a timeout (transient) is not a case error (batch/one_case.Failure)."""
    from torch_prover.batch.one_case import Failure, error_record
    from torch_prover.batch.verify import _evidence_kept
    from torch_prover.batch.versions import Selection, plan
    from torch_prover.cases import find_case
    case = find_case("Hardmax", "hardmax_axis0")
    variant = next(p.case for p in plan([case], Selection("all")) if p.case)
    refused = error_record(variant, "no adapter", Failure.CASE)
    crashed = error_record(variant, "worker died", Failure.CRASH)
    key = (variant.op, variant.name)
    assert key in _evidence_kept([crashed]) and key not in _evidence_kept([refused])


def test_every_failure_kind_of_a_failed_case_is_its_variants_kind():
    """A failed case's ``failure`` (one_case.Failure) decides its variant's kind
    (failures.Kind, whose comments say which): keyed on the enum, so a failure renamed in
    one place cannot fall through to "error" in the other. failures.py reads it without
    loading the engine."""
    import subprocess
    import sys
    from torch_prover.batch.failures import Kind, failure_of
    from torch_prover.batch.one_case import Failure, error_record
    from torch_prover.cases import find_case
    case = find_case("Relu", "relu_basic")
    want = {Failure.CASE: Kind.EXPORT, Failure.CRASH: Kind.CRASH, Failure.TIMEOUT: Kind.TIMEOUT,
            Failure.NO_TAGS: Kind.NO_TAGS, Failure.EVIDENCE: Kind.ERROR, Failure.BUG: Kind.ERROR}
    assert set(want) == set(Failure)
    for failure, kind in want.items():
        assert failure_of(error_record(case, "why", failure)) == (kind, "why"), failure
    loaded = subprocess.run([sys.executable, "-c", "import sys, torch_prover.batch.failures; "
                             "print('torch_prover.engine.prove' in sys.modules)"],
                            capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "False"


def _answers():
    return {"answer": [1, 2]}


def _fails():
    raise RuntimeError("the work beside the batch failed")


def _killed():
    os.kill(os.getpid(), 9)


@pytest.mark.parametrize("beside, expected", [(_answers, {"answer": [1, 2]}), (_fails, None),
                                              (_killed, None)])
def test_what_the_work_beside_the_batch_returns_reaches_the_parent(beside, expected):
    """ONNX's points are measured beside the batch (issue 43): what that process returns is
    the batch's ``beside``; when it raises or is killed it is None (the parent then does
    the work itself) and the batch's records are proved all the same."""
    res = run_batch([_bad("bad_raises", raises)], BatchOptions(jobs=2, timeout=30), beside)
    assert res.beside == expected
    assert res.records[0]["status"] == "error" and "boom" in res.records[0]["error"]


def tells_pid(x):
    raise ValueError(f"pid {os.getpid()}")


def test_a_worker_is_replaced_by_one_forked_while_it_proves_its_last_case(monkeypatch):
    """A worker is replaced after CASES_PER_WORKER cases by one forked while it proves the
    last of them (issue 43: no core idles through the fork); one that dies in that case is
    replaced the same way and the case is tried again; no process is left behind."""
    import multiprocessing
    from torch_prover.batch import pool
    monkeypatch.setattr(pool, "CASES_PER_WORKER", 2)
    cases = [_bad(f"bad_pid_{i}", tells_pid) for i in range(5)]
    res = run_batch(cases, BatchOptions(jobs=1, timeout=30))
    pids = [r["error"].rpartition("pid ")[2].split()[0] for r in res.records]
    assert pids[0] == pids[1] != pids[2] == pids[3] != pids[4] and len(set(pids)) == 3
    dying = [cases[0], _bad("bad_dies", dies), cases[2]]
    res = run_batch(dying, BatchOptions(jobs=1, timeout=30))
    assert [r["failure"] for r in res.records] == ["case error", "worker died", "case error"]
    assert "tried 2 times" in res.records[1]["error"]
    assert multiprocessing.active_children() == []
