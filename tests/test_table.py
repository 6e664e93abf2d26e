"""The differentiability table (docs/table.md): the shipped file is the committed evidence's
(every cell of models/versions.json, one row each, with ONNX's own tags), valid against
its shipped schema, printed by `torch-prover table` in three formats without torch or onnx,
and installable from the wheel alone."""
from __future__ import annotations

import csv
import importlib.util
import io
import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import onnx.defs
import pytest

from json_contract import problems
from torch_prover import cli
from torch_prover.output import table

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"


def _script():
    spec = importlib.util.spec_from_file_location("table_data", ROOT / "scripts" / "table_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _shipped_text() -> str:
    return resources.files("torch_prover").joinpath(*table.DATA).read_text(encoding="utf-8")


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["table", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_shipped_table_is_the_committed_evidences():
    """Rebuilt from models/ it is the shipped file (but the build's date and source digest);
    `python scripts/table_data.py` after verify-all --versions all brings it back."""
    found = table.drift(_shipped_text(), _script().generate())
    assert found == [], "torch_prover/data/table.json drifted from models/ (run " \
        "`python scripts/table_data.py`):\n" + "\n".join(found[:20])


def test_drift_names_a_changed_row_and_a_changed_header():
    shipped = json.loads(_shipped_text())
    forged = json.loads(_shipped_text())
    forged["rows"][5]["verdict"] = "disagree" if forged["rows"][5]["verdict"] != "disagree" \
        else "agree"
    del forged["rows"][7]
    forged["provenance"]["onnx"] = "0.0"
    r5, r7 = shipped["rows"][5], shipped["rows"][7]
    found = table.drift(table.dumps(forged), table.dumps(shipped))
    assert any(f"'{r5['op']}', {r5['version']}" in f and f.endswith("differs") for f in found)
    assert any(f"'{r7['op']}', {r7['version']}" in f and "only in the evidence" in f
               for f in found)
    assert any(f.startswith("provenance:") for f in found)


def test_every_cell_of_versions_json_is_one_row_with_onnxs_own_tag():
    """One row per cell (counted from versions.json, not from the table's code); each row's
    onnx_tag is the installed onnx's category of that parameter in that schema version."""
    doc = json.loads((MODELS / "versions.json").read_text())
    cells = [(o["op"], v["version"], c["io"], c["index"], c["name"])
             for o in doc["ops"] for v in o["versions"] for c in v["cells"]]
    rows = table.load()["rows"]
    keys = [(r["op"], r["version"], r["io"], r["index"], r["name"]) for r in rows
            if r["domain"] == "ai.onnx"]
    assert keys == cells and len(set(keys)) == len(keys)
    category = {onnx.defs.OpSchema.DifferentiationCategory.Differentiable: "differentiable",
                onnx.defs.OpSchema.DifferentiationCategory.NonDifferentiable:
                    "non-differentiable",
                onnx.defs.OpSchema.DifferentiationCategory.Unknown: "unknown"}
    for r in rows:
        s = onnx.defs.get_schema(r["op"], r["version"], "" if r["domain"] == "ai.onnx"
                                 else r["domain"])
        assert s.since_version == r["version"], r
        formals = s.inputs if r["io"] == "input" else s.outputs
        formal = formals[min(r["index"], len(formals) - 1)]   # a variadic's later indices
        assert formal.name == r["name"], r
        assert category[formal.differentiation_category] == r["onnx_tag"], r


def test_every_schema_version_of_every_other_domain_has_a_row_per_parameter():
    """Every domain the installed onnx registers beside ai.onnx (ai.onnx.ml 25 versions,
    ai.onnx.preview.training 4...): each version's every formal parameter is one row."""
    want = sorted((s.domain, s.name, s.since_version, io, i)
                  for s in onnx.defs.get_all_schemas_with_history() if s.domain not in ("", "ai.onnx")
                  for io, formals in (("input", s.inputs), ("output", s.outputs))
                  for i in range(len(formals)))
    got = sorted((r["domain"], r["op"], r["version"], r["io"], r["index"])
                 for r in table.load()["rows"] if r["domain"] != "ai.onnx")
    assert got == want
    assert {d for d, *_ in want} >= {"ai.onnx.ml", "ai.onnx.preview.training"}


def test_other_domains_by_type_from_the_types():
    """A row of another domain is decided by type exactly when the types decide it (the
    math: no gradient flows through an int64, string or map parameter, nor into an op with
    no float output): its allowed types, read from onnx.defs here, say which; any other row
    is a reference case's or undecided."""
    def tensor_float(t: str) -> bool:
        return t.startswith("tensor(") and any(f in t for f in ("float", "double", "bfloat16"))
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain in ("", "ai.onnx"):
            continue
        allowed = {c.type_param_str: list(c.allowed_type_strs) for c in s.type_constraints}
        types = lambda p, allowed=allowed: allowed.get(p.type_str, [p.type_str])   # noqa: E731
        any_float_out = any(tensor_float(t) for p in s.outputs for t in types(p))
        any_float_in = any(tensor_float(t) for p in s.inputs for t in types(p))
        rows = {(r["io"], r["index"]): r for r in table.select(
            table.load()["rows"], [s.name], [s.domain], [s.since_version])}
        for side, formals in (("input", s.inputs), ("output", s.outputs)):
            for i, p in enumerate(formals):
                own = any(tensor_float(t) for t in types(p))
                decided = not own or (side == "input" and not any_float_out) \
                    or (side == "output" and not any_float_in)
                r = rows[side, i]
                if decided:
                    assert (r["supports"], r["rule"]) == ("non-differentiable", "by type"), \
                        (s.name, p.name)
                elif r["cases"]:   # a reference case decided it (tests/test_domain_cases.py)
                    assert r["rule"] != "by type" and r["supports"] is not None
                else:
                    assert (r["verdict"], r["supports"], r["rule"]) == \
                        ("inconclusive", None, "undecided"), (s.name, p.name)


def test_every_row_is_valid_against_the_shipped_row_schema():
    folder = resources.files("torch_prover") / "schemas"
    row_schema = json.loads((folder / "table-row.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(row_schema)
    doc = table.load()
    bad = [(r["op"], r["version"], r["name"], e.message) for r in doc["rows"]
           for e in validator.iter_errors(r)]
    assert bad == []
    assert problems(doc) == []
    assert validator.is_valid(doc["rows"][0])
    assert not validator.is_valid({**doc["rows"][0], "verdict": "maybe"})
    assert not validator.is_valid({k: v for k, v in doc["rows"][0].items() if k != "supports"})


def test_the_row_schemas_words_are_the_records_words():
    from torch_prover.vocab import Evidence, NumericOutcome, Tag, Verdict
    folder = resources.files("torch_prover") / "schemas"
    props = json.loads((folder / "table-row.json").read_text(encoding="utf-8"))["properties"]
    assert props["onnx_tag"]["enum"] == [str(t) for t in Tag]
    assert props["supports"]["enum"] == [str(t) for t in Tag] + [None]
    assert props["verdict"]["enum"] == [str(v) for v in Verdict]
    assert props["evidence"]["items"]["enum"] == [str(e) for e in Evidence]
    assert props["numeric"]["items"]["enum"] == [str(e) for e in NumericOutcome]
    assert list(props) == list(table.COLUMNS)


def test_provenance_and_licence():
    doc = table.load()
    index = json.loads((MODELS / "index.json").read_text())["versions"]
    p = doc["provenance"]
    assert (p["onnx"], p["torch"], p["onnxruntime"]) == \
        (index["onnx"], index["torch"], index["onnxruntime"])
    assert p["torch_prover"]["version"] == __import__("torch_prover").__version__
    assert "Apache-2.0" in doc["licence"]
    assert "docs/table.md" in (ROOT / "README.md").read_text()


def test_three_formats(capsys):
    rows = table.load()["rows"]
    code, out, _ = _run(capsys)
    assert code == 0 and [json.loads(line) for line in out.splitlines()] == rows
    code, out, _ = _run(capsys, "--format", "csv")
    read = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and len(read) == len(rows)
    assert tuple(read[0]) == table.COLUMNS
    first = rows[0]
    assert read[0]["op"] == first["op"] and read[0]["version"] == str(first["version"])
    assert read[0]["in_force"] == " ".join(map(str, first["in_force"]))
    code, out, _ = _run(capsys, "--format", "json")
    doc = json.loads(out)
    assert code == 0 and problems(doc) == [] and doc["rows"] == rows


def test_selection_takes_its_counts_from_the_schemas(capsys):
    """--op (any case, comma-separated) and --version: exactly those versions' formal
    parameters, as many as onnx.defs declares (none of these is variadic)."""
    code, out, _ = _run(capsys, "--op", "abs,Relu", "--version", "13", "--domain", "ai.onnx")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and {(r["op"], r["version"]) for r in rows} == {("Abs", 13), ("Relu", 13)}
    want = sum(len(s.inputs) + len(s.outputs)
               for s in (onnx.defs.get_schema("Abs", 13), onnx.defs.get_schema("Relu", 13)))
    assert len(rows) == want


@pytest.mark.parametrize("argv, says", [
    (["--op", "NoSuchOp"], "--op NoSuchOp: the table has no such op"),
    (["--version", "x"], "--version x: a schema version is a whole number"),
    (["--domain", "com.example"], "--domain com.example: the table's domains are"),
    (["--op", "Abs", "--version", "7"], "no row matches --op Abs --version 7"),
])
def test_a_bad_selection_is_one_line_and_exit_2(capsys, argv, says):
    code, out, err = _run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith(f"torch-prover table: {says}") and err.count("\n") == 1


def test_the_command_imports_neither_torch_nor_onnx():
    """The table is read, not proved: the command runs where onnx and torch cannot be
    imported at all."""
    code = ("import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('onnx', 'torch', 'onnxruntime', 'numpy'):\n"
            "            raise ImportError('blocked ' + name)\n"
            "sys.meta_path.insert(0, Block())\n"
            "from torch_prover.cli import main\n"
            "sys.exit(main(['table', '--op', 'Det']))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["op"] for line in done.stdout.splitlines()] == ["Det"] * 4


def test_from_the_wheel_in_a_fresh_venv(tmp_path):
    """Built as a user would (pip wheel --no-deps), installed alone into a fresh venv (no
    dependency at all: the command needs none), run outside the checkout: three formats."""
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(wheels), str(ROOT)], check=True, timeout=300,
                   capture_output=True)
    (wheel,) = wheels.glob("torch_prover-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
                    "install", "-q", "--no-deps", str(wheel)], check=True, timeout=300,
                   capture_output=True)
    rows = table.load()["rows"]
    outs = {}
    for fmt in table.FORMATS:
        done = subprocess.run([str(venv / "bin" / "torch-prover"), "table", "--format", fmt],
                              cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        outs[fmt] = done.stdout
    assert [json.loads(line) for line in outs["jsonl"].splitlines()] == rows
    assert len(list(csv.DictReader(io.StringIO(outs["csv"])))) == len(rows)
    assert json.loads(outs["json"])["rows"] == rows
