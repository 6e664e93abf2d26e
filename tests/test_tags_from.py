"""verify-all --tags-from: every flipped tag of an exercised parameter is reported.

Random (seeded) flips of the annotations of a few cheap ops in a copy of ONNX's real
Operators.md; the batch must report each flipped, exercised parameter as a disagreement
and nothing else.
"""
import json
import random
import re
from pathlib import Path

import pytest

from torch_prover import cli

REAL = Path(__file__).parent / "data" / "Operators.md"
OPS = ("Reshape", "TopK", "Gather", "Where", "Concat", "Split", "Tile", "Floor")
ANNOTATED = re.compile(r"^<dt><tt>([^<]+)</tt> \(([^)]*?)(non-differentiable|differentiable)\)")


def _sections(lines):
    """op -> (first, last) line index of its ai.onnx section."""
    starts = {}
    for i, ln in enumerate(lines):
        m = re.match(r'^### <a name="([A-Za-z]+)"></a>', ln)
        if m:
            starts[m.group(1)] = i
    out = {}
    order = sorted(starts.values())
    for op in OPS:
        s = starts[op]
        nxt = next((j for j in order if j > s), len(lines))
        out[op] = (s, nxt)
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_every_flipped_exercised_tag_is_reported(tmp_path, capsys, seed):
    lines = REAL.read_text(encoding="utf-8").splitlines(keepends=True)
    candidates = []
    for op, (a, b) in _sections(lines).items():
        io = None
        for i in range(a, b):
            if lines[i].startswith("#### Inputs"):
                io = "input"
            elif lines[i].startswith("#### Outputs"):
                io = "output"
            elif io and ANNOTATED.match(lines[i]):
                candidates.append((i, op, io))
    flips = random.Random(seed).sample(candidates, 6)
    flipped = set()
    for i, op, io in flips:
        name, _, tag = ANNOTATED.match(lines[i]).groups()
        new = "differentiable" if tag == "non-differentiable" else "non-differentiable"
        lines[i] = lines[i].replace(f"{tag})", f"{new})", 1)
        flipped.add((op, io, name))
    path = tmp_path / "Operators.md"
    path.write_text("".join(lines), encoding="utf-8")

    code = cli.main(["verify-all", "--ops", ",".join(OPS), "--tags-from", str(path),
                     "--no-numeric", "--no-write", "--no-cache", "--format", "json", "--jobs", "2"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    reported = {(r["op"], p["io"], p["name"]) for r in report["cases"]
                for p in r["parameters"] if p["verdict"] == "disagree"}
    exercised = {(r["op"], p["io"], p["name"]) for r in report["cases"]
                 for p in r["parameters"] if not p["reason"].startswith("not exercised")}
    assert reported == flipped & exercised
    assert flipped & exercised, "the sample should flip at least one exercised tag"
    assert report["summary"]["tags_path"] == str(path)


def test_broken_docs_file_is_a_usage_error(tmp_path, capsys):
    bad = tmp_path / "Operators.md"
    bad.write_text("# not the docs\n")
    assert cli.main(["verify-all", "--ops", "Reshape", "--tags-from", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "--tags-from" in err and len(err.strip().splitlines()) == 1
