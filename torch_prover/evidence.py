"""The only module that writes under models/. Every write is atomic.

Layout is ONNX's node-test data layout, so standard ONNX tooling can load it::

    <out>/<Op>/<case>/model.onnx
    <out>/<Op>/<case>/test_data_set_0/input_<j>.pb, output_<j>.pb, grad_input_<j>.pb
    <out>/<Op>/<case>/proof.json

A case directory is built under a temporary name and renamed into place, so a crash
leaves either the old evidence or the new, never a mix.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import onnx.numpy_helper

from .export import output_index
from .prove import Proof


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def dumps(record: Any) -> str:
    return json.dumps(record, indent=2, sort_keys=False) + "\n"


def case_dir(out: Path, proof: Proof) -> Path:
    return Path(out) / proof.op / proof.case.name


def write_proof(out: Path, proof: Proof) -> Path:
    """Write the evidence of one proof; returns its directory."""
    final = case_dir(out, proof)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        (tmp / "model.onnx").write_bytes(proof.model_bytes)
        data = tmp / "test_data_set_0"
        data.mkdir()
        run = proof.probe.runs[0]
        names = proof.case.names
        for j, name in enumerate(proof.graph_inputs):
            i = names.index(name)
            _pb(data / f"input_{j}.pb", run.inputs[i], name)
            grad = run.input_grads[i]
            if grad is not None:
                _pb(data / f"grad_input_{j}.pb", grad, f"grad_{name}")
        for j, name in enumerate(proof.graph_outputs):
            _pb(data / f"output_{j}.pb", run.outputs[output_index(name)], name)
        (tmp / "proof.json").write_text(dumps(proof.record()), encoding="utf-8")
        old = None
        if final.exists():
            old = final.with_name(f".{final.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(final, old)
        os.replace(tmp, final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def _pb(path: Path, tensor, name: str) -> None:
    array = tensor.detach().cpu().numpy()
    path.write_bytes(onnx.numpy_helper.from_array(array, name).SerializeToString())
