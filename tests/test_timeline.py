"""The opt-in timeline of a run (``TORCH_PROVER_TIMINGS=1``, batch/timeline.py): what
docs/performance.md reads a cold run's serial parts from. Off, nothing is printed; on, every
stage of a verify-all is on stderr, in the order the run does them, and stdout is unchanged."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time

from torch_prover.batch import timeline


def test_off_it_records_and_prints_nothing(monkeypatch):
    monkeypatch.setattr(timeline, "ON", False)
    monkeypatch.setattr(timeline, "_events", [])
    timeline.mark("anything")
    out = io.StringIO()
    timeline.emit(out)
    assert out.getvalue() == "" and timeline._events == []


def test_on_it_prints_events_in_time_order_since_the_process_started(monkeypatch):
    monkeypatch.setattr(timeline, "ON", True)
    monkeypatch.setattr(timeline, "_events", [])
    now = time.time()
    timeline.mark("second")
    timeline.mark("first, from another process", at=now - 0.5, cpu_s=1.25, pid=1)
    out = io.StringIO()
    timeline.emit(out)
    lines = out.getvalue().splitlines()
    assert [line.split("  ")[-1] for line in lines][:2] == ["first, from another process",
                                                            "second"]
    assert lines[-1].endswith(")") and "exit (children's CPU" in lines[-1]
    assert "cpu   1.25 s" in lines[0] and lines[0].split()[6] == "1"
    since = float(lines[1].split()[1])   # this test process started before `now`
    assert 0 < since < time.time() - timeline.started() + 1


def test_a_verify_all_prints_its_stages_in_order(tmp_path):
    env = {**os.environ, timeline.ENV: "1"}
    p = subprocess.run(
        [sys.executable, "-m", "torch_prover", "verify-all", "--ops", "Relu", "--jobs", "2",
         "--cache-dir", str(tmp_path / "c"), "--out", str(tmp_path / "m"), "--format", "json",
         "--quiet"], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-800:]
    assert json.loads(p.stdout)["kind"]   # stdout is the report alone
    lines = [line for line in p.stderr.splitlines() if line.startswith("timeline: ")]
    what = [line.split("  ")[-1] for line in lines]
    order = ["command line parsed", "ONNX's tests: process", "verify-all: prepared",
             "warm-up: start", "warm-up: end",
             "worker: first case", "worker: last case", "workers: reaped", "batch: end",
             "ONNX's points: measured", "verify-all: report written", "exit"]
    # the tests built from the start (batch/points_early.py) are written once the selection
    # is checked, and the process beside the batch is done only after they are
    early = ["verify-all: prepared", "ONNX's tests: written ahead", "beside the batch: done"]
    for stages in (order, early):
        at = [next(i for i, w in enumerate(what) if w.startswith(o)) for o in stages]
        assert at == sorted(at), what
    wall = [float(line.split()[1]) for line in lines]
    assert wall == sorted(wall) and 0 <= wall[0] and wall[-1] < 600
