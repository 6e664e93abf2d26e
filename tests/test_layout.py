"""The package's layout, read from the modules' own source (``ast``, nothing imported):
data flows one way through the stages, no import cycle, no private name used across
modules, modules small enough to read, and engine/'s packages below its pipeline, meeting
each other only through the interfaces declared here."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from torch_prover.compat import tomllib

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
    "cases/reference_ops.py": "catalogue cases of ops PyTorch lacks, each a small reference "
                              "function beside its cases (onnx's one-file-per-family style)",
}
"""Modules allowed over MAX_LINES, each with its reason."""
MAX_LINES = 450

ENGINE = "torch_prover.engine"
ENGINE_TOP_MAX = 12
"""Files at engine/'s top (its __init__ included): the pipeline, readable at a glance."""

ENGINE_PACKAGES = {
    "attribution": "which case tensor is which node input and output (stage 3)",
    "numeric": "the whole model's checks and the node's own derivative (stage 4)",
    "bodies": "the function-body witness",
    "rules": "the verdict table and the by-type rule (stage 5)",
    "versions": "which node stands for which schema version, and where it runs",
    "onnx_points": "ONNX's node tests as witness points (verify-all's)",
}
"""engine/'s packages: each a whole the pipeline (engine/'s top modules) calls into. None
imports the pipeline; one imports another only through an interface below."""

ENGINE_INTERFACES = {
    ("versions", "attribution.mapping"):
        "next_opset walks a node's subgraphs with mapping.subgraphs, the one place that "
        "knows a graph attribute is g or graphs",
    ("versions", "attribution.graph_values"):
        "ModelView, the adapters and fidelity read a Constant's value and inferred shapes "
        "as folding does (one reader)",
    ("numeric", "attribution.mapping"):
        "isolate lifts a node's subgraph captures and floating inputs as attribution reads "
        "them (subgraph_names, is_float_dtype)",
    ("numeric", "versions.runtimes"):
        "a number counts for schema version V only where a runtime implementing V computed it",
    ("numeric", "versions.float32_copy"):
        "where that runtime lacks the float64 kernel, the model runs as its float32 copy",
    ("onnx_points", "versions.runtimes"):
        "a node test's opset and the schema version in force there",
    ("onnx_points", "numeric.node_witness"):
        "a test is measured by the catalogue's own node witness",
    ("onnx_points", "numeric.numeric"):
        "... in the runtime the catalogue would choose (choose_runtime)",
    ("onnx_points", "numeric.redraw"):
        "... and, flat at a test's points, again in float64 and at re-drawn values, as run "
        "does (issue 41)",
    ("onnx_points", "bodies.function_body"):
        "the function body built for the test's node",
    ("onnx_points", "rules.verdict"):
        "what an outcome says, by the catalogue's own table (NUMERIC_SAYS, BODY_SAYS)",
}
"""(importing package, imported module) pairs allowed between engine's packages, each
with why; the importing package's __init__ docstring names each of its interfaces."""


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


def test_nothing_imports_the_command_line():
    """cli/ is the top of the house: it may import the library, and only ``__main__`` and
    the console script (``[project.scripts]``) import it -- a library module that reached
    into cli would make the library depend on argparse's Namespace."""
    bad = [f"{name}:{line} imports {target}"
           for name in MODULES if not (name == "torch_prover.__main__" or _in_cli(name))
           for target, _, line in _imports(name) if _in_cli(target)]
    assert not bad, "\n".join(bad)
    scripts = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]["scripts"]
    assert {entry.partition(":")[0] for entry in scripts.values()} == {"torch_prover.cli"}


def _in_cli(name: str) -> bool:
    return name == "torch_prover.cli" or name.startswith("torch_prover.cli.")


COMMAND_PACKAGE = "torch_prover.cli.commands"


