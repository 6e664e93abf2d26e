"""Issue 34, part 7: ``run`` on a torch whose TorchScript is gone.

pytorch#189705 proposes that ``torch.onnx.export(dynamo=False)``, ``torch.jit.script`` and
``torch.jit.trace`` raise. tests/data/no_torchscript/sitecustomize.py makes them raise in
every Python started with that directory on PYTHONPATH -- the prover and the fork server
of the scripts' processes alike -- and this test runs every script of the contributor
corpus (tests/data/scripts, tests/test_script_corpus.py) there, in one process.

Every corpus script gives verdicts today (its EXPECTED exit code is 0 or 1); without
TorchScript each must still give verdicts (never exit 2 or 3), and the same ones (issue 41:
an op the dynamo exporter decomposes is kept by the runner's own translation,
pr/translations.py): a script
that asked the TorchScript exporter for an opset below the dynamo exporter's oldest is
exported by dynamo at that oldest and moved to the asked opset by the tool's checked
version adapters (``engine/versions/next_opset.relabel_opset``), so its schema version -- and the
verdicts worked out for it -- are the ones the script asked for.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from test_script_corpus import EXPECTED, SCRIPTS

HARNESS = Path(__file__).resolve().parent / "data" / "no_torchscript"

DRIVER = """
import contextlib, io, json, sys
import torch
from torch_prover import cli
from torch_prover.engine.exporters import torchscript_available
assert not torchscript_available(), "the harness did not take TorchScript away"
for name in sys.argv[1:]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = cli.main(["run", name, "--format", "json"])
    doc = json.loads(out.getvalue())
    print(json.dumps({"name": name, "code": code, "reason": doc.get("reason"),
                      "cases": [{"opset": c["opset"], "route": c.get("route"),
                                 "status": c.get("status"),
                                 "verdicts": [[p["io"], p["index"], p["verdict"]]
                                              for p in c["parameters"]]}
                                for c in doc.get("cases", [])]}))
"""


def test_every_corpus_script_gives_verdicts_without_torchscript(tmp_path):
    names = sorted(EXPECTED)
    for name in names:
        shutil.copy(SCRIPTS / name, tmp_path / name)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(HARNESS)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    done = subprocess.run([sys.executable, "-c", DRIVER, *names], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    got = {r["name"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert sorted(got) == names
    gave = [n for n in names if got[n]["code"] in (0, 1)]
    assert gave == names, {n: got[n]["reason"] for n in names if n not in gave}
    # clip_opset13_tensor_bounds.py: torch.clamp with 0-d tensor bounds, which the dynamo
    # exporter writes as Max then Min; the runner's own translation (pr/translations.py)
    # writes Clip, whose min and max are scalars, so the Clip-13 verdicts are TorchScript's
    clip = "clip_opset13_tensor_bounds.py"
    assert got[clip]["cases"][0]["status"] != "not the op meant"
    same = [n for n in names if {(io, i): v for io, i, v in got[n]["cases"][0]["verdicts"]}
            == EXPECTED[n][1] and got[n]["code"] == EXPECTED[n][0]]
    print(f"without TorchScript: {len(gave)} of {len(names)} corpus scripts give verdicts, "
          f"{len(same)} the same as with it; differing: "
          + "; ".join(f"{n}: {got[n]['cases'][0]}" for n in names if n not in same))
    assert same == names, [n for n in names if n not in same]
    moved = [n for n in names if got[n]["cases"][0]["route"] == "relabelled"]
    # the TorchScript scripts at opsets below 18 are moved to the opset they asked for
    assert {"clip_opset11_torchscript.py", "topk_opset10_torchscript.py",
            "tanh_bytesio_torchscript.py"} <= set(moved), moved
