"""The values a command runs with that its flags may leave unset: ``[tool.torch-prover]`` of
the nearest pyproject.toml under the flags, the result cache's place, where evidence goes
without ``--out``, and which ``--onnx-src`` gives ONNX's points."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from .. import preflight


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "torch-prover"


def configure(args: argparse.Namespace) -> None:
    """``[tool.torch-prover]`` of the nearest pyproject.toml (config.py) under the flags:
    each option the command line left unset takes the file's value, else the built-in
    default. Checked before any work (exit 2 naming file and key)."""
    from .. import config
    found = config.load()
    args.config = found
    config.apply(args, found, {"jobs": max(1, min(2, os.cpu_count() or 1)),
                               "cache_dir": str(default_cache_dir())},
                 skip=frozenset({"tags_from"}) if getattr(args, "changed_from", None)
                 else frozenset())


def cache_dir(args: argparse.Namespace) -> Path:
    """The result cache of a command without ``--cache-dir`` (tags --explain, fix-tags)."""
    return Path(args.config.get("cache_dir") or default_cache_dir())


def default_out(args: argparse.Namespace) -> str | None:
    """``prove`` and ``verify-all`` without ``--out``: ./models in a torch_prover checkout
    (the quickstart keeps its committed evidence current); anywhere else no evidence is
    written -- a run in another project's directory must not leave a ./models there -- and
    the returned line (shown once the arguments are checked) says how to keep it."""
    if args.out is not None or args.no_write:
        return None
    if preflight.in_checkout(Path.cwd()):
        args.out = "models"
        return None
    args.no_write = True
    return (f"torch-prover {args.command}: evidence not written (not in a torch_prover "
            "checkout); pass --out DIR to keep model.onnx, test data and proof.json")


def node_tests_src(args: argparse.Namespace) -> str | None:
    """--onnx-src when the checkout commits node tests (ONNX's points come from it)."""
    return args.onnx_src if args.onnx_src and preflight.has_node_tests(args.onnx_src) else None
