"""ONNX's node tests, read as points: per test, its one node, inputs, expected outputs,
opset and the schema version in force there -- or why it gives none (``vocab.PointsSkip``).

Two sources: the installed onnx (``onnx.backend.test.case.node.collect_testcases``, which
builds every case in Python; the wheel ships no data) and an ONNX checkout's committed
``onnx/backend/test/data/node/test_*/`` (``model.onnx``, ``test_data_set_*/input_*.pb``,
``output_*.pb``), which a build-free PR gate can read -- each file through the bounded
reader (``inputs.read_bytes``: a regular file, no symlink, 64 MiB at most), the model from
its bytes (never its external data). A test counts only when its model is
one ai.onnx node on tensors: a multi-node or ``_expanded`` model is the op's composition,
not its node, and a sampling op's outputs are one realization (skipped, with the reason).
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import io
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Iterable, Sequence

import numpy as np
import onnx
import onnx.defs
import onnx.numpy_helper
from google.protobuf.message import DecodeError

from ...errors import ProverError
from ...inputs import Bound, InputError, read_bytes
from ...vocab import PointsSkip
from ..versions.runtimes import model_opset

DEFAULT_RTOL, DEFAULT_ATOL = 1e-3, 1e-7
"""ONNX's backend runner's tolerances when a test names none (a checkout's data does not)."""

NODE_DATA = Path("onnx") / "backend" / "test" / "data" / "node"
"""Where an ONNX checkout commits its generated node tests."""


class NodeTestsError(ProverError):
    """An ONNX checkout without node test data (``--onnx-src``): the message says where it looked."""


@dataclass(frozen=True)
class NodeTest:
    """One of ONNX's node tests, usable as points: its single node's ``op``, the model's
    ``opset`` and the schema ``version`` in force there; ``data_sets`` pairs the inputs
    (by graph input) with the expected outputs (by graph output), each a point."""

    name: str
    op: str
    opset: int
    version: int
    model: bytes
    data_sets: tuple[tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]], ...]
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL

    def proto(self) -> onnx.ModelProto:
        return onnx.load_model_from_string(self.model)


@dataclass(frozen=True)
class Skipped:
    """A node test that gives no points, and why (``op`` empty when no node names one)."""

    name: str
    op: str
    reason: PointsSkip
    detail: str


def _is_tensor(vi: onnx.ValueInfoProto) -> bool:
    return vi.type.HasField("tensor_type")


def classify(name: str, model: onnx.ModelProto) -> tuple[str, int, int] | Skipped:
    """``(op, opset, schema version)`` of a usable test's node, or why it is skipped."""
    nodes = model.graph.node
    op = nodes[0].op_type if len(nodes) == 1 else ""
    if "_expanded" in name:
        return Skipped(name, op, PointsSkip.EXPANDED,
                       "the op's function body expanded into its nodes, not the op's node")
    if len(nodes) != 1:
        return Skipped(name, op, PointsSkip.MULTI_NODE,
                       f"{len(nodes)} nodes: the model composes ops, it is not one op's node")
    node = nodes[0]
    if node.domain not in ("", "ai.onnx"):
        return Skipped(name, op, PointsSkip.OTHER_DOMAIN, f"domain {node.domain}, not ai.onnx")
    if not all(_is_tensor(v) for v in list(model.graph.input) + list(model.graph.output)):
        return Skipped(name, op, PointsSkip.NOT_TENSOR,
                       "a sequence, optional or map input or output: not a tensor point")
    opset = model_opset(model)
    try:
        schema = onnx.defs.get_schema(op, opset) if opset else onnx.defs.get_schema(op)
    except onnx.defs.SchemaError:
        return Skipped(name, op, PointsSkip.NO_SCHEMA, f"onnx.defs has no {op} at opset {opset}")
    if "seed" in schema.attributes:
        return Skipped(name, op, PointsSkip.RANDOM,
                       f"{op} samples random numbers: its outputs are one realization")
    return op, int(opset or onnx.defs.onnx_opset_version()), schema.since_version


