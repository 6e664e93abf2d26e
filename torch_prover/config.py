"""``[tool.torch-prover]`` in pyproject.toml: a project's defaults for the command line.

A project (ONNX's repository, say) keeps its waivers, tag source, worker count and cache
directory beside its other tools' settings, and every ``torch-prover`` run inside it uses
them::

    [tool.torch-prover]
    waivers = ".torch-prover/waivers.toml"
    tags-from = "docs/Changelog.md"
    jobs = 4
    cache-dir = ".cache/torch-prover"

Found as ruff finds its settings: the nearest ``pyproject.toml`` at or above the current
directory that has a ``[tool.torch-prover]`` table (a file without one is passed over, so
torch_prover's own pyproject.toml, which has none, changes nothing). A flag on the command
line overrides the file. Relative paths resolve against the file's directory, so a run
from a subdirectory reads the same files. An unknown key, a wrong type or a value out of
range is a one-line exit 2 naming the file and the key, before any work. Not a key:
``changed-from`` -- the base of a PR is a file each CI run fetches, not a setting, and a
plain ``verify-all`` in that project would silently become PR mode.
"""
from __future__ import annotations

import difflib
from .compat import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .errors import UsageError
from .inputs import Bound, read_text, shown, utf8_name

TABLE = "torch-prover"


@dataclass(frozen=True)
class Key:
    dest: str          # the argparse destination it sets (verify-all's spelling)
    kind: str          # "path" | "count"
    what: str          # for the help and the errors


KEYS: dict[str, Key] = {
    "waivers": Key("waivers", "path", "the waivers file (--waivers)"),
    "tags-from": Key("tags_from", "path", "the tag source, an ONNX docs file (--tags-from)"),
    "jobs": Key("jobs", "count", "parallel workers (--jobs)"),
    "cache-dir": Key("cache_dir", "path", "the result cache directory (--cache-dir)"),
}


@dataclass(frozen=True)
class Config:
    """The settings found (``path`` None: no file has the table), paths resolved."""

    path: Path | None = None
    values: Mapping[str, Any] = field(default_factory=dict)   # by argparse destination

    def get(self, dest: str, default: Any = None) -> Any:
        return self.values.get(dest, default)


def _table(path: Path) -> dict[str, Any] | None:
    """The file's ``[tool.torch-prover]`` table, or None when it has none. The text is
    parsed only when it names the table (any TOML spelling of it holds ``torch-prover``):
    another project's broken pyproject.toml is not ours to judge."""
    text = read_text(path, Bound.TOML)
    if TABLE not in text:
        return None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML ({exc})") from None
    table = doc.get("tool", {}).get(TABLE) if isinstance(doc.get("tool"), dict) else None
    if table is not None and not isinstance(table, dict):
        raise UsageError(f"{path}: [tool.{TABLE}] must be a table, not a "
                         f"{type(table).__name__}")
    return table


def candidates(start: Path) -> list[Path]:
    """Every pyproject.toml at or above ``start``, nearest first: the files ``find`` reads
    (and ``preflight.in_checkout`` the nearest), so inputs of every command
    (``preflight.outputs_checked``)."""
    here = Path(start).absolute()
    return [d / "pyproject.toml" for d in (here, *here.parents)
            if (d / "pyproject.toml").is_file()]


def find(start: Path) -> tuple[Path, dict[str, Any]] | None:
    """The nearest pyproject.toml at or above ``start`` with the table, and the table."""
    for candidate in candidates(start):
        table = _table(candidate)
        if table is not None:
            return candidate, table
    return None


def _value(path: Path, name: str, key: Key, raw: Any) -> Any:
    where = f"{shown(path)}: [tool.{TABLE}] {name}"
    if key.kind == "count":
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise UsageError(f"{where}: must be an integer ({key.what}), not {raw!r}")
        if raw < 1:
            raise UsageError(f"{where} = {raw}: must be at least 1")
        return raw
    if not isinstance(raw, str):
        raise UsageError(f"{where}: must be a string, a path ({key.what}), not {raw!r}")
    if not raw.strip():
        raise UsageError(f"{where}: empty path")
    if "\0" in raw:
        raise UsageError(f"{where} = {raw!r}: holds a NUL character, which no path can")
    try:
        expanded = Path(raw).expanduser()
    except RuntimeError:   # ~user naming no user of this machine (or no home to go to)
        raise UsageError(f"{where} = {raw!r}: {raw.split('/')[0]} is no home directory on "
                         "this machine; give a path") from None
    return utf8_name(path.parent / expanded, where)


def load(start: Path | None = None) -> Config:
    """The settings of the nearest pyproject.toml with the table (``start``: the current
    directory); UsageError, naming file and key, for anything it cannot use."""
    found = find(start if start is not None else Path.cwd())
    if found is None:
        return Config()
    path, table = found
    values = {}
    for name, raw in table.items():
        key = KEYS.get(name)
        if key is None:
            close = difflib.get_close_matches(name, KEYS, n=1, cutoff=0.6)
            raise UsageError(f"{path}: [tool.{TABLE}] unknown key {name!r}"
                             + (f" (did you mean {close[0]}?)" if close else "")
                             + f"; the keys are {', '.join(KEYS)}")
        values[key.dest] = _value(path, name, key, raw)
    return Config(path, values)


def apply(args: Any, config: Config, defaults: Mapping[str, Any],
          skip: frozenset[str] = frozenset()) -> None:
    """Fill each option of ``args`` the command line left unset (None) from ``config``,
    else from ``defaults``: a flag overrides the file, the file the built-in default.
    ``skip``: destinations a flag of this run overrides otherwise (``--changed-from`` sets
    the tags under test, so the file's ``tags-from`` does not apply)."""
    for dest in {k.dest for k in KEYS.values()} | set(defaults):
        if hasattr(args, dest) and getattr(args, dest) is None:
            value = defaults.get(dest) if dest in skip else config.get(dest, defaults.get(dest))
            setattr(args, dest, value)
