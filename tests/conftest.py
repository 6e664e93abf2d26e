"""Shared fixtures: proofs are cached per session because each costs an export."""
from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from torch_prover.cases import all_cases
from torch_prover.pr.reap import processes
from torch_prover.engine.prove import Proof, prove_case


# Text is wrapped to the terminal's width, COLUMNS first (cli/outputs.terminal_width): every
# command the suite runs, in process or as a subprocess, prints at the width the docs'
# examples show, whatever shell ran pytest.
os.environ["COLUMNS"] = "100"
os.environ.pop("LINES", None)

# The kill tests' hook (output/commit.py: TORCH_PROVER_TEST_STOP_AT) is honoured only where
# this is set too -- in the suite and the processes it starts, never in a user's shell.
os.environ["TORCH_PROVER_TEST_HOOKS"] = "1"


# ----------------------------------------------------------------------------- two workers
SHARED_RUNS = {"full_run": ("full_run", "versions_run"), "real_report": ("real_report",)}
"""The session fixtures that run verify-all, by the group of tests that share them."""


def _group(item) -> str:
    """A test's group: of the run it needs (its fixtures, or the ``shared_run`` mark of a
    test that asks for the run through ``request.getfixturevalue``), else its file."""
    needs = set(item.fixturenames) | {m.args[0] for m in item.iter_markers("shared_run")}
    return next((g for g, names in SHARED_RUNS.items() if set(names) & needs),
                item.nodeid.split("::", 1)[0])


def pytest_configure(config):
    """The README's command runs on two pytest-xdist workers (pyproject's addopts: ``-n 2
    --dist loadgroup``). A session fixture is made once per worker, so the tests are handed
    out by group (``_GroupScheduling``): every test that needs one of the SHARED_RUNS goes to
    the worker of its group, each run is made once; every other test goes with its file, so
    a module-scoped fixture is made once too. The groups come from the workers' collection
    (a test's fixtures are known there only), through a folder the controller makes."""
    config.addinivalue_line("markers", "shared_run(fixture): the test asks for that session "
                            "run through request.getfixturevalue (its group: _group)")
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput") \
            and config.getoption("dist") == "loadgroup" and config.getoption("numprocesses"):
        import tempfile
        config._test_groups = tempfile.TemporaryDirectory(prefix="torch-prover-groups-")
        config.option.loadscopereorder = False   # the collection's order: the full run first


def pytest_unconfigure(config):
    folder = getattr(config, "_test_groups", None)
    if folder is not None:
        folder.cleanup()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    folder = getattr(node.config, "_test_groups", None)
    if folder is not None:
        node.workerinput["test_groups"] = folder.name


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    folder = getattr(config, "_test_groups", None)
    if folder is None:
        return None
    from xdist.scheduler import LoadScopeScheduling

    class _GroupScheduling(LoadScopeScheduling):
        """xdist's load-by-scope, a scope being a test's group (pytest-xdist 3.8's own
        ``xdist_group`` mark renames node ids, which pytest 9 no longer allows)."""
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:   # written by every worker before its collection is sent
                self.groups = json.loads(min(Path(folder.name).glob("*.json")).read_text())
            return self.groups[nodeid]
    return _GroupScheduling(config, log)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """On an xdist worker: the full run's group first (the longest: the kill-and-rerun,
    then the all-versions run; the other worker takes the rest meanwhile), and each test's
    group written where the controller's scheduler reads it."""
    folder = getattr(config, "workerinput", {}).get("test_groups")
    if folder is None:
        return
    groups = {item.nodeid: _group(item) for item in items}
    items.sort(key=lambda item: groups[item.nodeid] != "full_run")   # stable: else as collected
    path = Path(folder) / f"{config.workerinput['workerid']}.json"
    part = path.with_suffix(".part")
    part.write_text(json.dumps(groups))
    part.replace(path)


