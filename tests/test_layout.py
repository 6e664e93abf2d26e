"""The package's layout, read from the modules' own source (``ast``, nothing imported):
data flows one way through the stages, no import cycle, no private name used across
modules, and modules small enough to read."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "torch_prover"

LAYERS = [
    # words every stage may use (conventions: vocab's; compat: 3.11's names on 3.10; inputs:
    # the one reader of an input file, kind and size checked)
    ("compat", "errors", "vocab", "version", "conventions", "inputs"),
    ("case",),                  # Case and its input specs
    ("tags",),                  # the tags under test: onnx.defs, Operators.md
    ("engine",),                # one proof, stage by stage
    ("cases",),                 # the catalogue and its reference-op machinery
    ("output",),                # evidence (the only writer), reports, coverage
    ("preflight", "config"),    # argument / output-location / --tags-from checks; pyproject
    ("batch",),                 # verify-all: the worker pool writes through output.evidence
    ("gate",),                  # verify-all --changed-from: prove what a PR changes; new-case
    ("fix",),                   # fix-tags: verdicts -> a patch against ONNX's C++ sources
    ("pr",),                    # the PR workflow (run a script, generate one)
    ("ci",),                    # CI's languages: annotations, JUnit, step summary, node tests
    ("cli", "__init__", "__main__"),
]
"""Lowest first. A module may import its own layer or a lower one, never a higher one."""

LONG = {
    "output/report.py": "the text and Markdown renderings of a proof and of a batch, which share "
                        "the wrapping, table layout and count words (units) of every format",
    "cases/reference_ops.py": "catalogue cases of ops PyTorch lacks, each a small reference "
                              "function beside its cases (onnx's one-file-per-family style)",
    "batch/pool.py": "the worker pool and its isolation (pipes, parent-death signal, "
                     "timeouts, worker recycling, reaping) beside the cache that must not "
                     "change a verdict",
    "cli.py": "the argument parser of 12 commands, whose help strings are the users' "
              "documentation, and the one place errors become exit codes",
}
"""Modules allowed over MAX_LINES, each with its reason."""
MAX_LINES = 450


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str) -> list[tuple[str, list[str], int]]:
    """(imported torch_prover module, names taken from it, line) for every import in the
    module, at any depth (a function-level import is still a dependency)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names
                    if a.name.split(".")[0] == "torch_prover"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "torch_prover":
                continue
            names = [a.name for a in node.names]
            # ``from . import x``: x is a module of its own
            subs = [n for n in names if f"{target}.{n}" in MODULES]
            out += [(f"{target}.{n}", [], node.lineno) for n in subs]
            rest = [n for n in names if n not in subs]
            if rest or not subs:
                out.append((target, rest, node.lineno))
    return out


def _layer(name: str) -> int:
    parts = name.split(".")
    key = parts[1] if len(parts) > 1 else "__init__"
    for i, layer in enumerate(LAYERS):
        if key in layer:
            return i
    raise AssertionError(f"{name}: in no layer of test_layout.LAYERS; add its package")


def test_every_module_has_a_layer():
    for name in MODULES:
        _layer(name)


def test_no_upward_import():
    bad = [f"{name}:{line} imports {target} ({LAYERS[_layer(target)][0]} is above "
           f"{LAYERS[_layer(name)][0]})"
           for name in MODULES for target, _, line in _imports(name)
           if _layer(target) > _layer(name)]
    assert not bad, "\n".join(bad)


def test_no_import_cycle():
    graph = {name: {t for t, _, _ in _imports(name) if t in MODULES and t != name}
             for name in MODULES}
    # a package's __init__ is imported on the way to its modules: not an edge of its own
    for name in MODULES:
        graph[name] = {t for t in graph[name] if not name.startswith(t + ".")}
    done: set[str] = set()
    path: list[str] = []

    def visit(n: str) -> None:
        if n in path:
            pytest.fail("import cycle: " + " -> ".join(path[path.index(n):] + [n]))
        if n in done:
            return
        path.append(n)
        for m in sorted(graph[n]):
            visit(m)
        path.pop()
        done.add(n)

    for name in sorted(graph):
        visit(name)


def test_no_private_name_imported_across_modules():
    bad = [f"{name}:{line} takes {n} from {target}"
           for name in MODULES for target, names, line in _imports(name)
           for n in names if n.startswith("_") and not n.startswith("__")]
    bad += [f"{name}:{line} imports the private module {target}"
            for name in MODULES for target, _, line in _imports(name)
            if any(p.startswith("_") and not p.startswith("__") for p in target.split("."))]
    assert not bad, "\n".join(bad)


def test_modules_are_short_or_say_why():
    long = {str(p.relative_to(PACKAGE)): n for p in MODULES.values()
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    unexplained = {k: v for k, v in long.items() if k not in LONG}
    assert not unexplained, f"over {MAX_LINES} lines with no reason in LONG: {unexplained}"
    stale = set(LONG) - set(long)
    assert not stale, f"LONG lists modules no longer over {MAX_LINES} lines: {stale}"


def test_case_imports_only_the_lowest_layer():
    """case.py takes its words (vocab) and its error (errors.CaseError, which it raises for an
    invalid Case, Expect or Spec) from the lowest layer, nothing else: a case module must
    load without the engine. (Allowing vocab alone once cost the CaseError import, and every
    invalid case became a NameError.)"""
    assert {t for t, _, _ in _imports("torch_prover.case")} <= {"torch_prover.vocab",
                                                                 "torch_prover.errors",
                                                                 "torch_prover.conventions"}
