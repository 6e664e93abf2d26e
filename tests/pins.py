"""The pinned versions (constraints.txt), and what may differ when torch is not the pinned one.

models/ and the docs' examples are made with the pinned torch, onnx, onnxruntime and
onnxscript, and CI installs exactly those. torch-prover supports other torch releases too
(pyproject's ``torch>=2.13,<2.16``), and a compatibility run of the suite on one of them
(say torch 2.15.0 in its own venv) must still hold the tool to its evidence: the same
models, records, verdicts and printed reports, except for the torch version each records
and prints, and the digests over files that hold it (``model.onnx`` carries the exporter's
``producer_version``). These helpers mask exactly that, and only when torch alone differs
from the pins: another onnx, onnxruntime or onnxscript makes other evidence, so it still
fails, with the versions named.
"""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from torch_prover.engine.record import EVIDENCE_DISTRIBUTIONS, versions

ROOT = Path(__file__).resolve().parent.parent

_DIGEST = re.compile(r"\b[0-9a-f]{64}\b")
_TORCH_WARNING = re.compile(r"^\S*/torch/\S+:\d+: \w*Warning: .*\n(?:[ \t]+\S.*\n)?", re.M)
"""A warning torch itself prints while a script runs (``.../torch/autograd/graph.py:1113:
UserWarning: ...`` and its source line): a new torch release adds such warnings."""


def base(version: str) -> str:
    """``2.13.0+cpu`` -> ``2.13.0``: the local build label (CPU or CUDA wheel) is no release."""
    return version.split("+", 1)[0]


@cache
def pinned() -> dict[str, str]:
    """constraints.txt's ``name==version`` lines for the packages evidence records."""
    found = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        name, sep, version = line.partition("==")
        if sep and name.strip() in EVIDENCE_DISTRIBUTIONS:
            found[name.strip()] = version.strip()
    return found


@cache
def installed() -> dict[str, str]:
    """What the evidence records of the installed packages (``engine.record.versions``)."""
    return versions()


@cache
def other_torch() -> str | None:
    """The installed torch's version when torch alone differs from the pins, else None
    (the pinned install, or another onnx/onnxruntime/onnxscript, where nothing is masked)."""
    have, pins = installed(), pinned()
    if any(base(have[d]) != pins[d] for d in EVIDENCE_DISTRIBUTIONS if d != "torch"):
        return None
    return have["torch"] if base(have["torch"]) != pins["torch"] else None


def _torch_version() -> re.Pattern[str]:
    """Every spelling a record or a report may hold for the installed or the pinned torch,
    with or without its local build label (``2.13.0+cpu``, ``2.15.0+cu132``, ``2.15.0``)."""
    bases = sorted({base(installed()["torch"]), pinned()["torch"]}, key=len, reverse=True)
    return re.compile("(?:" + "|".join(map(re.escape, bases)) + r")(?:\+[0-9A-Za-z.]+)?")


def mask_text(text: str) -> str:
    """Printed output with the torch version, torch's own warnings and every sha256 digest
    masked and the whitespace folded (a longer version string wraps a line elsewhere). Only for
    ``other_torch()``; on the pinned install the texts are compared as they are."""
    text = _TORCH_WARNING.sub("", text)
    text = _torch_version().sub("<torch version>", text)
    return " ".join(_DIGEST.sub("<sha256>", text).split())


def canonical_model(data: bytes) -> bytes:
    """A model.onnx as it would be but for what the exporter names and stamps by itself:
    ``producer_version``, node names, the exporter's metadata on each node, and the names of
    values inside the graph (torch 2.15 numbers an FX node ``sym_size_int_2`` where 2.13 says
    ``sym_size_int_3``), renamed in order of first use. The graph's inputs, outputs and
    initializers keep their names (the evidence layout's), and every op, domain, attribute,
    edge and type is compared as it is."""
    import onnx

    model = onnx.ModelProto()
    model.ParseFromString(data)
    model.producer_version = ""
    graph = model.graph
    kept = {v.name for v in (*graph.input, *graph.output)} | {t.name for t in graph.initializer}
    renamed: dict[str, str] = {}

    def name(value: str) -> str:
        return value if not value or value in kept else renamed.setdefault(value,
                                                                           f"v{len(renamed)}")

    for node in graph.node:
        node.name = ""
        del node.metadata_props[:]
        node.input[:] = [name(v) for v in node.input]
        node.output[:] = [name(v) for v in node.output]
    for info in graph.value_info:
        info.name = name(info.name)
        del info.metadata_props[:]
    return model.SerializeToString(deterministic=True)
