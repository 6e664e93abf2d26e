"""Two all-versions reports, with and without the TorchScript exporter, cell by cell.

``verify-all --no-torchscript`` must decide every cell (op, schema version, parameter) that
the default run decides, with the same answer (verdict and the tag the evidence supports).
This compares two ``--versions`` JSON reports and says where they part, and why the
TorchScript-free one left a cell undecided (the variants' errors, a case left out for want
of a dynamo way). ``scripts/compare_exporters.py`` runs both modes and prints the counts;
tests/test_exporters.py holds a few ops to it in CI.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Cell = tuple[str, int, str, int]          # op, schema version, io, index


def decided_cells(report: dict[str, Any]) -> dict[Cell, tuple[str, str]]:
    """Every decided cell of a report's versions table: (verdict, supports)."""
    out: dict[Cell, tuple[str, str]] = {}
    for op in report.get("versions", {}).get("ops", []):
        for v in op["versions"]:
            for c in v["cells"]:
                if c.get("supports") is not None:
                    out[(op["op"], v["version"], c["io"], c["index"])] = (c["verdict"],
                                                                          c["supports"])
    return out


@dataclass
class Comparison:
    """Counts and the differing cells of two reports (``base``: with TorchScript)."""

    base_decided: int
    other_decided: int
    same: int
    different: list[tuple[Cell, tuple[str, str], tuple[str, str]]] = field(default_factory=list)
    undecided: list[tuple[Cell, str]] = field(default_factory=list)   # decided only in base
    only_other: list[Cell] = field(default_factory=list)             # decided only in other

    def lines(self) -> list[str]:
        out = [f"cells decided with TorchScript: {self.base_decided}",
               f"cells decided without: {self.other_decided}",
               f"same answer: {self.same}", f"different answer: {len(self.different)}",
               f"decided only with TorchScript: {len(self.undecided)}",
               f"decided only without: {len(self.only_other)}"]
        for (op, ver, io, idx), a, b in self.different:
            out.append(f"  differs: {op}-{ver} {io} {idx}: {a[0]} ({a[1]}) vs {b[0]} ({b[1]})")
        by_reason: dict[str, list[str]] = {}
        for (op, ver, io, idx), why in self.undecided:
            by_reason.setdefault(why, []).append(f"{op}-{ver} {io} {idx}")
        for why, cells in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
            out.append(f"  undecided ({len(cells)}): {why}: {', '.join(cells[:6])}"
                       + (" ..." if len(cells) > 6 else ""))
        return out


def compare(base: dict[str, Any], other: dict[str, Any]) -> Comparison:
    a, b = decided_cells(base), decided_cells(other)
    why = _reasons(base, other)
    cmp = Comparison(len(a), len(b), sum(1 for k in a if k in b and a[k] == b[k]))
    cmp.different = [(k, a[k], b[k]) for k in a if k in b and a[k] != b[k]]
    cmp.undecided = [(k, why.get(k[:2], "no variant of it decided it")) for k in a
                     if k not in b]
    cmp.only_other = [k for k in b if k not in a]
    return cmp


def _reasons(base: dict[str, Any], other: dict[str, Any]) -> dict[tuple[str, int], str]:
    """(op, version) -> why the other report left it undecided: the cases left out, or the
    first of the cases that decide it in ``base`` that failed in ``other`` -- its typed
    failure as the other report gives it (``failed_variants``: case, kind, reason)."""
    left_out = set(other.get("exporters", {}).get("left_out", []))
    failed = {f["case"]: f for f in
              other.get("versions", {}).get("summary", {}).get("failed_variants", [])}
    out: dict[tuple[str, int], str] = {}
    for op in base.get("versions", {}).get("ops", []):
        for v in op["versions"]:
            if v.get("basis"):   # below opset 7: it follows the version in force at 7
                out[(op["op"], v["version"])] = (f"by equivalence with {v['basis']}, "
                                                  f"undecided there")
                continue
            cases = {n for c in v["cells"] for n in c.get("cases", [])}
            gone = sorted({n.split("@")[0] for n in cases} & left_out)
            broken = sorted(cases & set(failed))
            if gone:
                out[(op["op"], v["version"])] = (f"TorchScript case left out (no dynamo way): "
                                                  f"{', '.join(gone)}")
            elif broken:
                f = failed[broken[0]]
                out[(op["op"], v["version"])] = f"{f['case']}: {f['kind']}: {f['reason'][:160]}"
    return out
