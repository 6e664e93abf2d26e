"""verify-all --tags-from Changelog.md: a flipped tag of the schema version in force at a
case's opset is reported, a flipped tag of any other version is not.

Random (seeded) flips in a copy of ONNX's real Changelog.md. The expectations come from
outside the code under test: which version is in force is read here from the file's own
``### <a name="Op-N">`` headings (the greatest N <= the case's declared export opset), and
the parameters below are those the named cases exercise (each case feeds every input and
reads every output; Reshape's ``shape`` and Shape's output are int64, decided by type).
Every other parameter of the chosen ops is flipped too, in a version NOT in force (a decoy):
reading the wrong version would miss the real flips and report the decoys.
"""
from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from torch_prover import cli
from torch_prover.cases import all_cases

REAL = Path(__file__).parent / "data" / "Changelog.md"
# op -> its cheap case, which exercises every parameter of the op's version in force
CASES = {"Flatten": "flatten_axis1", "Softplus": "softplus_basic",
         "GlobalAveragePool": "globalaveragepool_adaptive", "Shape": "shape_dynamic",
         "Reshape": "reshape_basic"}
_ENTRY = re.compile(r"^<dt><tt>([^<]+)</tt> \([^)]*?(non-differentiable|differentiable)\)")
_HEADING = re.compile(r'^### <a name="(\w+)-(\d+)"></a>')


def _sections(lines: list[str]) -> dict[tuple[str, int], tuple[int, int]]:
    """(op, version) -> (first, end) line index of its ai.onnx section."""
    heads = [(i, m.group(1), int(m.group(2))) for i, ln in enumerate(lines)
             if (m := _HEADING.match(ln))]
    ai_onnx_end = next(i for i, ln in enumerate(lines) if ln.startswith("# ai.onnx.preview"))
    ends = [i for i, _, _ in heads[1:]] + [len(lines)]
    return {(op, v): (i, min(e, ai_onnx_end)) for (i, op, v), e in zip(heads, ends)
            if i < ai_onnx_end}


def _entries(lines: list[str], first: int, end: int) -> dict[tuple[str, str], int]:
    """(io, name) -> line index of every tagged Inputs/Outputs entry in a section."""
    out, io = {}, None
    for i in range(first, end):
        if lines[i].startswith("#### "):
            io = {"#### Inputs": "input", "#### Outputs": "output"}.get(lines[i].split(" (")[0]
                                                                          .rstrip())
        elif io and (m := _ENTRY.match(lines[i])):
            out[(io, m.group(1))] = i
    return out


def _flip(lines: list[str], i: int) -> None:
    tag = _ENTRY.match(lines[i]).group(2)
    new = "differentiable" if tag == "non-differentiable" else "non-differentiable"
    lines[i] = lines[i].replace(f"{tag})", f"{new})", 1)


@pytest.mark.parametrize("seed", [0, 1])
def test_flips_in_the_version_in_force_are_reported(tmp_path, capsys, seed):
    lines = REAL.read_text(encoding="utf-8").splitlines(keepends=True)
    sections = _sections(lines)
    opset = {c.op: c.export_opset for c in all_cases() if CASES.get(c.op) == c.name}
    in_force, decoy = {}, {}
    for op in CASES:
        versions = sorted(v for o, v in sections if o == op)
        v = max(n for n in versions if n <= opset[op])
        in_force[op] = _entries(lines, *sections[(op, v)])
        other = versions[-1] if v != versions[-1] else versions[-2]
        decoy[op] = _entries(lines, *sections[(op, other)])
    candidates = sorted((op, io, name) for op, entries in in_force.items()
                        for io, name in entries)
    assert len(candidates) == 11   # 2 each for Flatten, Softplus, GlobalAveragePool, Shape; Reshape 3
    flipped = set(random.Random(seed).sample(candidates, 5))
    decoys = 0
    for op, io, name in candidates:
        if (op, io, name) in flipped:
            _flip(lines, in_force[op][(io, name)])
        elif (io, name) in decoy[op]:
            _flip(lines, decoy[op][(io, name)])
            decoys += 1
    assert decoys >= 4
    path = tmp_path / "Changelog-pr.md"
    path.write_text("".join(lines), encoding="utf-8")

    code = cli.main(["verify-all", "--ops", ",".join(CASES), "--tags-from", str(path),
                     "--no-write", "--no-cache", "--format", "json", "--jobs", "1"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    # the named cases only: another case of the same op (softplus_dynamo_guard) may sit at
    # another opset, where another version is in force
    named = [r for r in report["cases"] if r["case"] in CASES.values()]
    assert sorted(r["case"] for r in named) == sorted(CASES.values())
    reported = {(r["op"], p["io"], p["name"]) for r in named
                for p in r["parameters"] if p["verdict"] == "disagree"}
    assert reported == flipped
    assert report["summary"]["tags_path"] == str(path)
