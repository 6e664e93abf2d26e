"""Waivers: known disagreements, each with a reason, so a CI gate fails only on new ones.

File format (TOML)::

    [[waiver]]
    op = "Mod"
    parameter = "input 1"          # "input N" / "output N", or the formal name ("B")
    case = "mod_fmod"              # optional: only this case
    reason = "why this is accepted for now"

A waiver that matches no disagreement of an op the run proved is *stale* and reported,
so the file shrinks as tags get fixed. Every entry is checked before any work: its op must
exist, its parameter must name a formal parameter of that op (in some schema version), its
case (if given) must be one of the op's catalogue cases -- with a "did you mean".
"""
from __future__ import annotations

import difflib
from ..compat import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..errors import ProverError
from ..inputs import Bound, InputError, read_text, shown


class WaiverError(ProverError, ValueError):
    """A broken waivers file; the message names the file and the entry."""


@dataclass(frozen=True)
class Waiver:
    op: str
    parameter: str
    reason: str
    case: str | None = None

    def matches(self, rec: dict[str, Any], param: dict[str, Any]) -> bool:
        # a variant (``<case>@<opset>``, verify-all --versions) is its case at another opset
        if rec["op"] != self.op or (self.case and (rec.get("variant_of") or rec["case"])
                                    != self.case):
            return False
        return self.parameter in (f"{param['io']} {param['index']}", param["name"])

    def as_dict(self) -> dict[str, Any]:
        """The waiver as a shard report carries it, for ``merge`` (``from_dict``)."""
        return {"op": self.op, "parameter": self.parameter, "reason": self.reason,
                "case": self.case}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Waiver":
        return cls(d["op"], d["parameter"], d["reason"], d.get("case"))

    def label(self) -> str:
        return f"{self.op}{'/' + self.case if self.case else ''} {self.parameter}"


def load(path: str | Path) -> list[Waiver]:
    path = Path(path)
    try:   # utf-8-sig: a byte-order mark, as some editors write, is not a statement
        data = tomllib.loads(read_text(path, Bound.TOML, encoding="utf-8-sig"))
    except InputError as exc:
        raise WaiverError(f"waivers file {shown(path)}: {exc.problem}") from None
    except tomllib.TOMLDecodeError as exc:
        raise WaiverError(f"waivers file {path} is not valid TOML: {exc}") from None
    except RecursionError:
        raise WaiverError(f"waivers file {path}: nested too deeply to be a waivers file "
                          "(expected only [[waiver]] tables)") from None
    entries = data.get("waiver", [])
    if not isinstance(entries, list) or set(data) - {"waiver"}:
        raise WaiverError(f"waivers file {path}: expected only [[waiver]] tables")
    out = []
    for n, e in enumerate(entries, 1):
        if not isinstance(e, dict):
            raise WaiverError(f"waivers file {path}: waiver #{n} is not a [[waiver]] table")
        unknown = set(e) - {"op", "parameter", "reason", "case"}
        if unknown:
            raise WaiverError(f"waivers file {path}: waiver #{n} has unknown key(s) "
                              f"{', '.join(sorted(unknown))}")
        wrong = [k for k, v in e.items() if not isinstance(v, str)]
        if wrong:
            raise WaiverError(f"waivers file {path}: waiver #{n}: {', '.join(sorted(wrong))} "
                              "must be a string")
        missing = [k for k in ("op", "parameter", "reason") if not e.get(k, "").strip()]
        if missing:
            raise WaiverError(f"waivers file {path}: waiver #{n} lacks {', '.join(missing)}")
        out.append(Waiver(e["op"].strip(), e["parameter"].strip(), e["reason"].strip(),
                          e.get("case")))
    return out


def _hint(name: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.5)
    return f"; did you mean {', '.join(close)}?" if close else ""


def _parameters() -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Every ai.onnx op's formal parameter names and slots (``input N`` / ``output N``; a
    variadic last one reaches slot 63), in any schema version: read from onnx.defs once per
    check, not once per waiver (that cost ~20 ms each: 10,000 waivers took minutes)."""
    import onnx.defs
    variadic = onnx.defs.OpSchema.FormalParameterOption.Variadic
    names: dict[str, set[str]] = {}
    slots: dict[str, set[str]] = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain not in ("", "ai.onnx"):
            continue
        op_names, op_slots = names.setdefault(s.name, set()), slots.setdefault(s.name, set())
        for io, formals in (("input", s.inputs), ("output", s.outputs)):
            op_names.update(f.name for f in formals)
            last = 64 if formals and formals[-1].option == variadic else len(formals)
            op_slots.update(f"{io} {i}" for i in range(last))
    return {op: (frozenset(names[op]), frozenset(slots[op])) for op in names}


def check(waivers: Iterable[Waiver], cases_of: dict[str, list[str]]) -> None:
    """WaiverError unless every waiver names a real op, one of its formal parameters (as
    ``input N`` / ``output N`` or by name, in any schema version) and, if it says so, one
    of the op's catalogue cases (``cases_of``: op -> case names). Time linear in the
    number of waivers: onnx.defs is read once, each waiver is a few set lookups."""
    parameters = _parameters()
    cases = {op: set(names) for op, names in cases_of.items()}
    for w in waivers:
        if w.op not in parameters:
            raise WaiverError(f"waiver {w.label()}: unknown ONNX op {w.op!r}"
                              + _hint(w.op, parameters))
        names, slots = parameters[w.op]
        if w.parameter not in names and w.parameter not in slots:
            raise WaiverError(f"waiver {w.label()}: {w.op} has no parameter {w.parameter!r} "
                              f"(its parameters: {', '.join(sorted(names))})"
                              + _hint(w.parameter, names))
        if w.case is not None and w.case not in cases.get(w.op, ()):
            raise WaiverError(f"waiver {w.label()}: {w.op} has no catalogue case {w.case!r}"
                              + _hint(w.case, cases_of.get(w.op, [])))


def waiver_key(rec: dict[str, Any], param: dict[str, Any]) -> tuple[str, str | None, str, int]:
    """(op, case, io, index): one parameter of one case, or (case None) of a case-less op
    decided by type."""
    return (rec["op"], rec.get("case"), param["io"], param["index"])


def apply(waivers: Iterable[Waiver], records: list[dict[str, Any]]
          ) -> tuple[dict[tuple[str, str | None, str, int], Waiver], list[Waiver]]:
    """(waived disagreements keyed ``waiver_key`` -> waiver, stale waivers).

    ``records`` are proof records and case-less ops' pseudo-records (``case`` None, their
    by-type rows as ``parameters``: a waiver without ``case`` matches those too). A waiver is
    stale only if the run proved or decided its op (and its case, when it names one) and
    found no disagreement it matches: under ``--ops Add`` an LSTM waiver is not judged."""
    waived: dict[tuple[str, str, int], Waiver] = {}
    used: set[Waiver] = set()
    waivers = list(waivers)
    by_op: dict[str, list[Waiver]] = {}
    for w in waivers:   # each record meets its op's waivers only: linear in both
        by_op.setdefault(w.op, []).append(w)
    ran = {(rec["op"], rec["case"]) for rec in records}
    ran_ops = {op for op, _ in ran}
    for rec in records:
        for p in rec.get("parameters", []):
            if p["verdict"] != "disagree":
                continue
            for w in by_op.get(rec["op"], ()):
                if w.matches(rec, p):
                    waived[waiver_key(rec, p)] = w
                    used.add(w)
                    break
    judged = [w for w in waivers if w.op in ran_ops and (w.case is None or (w.op, w.case) in ran)]
    return waived, [w for w in judged if w not in used]
