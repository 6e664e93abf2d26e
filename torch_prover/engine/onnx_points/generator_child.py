"""The child process that runs a PR's node-test generators (``generators.py`` starts it).

``python -I generator_child.py OUT SPEC``: each of SPEC's ``files`` (a PR's
``onnx/backend/test/case/node/<op>.py``) is loaded as ONNX's collector loads it -- its
``Base`` subclasses' ``export*`` methods run when the class is created, each calling
``expect`` -- with ``expect`` wrapped so that every test it makes is written under
``OUT/onnx/backend/test/data/node/test_<name>/`` in the layout ONNX committed until #7959
(``model.onnx``, ``test_data_set_0/input_K.pb``, ``output_K.pb``), and what failed is listed
in ``OUT/manifest.json``. The parent reads that tree as any checkout's committed tests
(``source.from_checkout``), as hostile data: this process ran the PR's code.

An op the installed onnx lacks (SPEC's ``new``: its schema version and tags from the PR's
docs, and the PR's reference implementation ``onnx/reference/ops/op_<op>.py``) has no
schema here, so ONNX's ``expect`` cannot build its tests: they are built here (one node,
the value infos from the arrays, the opset the generator names or the version), and
measured here too -- the runtime of its numeric witness is the PR's ``OpRun`` class, which
only this process loads -- with torch_prover's own ``measure_test``; the witnesses go to
``OUT/measured.json`` (data the parent checks again).
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


def _load(path: Path, module: str):
    spec = importlib.util.spec_from_file_location(module, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[module] = mod
    spec.loader.exec_module(mod)
    return mod


def _op_class(mod, op: str, version: int):
    """The PR's ``OpRun`` class of ``op``: ``Op``, or the newest ``Op_N`` with N <= version."""
    from onnx.reference.op_run import OpRun
    found = {}
    for name, cls in vars(mod).items():
        if isinstance(cls, type) and issubclass(cls, OpRun) and cls is not OpRun:
            base, _, n = name.partition("_")
            if name == op:
                found[0] = cls
            elif base == op and n.isdigit() and int(n) <= version:
                found[int(n)] = cls
    return found[max(found)] if found else None


def _model(node, inputs, outputs, opset: int):
    """One node's model, typed from the arrays (what ``expect`` builds, without a schema)."""
    import onnx
    from onnx import helper
    vi = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)
          for n, x in zip([i for i in node.input if i], inputs)]
    vo = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(y.dtype), y.shape)
          for n, y in zip(node.output, outputs)]
    graph = helper.make_graph([node], "test", vi, vo)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             producer_name="backend-test", ir_version=onnx.IR_VERSION)


class _New:
    """An op the installed onnx lacks: its tests built and measured here."""

    def __init__(self, spec: dict, problems: list):
        from onnx.reference.op_run import OpRun  # noqa: F401 - the PR's class derives from it
        self.spec, self.classes, self.tests = spec, {}, {}
        for op, s in spec.items():
            ref = s.get("reference")
            try:
                cls = _op_class(_load(Path(ref), f"onnx.reference.ops.{Path(ref).stem}"),
                                op, s["version"]) if ref else None
            except BaseException as exc:   # noqa: BLE001 - the PR's reference, its finding
                problems.append({"file": Path(ref).name, "why": f"{type(exc).__name__}: "
                                                                 f"{str(exc)[:200]}"})
                cls = None
            if cls is None:
                problems.append({"file": op, "why": "no reference implementation of it in "
                                 "the PR (onnx/reference/ops): its tests are not measured"})
            else:
                self.classes[op] = cls

    def make(self, node, inputs, outputs, name, kwargs):
        op = node.op_type
        imports = [o.version for o in kwargs.get("opset_imports") or ()
                   if o.domain in ("", "ai.onnx")]
        opset = imports[0] if imports else self.spec[op]["version"]
        self.tests.setdefault(op, []).append((name, _model(node, inputs, outputs, opset),
                                              opset, inputs, outputs))

    def measure(self, per_version: int) -> list[dict]:
        """Each new op's tests, ``choose``-n as the parent chooses, measured with the PR's
        class as onnx.reference's implementation of the op."""
        if not self.classes:
            return []
        import onnx.reference as reference
        from torch_prover.engine.onnx_points import witness as w
        from torch_prover.engine.onnx_points.source import NodeTest
        from torch_prover.tags.schema import Formal, SchemaTags
        classes = list(self.classes.values())
        real = reference.ReferenceEvaluator

        class WithThePRs(real):
            def __init__(self, proto, *a, new_ops=None, **k):
                super().__init__(proto, *a, new_ops=list(new_ops or []) + classes, **k)
        reference.ReferenceEvaluator = WithThePRs
        tags = {op: SchemaTags(op, "", s["version"], *(
            tuple(Formal(io, k, f["name"], f["tag"], f["option"], tuple(f["types"]))
                  for k, f in enumerate(s["tags"][io])) for io in ("input", "output")))
            for op, s in self.spec.items()}
        real_tags = w.schema_tags
        w.schema_tags = lambda op, opset, domain="": tags[op] if op in tags else \
            real_tags(op, opset, domain)
        out = []
        for op, made in self.tests.items():
            if op not in self.classes:
                continue
            version = self.spec[op]["version"]
            tests = [NodeTest(name, op, opset, version, m.SerializeToString(),
                              ((tuple(ins), tuple(outs)),)) for name, m, opset, ins, outs in made]
            for t in w.choose(tests, per_version):
                got = w.measure_test(t, body=False).as_dict()
                if got["runtime"] == "reference":
                    got["runtime"] = f"the PR's reference implementation ({op})"
                out.append(got)
        return out


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    spec = json.loads(Path(argv[1]).read_text())
    root = out / "onnx" / "backend" / "test" / "data" / "node"
    root.mkdir(parents=True)
    import numpy as np
    import onnx.backend.test.case.node as collector
    real = collector.expect
    written: list[str] = []
    problems: list[dict[str, str]] = []
    new = _New(spec.get("new") or {}, problems)

    def expect(node, inputs, outputs, name, **kwargs):
        if not isinstance(name, str) or not NAME.fullmatch(name) or name in written:
            problems.append({"test": str(name)[:80], "why": "not a test name ONNX writes"})
            return
        if len(written) >= MAX_TESTS:
            problems.append({"test": name, "why": f"more than {MAX_TESTS} tests"})
            return
        if node.op_type in new.spec:
            try:
                new.make(node, inputs, outputs, name, kwargs)
                written.append(name)
            except Exception as exc:   # the PR's test: recorded, the others go on
                problems.append({"test": name, "why": f"{type(exc).__name__}: {str(exc)[:200]}"})
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
    for f in spec["files"]:
        path = Path(f)
        try:
            with np.errstate(all="ignore"):
                _load(path, f"onnx.backend.test.case.node.{path.stem}")
        except BaseException as exc:   # noqa: BLE001 - a broken generator is its finding
            problems.append({"file": path.name, "why": f"{type(exc).__name__}: {str(exc)[:200]}"})
    try:
        measured = new.measure(int(spec.get("per_version", 4)))
    except Exception as exc:   # the PR's reference failing our witness: named, nothing used
        problems.append({"file": "reference", "why": f"{type(exc).__name__}: {str(exc)[:200]}"})
        measured = []
    (out / "measured.json").write_text(json.dumps(measured))
    (out / "manifest.json").write_text(json.dumps({"written": written, "problems": problems}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
