"""Waivers: known disagreements, each with a reason, so a CI gate fails only on new ones.

File format (TOML)::

    [[waiver]]
    op = "Mod"
    parameter = "input 1"          # "input N" / "output N", or the formal name ("B")
    case = "mod_fmod"              # optional: only this case
    reason = "why this is accepted for now"

A waiver that matches no disagreement is *stale* and reported, so the file shrinks as tags
get fixed.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable


class WaiverError(ValueError):
    """A broken waivers file; the message names the file and the entry."""


@dataclass(frozen=True)
class Waiver:
    op: str
    parameter: str
    reason: str
    case: str | None = None

    def matches(self, rec: dict[str, Any], param: dict[str, Any]) -> bool:
        if rec["op"] != self.op or (self.case and rec["case"] != self.case):
            return False
        return self.parameter in (f"{param['io']} {param['index']}", param["name"])

    def label(self) -> str:
        return f"{self.op}{'/' + self.case if self.case else ''} {self.parameter}"


def load(path: str | Path) -> list[Waiver]:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise WaiverError(f"cannot read waivers file {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise WaiverError(f"waivers file {path} is not valid TOML: {exc}") from None
    entries = data.get("waiver", [])
    if not isinstance(entries, list) or set(data) - {"waiver"}:
        raise WaiverError(f"waivers file {path}: expected only [[waiver]] tables")
    out = []
    for n, e in enumerate(entries, 1):
        missing = [k for k in ("op", "parameter", "reason") if not str(e.get(k, "")).strip()]
        if missing:
            raise WaiverError(f"waivers file {path}: waiver #{n} lacks {', '.join(missing)}")
        unknown = set(e) - {"op", "parameter", "reason", "case"}
        if unknown:
            raise WaiverError(f"waivers file {path}: waiver #{n} has unknown key(s) "
                              f"{', '.join(sorted(unknown))}")
        out.append(Waiver(str(e["op"]), str(e["parameter"]), str(e["reason"]), e.get("case")))
    return out


def apply(waivers: Iterable[Waiver], records: list[dict[str, Any]]
          ) -> tuple[dict[tuple[str, str, int], Waiver], list[Waiver]]:
    """(waived disagreements keyed (case, io, index) -> waiver, stale waivers)."""
    waived: dict[tuple[str, str, int], Waiver] = {}
    used: set[Waiver] = set()
    waivers = list(waivers)
    for rec in records:
        for p in rec.get("parameters", []):
            if p["verdict"] != "disagree":
                continue
            for w in waivers:
                if w.matches(rec, p):
                    waived[(rec["case"], p["io"], p["index"])] = w
                    used.add(w)
                    break
    return waived, [w for w in waivers if w not in used]
