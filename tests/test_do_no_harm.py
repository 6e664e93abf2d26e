"""Do no harm: verify-all touches only what it can prove is its own, and leaves no process.

One real run of the whole catalogue, as a user would start it, into an output directory
that already holds other people's things (a ``.git`` inside an op folder, a folder with a
``proof.json`` beside a note, a symlinked case directory pointing outside). First the run
is killed with SIGKILL mid-batch (no worker may survive it), then run to completion. The
fresh evidence it writes is also what test_models_current compares byte for byte with the
committed models/.
"""
from __future__ import annotations

import json

from torch_prover.cases import all_cases


def test_no_worker_outlives_a_killed_verify_all(full_run):
    assert full_run["workers"], "the killed run had started no worker"
    assert full_run["written_before_kill"] >= 10, "the run was not killed mid-batch"
    assert full_run["survivors"] == [], "workers still alive 10 s after SIGKILL of the parent"


def test_a_killed_run_touches_nothing_of_others(full_run):
    assert full_run["after_kill"] == full_run["before"]


def test_a_full_run_touches_nothing_of_others(full_run):
    assert full_run["exit"] == 0, full_run["stderr"][-2000:]
    assert full_run["after_full"] == full_run["before"]
    traps = full_run["traps"]
    assert traps["link"].is_symlink() and traps["git"].exists()


def test_a_full_run_completes_every_case_and_leaves_no_temporaries(full_run):
    out = full_run["out"]
    for case in all_cases():
        rec = json.loads((out / case.op / case.name / "proof.json").read_text())
        assert rec["case"] == case.name and rec["status"] != "error", rec.get("error")
    leftovers = [p for p in out.glob("*/.*") if p.name != ".git"]
    assert leftovers == [], "temporaries left by the killed run were not swept"


def test_evidence_of_a_removed_case_is_pruned_and_nothing_else(full_run):
    assert not full_run["retired"].exists(), "our own evidence of a removed case stays"
    assert full_run["traps"]["notes_proof"].exists()