def _test(name: str, model: onnx.ModelProto, data_sets: Iterable, rtol: float, atol: float
          ) -> NodeTest | Skipped:
    what = classify(name, model)
    if isinstance(what, Skipped):
        return what
    op, opset, version = what
    sets = tuple((tuple(np.asarray(x) for x in ins), tuple(np.asarray(y) for y in outs))
                 for ins, outs in data_sets)
    return NodeTest(name, op, opset, version, model.SerializeToString(), sets,
                    float(rtol), float(atol))


def generator_modules() -> list[tuple[str, Path]]:
    """Every module ``collect_testcases`` imports (``onnx.backend.test.case.utils.
    import_recursive``'s walk: ``ai_onnx_ml`` only in an ONNX_ML build), with its source file."""
    import pkgutil
    import onnx.backend.test.case.node as node
    found: list[tuple[str, Path]] = []

    def walk(path: Path, package: str) -> None:
        for _, name, ispkg in pkgutil.iter_modules([str(path)]):
            full = f"{package}.{name}"
            if not onnx.ONNX_ML and full.startswith(f"{node.__name__}.ai_onnx_ml"):
                continue
            if ispkg:
                found.append((full, path / name / "__init__.py"))
                walk(path / name, full)
            else:
                found.append((full, path / f"{name}.py"))
    walk(Path(node.__file__).parent, node.__name__)
    return found


def modules_naming(ops: Collection[str]) -> list[str]:
    """The generator modules whose source names one of ``ops`` as a word: a node test's op is
    spelled in its module (``make_node("Relu", ...)``, or the text ``onnx.parser`` reads, as
    scan.py's ``Scan (...)``), so importing these runs every test of ``ops`` -- and, in the
    same modules, a few others, filtered out after. tests/test_onnx_points_selection.py holds this
    against each module's actual tests."""
    return [m for m, words in _words() if not words.isdisjoint(ops)]


@functools.lru_cache(maxsize=1)
def _words() -> tuple[tuple[str, frozenset[str]], ...]:
    """Each generator module's capitalised words (an op's name is one), read once."""
    return tuple((m, frozenset(re.findall(r"\b[A-Z]\w*", path.read_text(encoding="utf-8"))))
                 for m, path in generator_modules())


def _op_of(case) -> str:
    nodes = case.model.graph.node
    return nodes[0].op_type if len(nodes) == 1 else ""


@contextlib.contextmanager
def without_snippets():
    """Importing onnx's generator modules also reads each generator's own source
    (``base.process_snippet``: ``inspect.getsource``, ~10% of collecting) into ``Snippets``,
    which only onnx's docs read; each test is built after it, by the generator alone
    (``np.random.seed(0)`` first). For a process that collects the tests and nothing else
    (verify-all's beside the batch): the same tests, no snippets."""
    from onnx.backend.test.case import base
    stock = base.process_snippet
    base.process_snippet = lambda op_name, name, export: (name, "")
    try:
        yield
    finally:
        base.process_snippet = stock