def test_cli_is_one_module_per_command():
    """A command module (cli/commands/) imports the library and cli's shared modules, never
    another command nor the composition in cli/__init__.py; a shared module imports no
    command; only the composition, through commands/__init__.py, knows every command."""
    commands = {n for n in MODULES if n.startswith(COMMAND_PACKAGE + ".")}
    shared = {n for n in MODULES if _in_cli(n) and n != "torch_prover.cli"
              and n != COMMAND_PACKAGE and n not in commands}
    assert commands and shared
    names = {n: _assigned(n, "NAME") for n in commands}
    misnamed = {n: v for n, v in names.items() if n.rpartition(".")[2] != str(v).replace("-", "_")}
    assert not misnamed, f"a command module is named after its command: {misnamed}"
    bad = [f"{name}:{line} imports {target}"
           for name in commands for target, _, line in _imports(name)
           if target in commands or target in ("torch_prover.cli", COMMAND_PACKAGE)]
    bad += [f"{name}:{line} imports {target}"
            for name in shared for target, _, line in _imports(name)
            if target in commands or target in ("torch_prover.cli", COMMAND_PACKAGE)]
    assert not bad, "\n".join(bad)


def _assigned(name: str, variable: str):
    """The literal a module assigns to a top-level name (None when it assigns none)."""
    for node in ast.parse(MODULES[name].read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == variable
                                                for t in node.targets):
            return ast.literal_eval(node.value)
    return None


def _engine_package(name: str) -> str | None:
    """The engine package a module is in, None for the pipeline (engine/'s top modules and
    its __init__); raises for a module outside the engine."""
    assert name == ENGINE or name.startswith(ENGINE + "."), name
    parts = name.split(".")
    return parts[2] if len(parts) > 3 or (len(parts) == 3 and parts[2] in ENGINE_PACKAGES) \
        else None


def _engine_imports() -> list[tuple[str, str, int]]:
    """(importer, imported engine module, line) for every import within the engine."""
    return [(name, target, line) for name in MODULES if name.startswith(ENGINE + ".")
            for target, _, line in _imports(name)
            if target == ENGINE or target.startswith(ENGINE + ".")]


def test_engine_top_is_short():
    top = sorted(p.name for p in (PACKAGE / "engine").glob("*.py"))
    assert len(top) <= ENGINE_TOP_MAX, (f"engine/ has {len(top)} modules at its top "
                                        f"(at most {ENGINE_TOP_MAX}): {top}")


def test_engine_packages_are_declared_and_say_what_they_hold():
    found = {p.parent.name for p in (PACKAGE / "engine").glob("*/__init__.py")}
    assert found == set(ENGINE_PACKAGES), "declare engine/'s packages in ENGINE_PACKAGES"
    for package in ENGINE_PACKAGES:
        init = PACKAGE / "engine" / package / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and "May import" in doc, f"engine/{package}/__init__.py: say what it " \
                                            "holds and what it may import"
        named = [m for (p, m) in ENGINE_INTERFACES if p == package]
        missing = [m for m in named if f"``{m}``" not in doc]
        assert not missing, f"engine/{package}/__init__.py names no interface {missing}"


def test_no_engine_package_imports_the_pipeline():
    bad = [f"{name}:{line} imports {target}, a module of the pipeline above it"
           for name, target, line in _engine_imports()
           if _engine_package(name) is not None and _engine_package(target) is None]
    assert not bad, "\n".join(bad)


def test_engine_packages_meet_only_through_interfaces():
    used = set()
    bad = []
    for name, target, line in _engine_imports():
        mine, theirs = _engine_package(name), _engine_package(target)
        if mine is None or theirs is None or mine == theirs:
            continue
        key = (mine, target.removeprefix(ENGINE + "."))
        used.add(key)
        if key not in ENGINE_INTERFACES:
            bad.append(f"{name}:{line} imports {target}: not an interface of {mine} "
                       "(ENGINE_INTERFACES)")
    assert not bad, "\n".join(bad)
    assert not set(ENGINE_INTERFACES) - used, \
        f"ENGINE_INTERFACES lists imports no module makes: {set(ENGINE_INTERFACES) - used}"