@pytest.fixture(autouse=True)
def _json_contract(monkeypatch):
    """Every JSON document the suite makes torch-prover print or write (through
    ``report.to_json``: stdout; ``evidence.dumps``: proof.json, index.json) validates
    against the shipped schema its ``kind`` names. Documents written in forked workers are
    checked where they land (the full run's report and evidence, test_json_contract.py)."""
    from json_contract import problems
    from torch_prover.output import evidence, report
    found: list[str] = []
    for module, name in ((report, "to_json"), (evidence, "dumps")):
        original = getattr(module, name)

        def checked(obj, _original=original):
            found.extend(problems(obj))
            return _original(obj)
        monkeypatch.setattr(module, name, checked)
    yield
    assert not found, "JSON documents that break their schema:\n" + "\n".join(found)


@functools.lru_cache(maxsize=None)
def _proof(name: str, numeric: bool = True) -> Proof:
    case = next(c for c in all_cases() if c.name == name)
    return prove_case(case, numeric=numeric)


@pytest.fixture(scope="session")
def proof_of():
    """proof_of("reshape_basic") -> Proof (cached for the session)."""
    return _proof


def param(proof: Proof, io: str, index: int):
    return next(p for p in proof.parameters if p.io == io and p.index == index)


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if a proof, a batch or the ONNX source reader starts: the command was
    to stop at its arguments."""
    from torch_prover.batch import pool
    from torch_prover.engine import prove as prove_mod
    from torch_prover.fix import command

    def forbidden(*_a, **_k):
        raise AssertionError("work started before the arguments were checked")
    monkeypatch.setattr(pool, "run_batch", forbidden)
    monkeypatch.setattr(command, "read_tree", forbidden)
    monkeypatch.setattr(prove_mod, "prove_case", forbidden)


# ----------------------------------------------------------------------------- a full run
TRAPS = ("Relu/.git", "notes", "Relu/old_case")
"""Paths under the full run's --out that belong to someone else (see _plant)."""


def _children(pid: int) -> list[int]:
    """Live (non-zombie) processes whose parent is ``pid``."""
    return [p for p, (parent, state) in processes().items() if parent == pid and state != "Z"]


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _plant(root: Path) -> dict[str, Path]:
    """Things that are not torch-prover's, placed where a careless tool would delete them."""
    out = root / "models"
    git = out / "Relu" / ".git"
    git.mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    notes = out / "notes" / "meeting"
    notes.mkdir(parents=True)
    (notes / "proof.json").write_text('{"agenda": "tags"}\n')
    (notes / "minutes.txt").write_text("we agreed\n")
    # outside --out, a directory that even looks like evidence of a removed case
    outside = root / "elsewhere" / "old_case"
    outside.mkdir(parents=True)
    (outside / "proof.json").write_text(json.dumps(
        {"format": 1, "op": "Relu", "case": "old_case", "parameters": []}))
    (outside / "model.onnx").write_bytes(b"not ours to delete")
    (out / "Relu" / "old_case").symlink_to(outside, target_is_directory=True)
    return {"git": git / "HEAD", "minutes": notes / "minutes.txt",
            "notes_proof": notes / "proof.json", "outside": outside / "proof.json",
            "outside_model": outside / "model.onnx", "link": out / "Relu" / "old_case"}


def _snapshot(traps: dict[str, Path]) -> dict[str, object]:
    snap: dict[str, object] = {k: p.read_bytes() for k, p in traps.items() if k != "link"}
    snap["link"] = os.readlink(traps["link"])
    return snap


def _verify_all(out: Path, cache: Path, *extra: str, quiet: bool = False) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    pipe = subprocess.DEVNULL if quiet else subprocess.PIPE
    return subprocess.Popen(
        [sys.executable, "-m", "torch_prover", "verify-all", "--out", str(out),
         "--cache-dir", str(cache), "--jobs", "2", *extra],
        stdout=pipe, stderr=pipe, text=True, env=env)