@contextlib.contextmanager
def _building():
    """How onnx's generators run here: their prints and warnings kept out of the output."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            yield


def import_generators(modules: Sequence[str]) -> None:
    """Import ``modules`` (generator modules, in this order), which builds their tests into
    ``node._NodeTestCases``: what ``installed`` does, also done ahead of it
    (batch/points_early.py), after which ``installed`` imports nothing again."""
    with _building():
        for module in modules:
            importlib.import_module(module)


def installed(ops: Collection[str] | None = None) -> list[NodeTest | Skipped]:
    """The installed onnx's node tests, built by its own generators (they print and warn
    about the values they compute: kept out of the run's output). ``ops``: only those ops'
    tests (its one-node tests; an ``_expanded`` test, the op's function body, is left out:
    it gives no points, and its one node, when it has one, is another op's -- CastLike's
    body is a Cast), built by importing only the modules that name them -- a module's tests are built when
    it is imported (``onnx.backend.test.case.base._Exporter``, each generator after
    ``np.random.seed(0)``), so they are the same tests the whole collection builds."""
    from onnx.backend.test.case import node
    with _building():
        if ops is None:
            cases = node.collect_testcases()
        else:
            import_generators(modules_naming(ops))
            # every module imported so far in this process has added its tests here
            cases = [c for c in node._NodeTestCases if c.model is not None
                     and "_expanded" not in c.name and _op_of(c) in ops]
    return [_test(c.name, c.model, c.data_sets, c.rtol, c.atol)
            for c in cases if c.model is not None]


def _read(path: Path) -> bytes:
    """A checkout's node-test file (a PR's, in CI), through the one bounded reader: a
    regular file, no symlink, at most ``Bound.NODE_TEST`` -- a FIFO, a device or a huge
    file is refused before a byte is read (``InputError``)."""
    return read_bytes(path, Bound.NODE_TEST, follow=False)


def _read_tensor(path: Path) -> np.ndarray:
    t = onnx.TensorProto()
    t.ParseFromString(_read(path))
    return onnx.numpy_helper.to_array(t)


def _numbered(d: Path, stem: str) -> list[Path]:
    return sorted(d.glob(f"{stem}_*.pb"), key=lambda p: int(p.stem.rpartition("_")[2]))


def _model(path: Path) -> onnx.ModelProto:
    """A checkout's ``model.onnx``, never with its external data: a PR controls that file,
    and its ``location`` may name ``/etc/passwd``, ``../..`` or a symlink out of the tree
    (onnx refuses those with a ValidationError, but it is the reading we refuse). A model
    that keeps a tensor outside itself is no node test's: ValueError, the test unreadable."""
    from onnx.external_data_helper import _get_all_tensors, uses_external_data
    model = onnx.load_model_from_string(_read(path))   # bounded, from its bytes
    if any(uses_external_data(t) for t in _get_all_tensors(model)):
        raise ValueError("its model keeps tensor data in an external file, which is not read")
    return model


def checkout_dir(checkout: Path) -> Path:
    """The node test data of an ONNX checkout, or a one-line error saying where it looked."""
    d = Path(checkout) / NODE_DATA
    if not d.is_dir():
        raise NodeTestsError(f"{checkout}: no {NODE_DATA} (an ONNX checkout commits its node "
                             "tests there)")
    return d


def from_checkout(checkout: Path, names: Sequence[str] | None = None) -> list[NodeTest | Skipped]:
    """The node tests an ONNX checkout commits (``names``: only those test directories)."""
    root = checkout_dir(checkout)
    found: list[NodeTest | Skipped] = []
    for d in sorted(p for p in root.glob("test_*") if p.is_dir()):
        name = d.name
        if names is not None and name not in names:
            continue
        if d.is_symlink():
            found.append(Skipped(name, "", PointsSkip.UNREADABLE,
                                 "the test directory is a symlink: only the checkout's own "
                                 "files are read"))
            continue
        try:
            model = _model(d / "model.onnx")
            what = classify(name, model)
            if isinstance(what, Skipped):
                found.append(what)
                continue
            sets = [([_read_tensor(p) for p in _numbered(s, "input")],
                     [_read_tensor(p) for p in _numbered(s, "output")])
                    for s in sorted(d.glob("test_data_set_*")) if s.is_dir()]
        except InputError as exc:
            found.append(Skipped(name, "", PointsSkip.UNREADABLE,
                                 f"{Path(exc.path).relative_to(d)}: {exc.problem}"))
            continue
        except (OSError, ValueError, DecodeError) as exc:
            found.append(Skipped(name, "", PointsSkip.UNREADABLE, f"{type(exc).__name__}: {exc}"))
            continue
        found.append(_test(name, model, sets, DEFAULT_RTOL, DEFAULT_ATOL))
    return found
