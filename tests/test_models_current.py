"""The committed evidence under models/ is exactly what the tool produces, on any machine.

The session's full verify-all (conftest ``full_run``) rewrites every case; every file it
writes must equal the committed one byte for byte, and no committed file may be missing
from it -- the same statement as "running the README's quickstart leaves git status
clean". Records hold no floating-point noise (numeric.shown_error), so another CPU or BLAS
kernel reproduces them too. Nothing here skips: evidence made with other versions than
the installed (pinned) ones is stale and fails, with the versions named; on another
supported torch (a compatibility run, tests/pins.py) the files are compared but for the
torch version they record.
"""
import hashlib
import json
from pathlib import Path

import numpy as np
import onnx
import onnx.defs
import onnx.numpy_helper

import pins
from conftest import TRAPS
from torch_prover.cases import all_cases
from torch_prover.engine.prove import versions
from torch_prover.output.index_files import VERSIONS_INDEX
from torch_prover.tags.schema import all_ops

MODELS = Path(__file__).resolve().parents[1] / "models"


def _files(root: Path, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    found = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and not p.is_symlink() and not rel.startswith(skip):
            found[rel] = p.read_bytes()
    return found


def test_committed_evidence_was_made_with_the_installed_versions():
    """On the pinned install, models/ was made with it; on another supported torch (a
    compatibility venv, tests/pins.py), models/ was still made with the pins, which is what
    the comparisons below then hold the installed torch to."""
    index = json.loads((MODELS / "index.json").read_text())
    made_with = {d: pins.base(v) for d, v in index["versions"].items()}
    if pins.other_torch() is not None:
        assert made_with == pins.pinned(), ("models/ was not made with constraints.txt's "
                                            "versions: rerun `torch-prover verify-all`")
        return
    assert index["versions"] == versions(), (
        "models/ was made with other versions than the installed ones: install with "
        "`pip install -c constraints.txt -e '.[test]'`, or rerun `torch-prover verify-all`")


def _tensor(data: bytes) -> np.ndarray:
    t = onnx.TensorProto()
    t.ParseFromString(data)
    return onnx.numpy_helper.to_array(t)


def _without_torch_version(rel: str, data: bytes) -> bytes:
    """On another supported torch (tests/pins.py): a file as it would be but for the torch
    version it records -- ``model.onnx`` but for what the exporter names and stamps by
    itself (``pins.canonical_model``), and in records, indexes and READMEs the version
    strings and the digests over models masked."""
    if rel.endswith(".onnx"):
        return pins.canonical_model(data)
    if rel.endswith((".json", ".md")):
        return pins.mask_text(data.decode("utf-8")).encode("utf-8")
    return data


def _same(rel: str, a: bytes, b: bytes) -> bool:
    """Records, models and indexes: byte for byte (on another supported torch, but for the
    version it records: ``_without_torch_version``). Test data (.pb): PyTorch's sample values,
    whose last bits differ between CPUs (AVX2 vs AVX-512 exp): within 1000 ulps of the
    tensor's scale -- the rule under which verify-all keeps the committed files."""
    if a == b:
        return True
    if pins.other_torch() is not None and not rel.endswith(".pb"):
        return _without_torch_version(rel, a) == _without_torch_version(rel, b)
    if not rel.endswith(".pb"):
        return False
    x, y = _tensor(a), _tensor(b)
    if x.dtype != y.dtype or x.shape != y.shape or x.dtype.kind not in "fc":
        return False
    scale = max(np.abs(x).max(initial=0), np.abs(y).max(initial=0))
    return bool(np.abs(x - y).max(initial=0) <= 1000 * np.finfo(x.dtype).eps * scale)


def _other_versions(rel: str) -> bool:
    """Evidence an all-versions run writes (a variant ``<case>@<opset>``, versions.json), not
    the default run: compared by ``test_every_other_version_is_reproduced``."""
    parts = rel.split("/")
    return rel == VERSIONS_INDEX or (len(parts) > 1 and "@" in parts[1])


def _compare(committed: dict[str, bytes], fresh: dict[str, bytes], command: str) -> None:
    missing = sorted(set(committed) - set(fresh))
    extra = sorted(set(fresh) - set(committed))
    changed = sorted(k for k in set(committed) & set(fresh)
                     if not _same(k, committed[k], fresh[k]))
    assert not (missing or extra or changed), (
        f"models/ is not what {command} writes: {len(changed)} changed (e.g. {changed[:5]}), "
        f"{len(missing)} not written (e.g. {missing[:5]}), {len(extra)} not committed "
        f"(e.g. {extra[:5]}): rerun `torch-prover {command}` and commit models/")


def test_every_other_version_is_reproduced(versions_run):
    committed = {k: v for k, v in _files(MODELS).items() if _other_versions(k)}
    fresh = {k: v for k, v in _files(versions_run["out"], TRAPS).items() if _other_versions(k)}
    _compare(committed, fresh, "verify-all --versions all")


def test_all_versions_lists_every_schema_version(versions_run):
    """Every ai.onnx schema version of the installed onnx, decided or explained."""
    listed = {(o["op"], e["version"]) for o in versions_run["report"]["versions"]["ops"]
              for e in o["versions"]}
    assert listed == {(s.name, s.since_version) for s in onnx.defs.get_all_schemas_with_history()
                      if s.domain in ("", "ai.onnx")}
    for o in versions_run["report"]["versions"]["ops"]:
        for e in o["versions"]:
            assert e["decided_by"] == "proved" or e.get("reason"), (o["op"], e["version"])
            if e["band"] == "below opset 7":   # an equivalence with no cell is no decision
                assert e["decided_by"] in ("equivalence", "by type") or (
                    e["decided_by"] == "explained" and not e["cells"]
                    and e["reason"].startswith("no equivalence")), (o["op"], e)


def _other_domains(rel: str) -> bool:
    """Evidence of the other domains' cases (cases/other_domains.py), which verify-all keeps
    and does not write: compared by tests/test_domain_cases.py."""
    from torch_prover.cases.other_domains import DOMAIN_CASES
    return rel.split("/")[:2] in [[c.op, c.name] for c in DOMAIN_CASES]


def test_every_committed_file_is_reproduced(full_run):
    committed = {k: v for k, v in _files(MODELS).items()
                 if not _other_versions(k) and not _other_domains(k)}
    fresh = _files(full_run["out"], TRAPS)
    _compare(committed, fresh, "verify-all")


def test_every_case_has_self_consistent_evidence():
    for case in all_cases():
        d = MODELS / case.op / case.name
        rec = json.loads((d / "proof.json").read_text())
        assert rec["case"] == case.name and rec["op"] == case.op
        assert rec["status"] != "error", f"{d}: {rec.get('error')}"
        digest = hashlib.sha256((d / "model.onnx").read_bytes()).hexdigest()
        assert digest == rec["model"]["sha256"], f"{d}: model.onnx does not match proof.json"
        assert (d / "test_data_set_0").is_dir(), f"{d}: no test_data_set_0"


def test_index_lists_every_op():
    index = json.loads((MODELS / "index.json").read_text())
    assert [o["op"] for o in index["ops"]] == list(all_ops())
    assert all(o["reason"] for o in index["ops"])
    assert (MODELS / "README.md").read_text().count("\n| ") >= len(all_ops())


def test_every_committed_record_is_what_its_witnesses_and_tags_give():
    """The cache's re-derivation (engine/recheck.py) accepts every record a proof wrote:
    otherwise a warm cache would miss for nothing. Tags from the installed onnx."""
    from torch_prover.engine.prove import default_tags
    from torch_prover.engine.recheck import record_problem
    problems = {}
    for case in all_cases():
        rec = json.loads((MODELS / case.op / case.name / "proof.json").read_text())
        why = record_problem(rec, case, default_tags)
        if why:
            problems[case.name] = why
    assert not problems


def test_every_record_says_how_to_rerun_its_test_data():
    """Each record names the runtime that reproduced its outputs, and marks each output."""
    for case in all_cases():
        d = MODELS / case.op / case.name
        data = json.loads((d / "proof.json").read_text())["test_data"]
        assert data["runtime"] in ("onnxruntime", "onnx.reference"), d
        outputs = sorted(p.name for p in (d / "test_data_set_0").glob("output_*.pb"))
        assert sorted(o["file"] for o in data["outputs"]) == outputs
        assert all(o["check"] == "compare" or o["reason"] for o in data["outputs"])