@pytest.fixture(scope="session")
def full_run(tmp_path_factory):
    """Kill a verify-all mid-batch, then run it to completion, into a trapped --out."""
    root = tmp_path_factory.mktemp("no_harm")
    traps = _plant(root)
    before = _snapshot(traps)
    out, cache = root / "models", root / "cache"
    # evidence torch-prover wrote for a case the catalogue no longer has: prune removes it
    retired = out / "Relu" / "retired_case"
    retired.mkdir()
    (retired / "model.onnx").write_bytes(b"old model")
    (retired / "proof.json").write_text(json.dumps(
        {"format": 1, "op": "Relu", "case": "retired_case", "parameters": []}))

    killed = _verify_all(out, cache, "--no-cache", quiet=True)
    deadline = time.monotonic() + 300
    workers: list[int] = []
    while time.monotonic() < deadline and killed.poll() is None:
        workers = _children(killed.pid)
        if len(workers) >= 2 and len(list(out.glob("*/*/proof.json"))) >= 10:
            break
        time.sleep(0.2)
    assert killed.poll() is None, "verify-all ended before it could be killed mid-batch"
    written_before_kill = len(list(out.glob("*/*/proof.json")))
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    gone_by = time.monotonic() + 10
    while time.monotonic() < gone_by and any(_alive(w) for w in workers):
        time.sleep(0.2)
    survivors = [w for w in workers if _alive(w)]
    for w in survivors:   # do not leave them to the next test either
        os.kill(w, signal.SIGKILL)
    after_kill = _snapshot(traps)

    done = _verify_all(out, cache, "--format", "json", "--report", str(root / "report.json"))
    stdout, stderr = done.communicate(timeout=1800)
    return {"root": root, "out": out, "retired": retired, "traps": traps, "before": before,
            "after_kill": after_kill, "after_full": _snapshot(traps), "workers": workers,
            "survivors": survivors, "written_before_kill": written_before_kill,
            "exit": done.returncode, "stdout": stdout, "stderr": stderr,
            "report": json.loads((root / "report.json").read_text())}


@pytest.fixture(scope="session")
def versions_run(full_run, tmp_path_factory):
    """verify-all --versions all into a copy of the full run's evidence, with its cache: the
    cases' own proofs come from the cache, every variant is proved (the one all-versions
    run of the suite: test_models_current.py compares its evidence, test_versions_faithful.py
    checks it, test_report_command.py renders its report)."""
    import shutil
    root = tmp_path_factory.mktemp("versions")
    out, cache = root / "models", root / "cache"
    shutil.copytree(full_run["out"], out, symlinks=True)
    shutil.copytree(full_run["root"] / "cache", cache)
    cp = subprocess.run([sys.executable, "-m", "torch_prover", "verify-all", "--versions",
                         "all", "--out", str(out), "--cache-dir", str(cache), "--jobs", "2",
                         "--format", "json", "--report", str(root / "report.json")],
                        capture_output=True, text=True, timeout=3000)
    return {"out": out, "exit": cp.returncode, "stderr": cp.stderr,
            "report": json.loads((root / "report.json").read_text())}


# ----------------------------------------------------------------------------- real reports
@pytest.fixture(scope="session")
def real_report(tmp_path_factory):
    """real_report("If,Relu", "--shard", "1/2") -> the path of a JSON report that this
    torch-prover's verify-all wrote for those ops (no evidence; one cache for the session,
    each report made once). fix-tags and merge re-check every record they read, so their
    tests read real reports, never hand-written records."""
    root = tmp_path_factory.mktemp("real_reports")
    made: dict[tuple[str, ...], Path] = {}

    def make(ops: str, *extra: str) -> Path:
        key = (ops, *extra)
        if key not in made:
            path = root / f"report-{len(made)}.json"
            cp = subprocess.run(
                [sys.executable, "-m", "torch_prover", "verify-all", "--ops", ops, "--no-write",
                 "--cache-dir", str(root / "cache"), "--format", "json", "--report", str(path),
                 *extra], capture_output=True, text=True, timeout=1800)
            assert cp.returncode in (0, 1), cp.stderr[-2000:]
            made[key] = path
        return made[key]
    return make
