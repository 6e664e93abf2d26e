"""The child process that runs a PR's node-test generators (``generators.py`` starts it).

``python -I generator_child.py OUT FILE...``: each FILE (a PR's
``onnx/backend/test/case/node/<op>.py``) is loaded as ONNX's collector loads it -- its
``Base`` subclasses' ``export*`` methods run when the class is created, each calling
``expect`` -- with ``expect`` wrapped so that every test it makes is written under
``OUT/onnx/backend/test/data/node/test_<name>/`` in the layout ONNX committed until #7959
(``model.onnx``, ``test_data_set_0/input_K.pb``, ``output_K.pb``), and what failed is listed
in ``OUT/manifest.json``. The parent reads that tree as any checkout's committed tests
(``source.from_checkout``), as hostile data: this process ran the PR's code.

Only the standard library, numpy and the installed onnx are imported here (never
torch_prover: the file runs as a script, ``-I``, in the scratch directory).
"""
from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

NAME = re.compile(r"test_[A-Za-z0-9_]{1,120}")
"""A test's name becomes a directory: ONNX's names are identifiers (``test_swiglu_alpha``)."""
MAX_TESTS = 500
"""More tests than any ONNX op's generator writes (Cast's, the largest, ~100)."""


def _write(root: Path, name: str, case, inputs, outputs) -> str | None:
    """The test under ``root/name``, or why it is not written."""
    from onnx import numpy_helper
    import numpy as np
    if not all(isinstance(x, np.ndarray) for x in list(inputs) + list(outputs)):
        return "a sequence, optional or map value: not a tensor point"
    d = root / name / "test_data_set_0"
    d.mkdir(parents=True)
    (root / name / "model.onnx").write_bytes(case.model.SerializeToString())
    for stem, arrays in (("input", inputs), ("output", outputs)):
        for k, x in enumerate(arrays):
            (d / f"{stem}_{k}.pb").write_bytes(numpy_helper.from_array(x).SerializeToString())
    return None


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    root = out / "onnx" / "backend" / "test" / "data" / "node"
    root.mkdir(parents=True)
    import numpy as np
    import onnx.backend.test.case.node as collector
    real = collector.expect
    written: list[str] = []
    problems: list[dict[str, str]] = []

    def expect(node, inputs, outputs, name, **kwargs):
        if not isinstance(name, str) or not NAME.fullmatch(name) or name in written:
            problems.append({"test": str(name)[:80], "why": "not a test name ONNX writes"})
            return
        if len(written) >= MAX_TESTS:
            problems.append({"test": name, "why": f"more than {MAX_TESTS} tests"})
            return
        before = len(collector._NodeTestCases)
        try:
            real(node, inputs, outputs, name, **kwargs)
            case = collector._NodeTestCases[before]   # the node's own; then its expansions
            why = _write(root, name, case, inputs, outputs)
        except Exception as exc:   # the PR's test, not ours: recorded, the others go on
            why = f"{type(exc).__name__}: {str(exc)[:200]}"
        del collector._NodeTestCases[before:]
        if why is None:
            written.append(name)
        else:
            problems.append({"test": name, "why": why})

    collector.expect = expect
    for f in argv[1:]:
        path = Path(f)
        module = f"onnx.backend.test.case.node.{path.stem}"
        try:
            spec = importlib.util.spec_from_file_location(module, path)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[module] = mod
            with np.errstate(all="ignore"):
                spec.loader.exec_module(mod)
        except BaseException as exc:   # noqa: BLE001 - a broken generator is its finding
            problems.append({"file": path.name, "why": f"{type(exc).__name__}: {str(exc)[:200]}"})
    (out / "manifest.json").write_text(json.dumps({"written": written, "problems": problems}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
