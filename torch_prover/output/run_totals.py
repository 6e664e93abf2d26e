"""What a batch report adds up to, said the same way in every rendering (pure).

How many proofs the run holds -- its cases, plus the version variants of ``--versions``,
which the result cache serves as well (``summary.cache_hits`` counts both) -- how many of
them the cache served, what fails the run, and the text report's closing line (pytest's
"N passed" habit: the last line a terminal or a CI log shows says how the run ended).
Every count is read from the report's ``summary`` (and its ``versions.summary``), never
recounted from the records, so each rendering says what the report says.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .units import count

VERDICT_ORDER = ("agree", "disagree", "proposed", "inconclusive")

RUN_ONLY = ("wall_time_s", "cache_hits")
"""What a run states about itself that no record holds: how long it took, and how many
proofs the cache served. A report rebuilt from saved records (``report``, ``merge``,
``fix-tags --report``: ``batch/report_io.rebuild``) cannot re-derive them, so it holds null
for both and no rendering shows a number for them (docs/reports.md); the evidence index
leaves them out (``index_files.write_index``)."""
NOT_REDERIVED = ("wall time and cache use not shown (a report rebuilt from saved records "
                 "cannot re-derive them)")


@dataclass(frozen=True)
class Totals:
    """The proofs a batch report holds, and how many the cache served."""

    cases: int
    variants: int      # --versions: case variants proved at other schema versions
    cache_hits: int

    @property
    def proofs(self) -> int:
        return self.cases + self.variants

    @property
    def proved_now(self) -> int:
        return self.proofs - self.cache_hits


def totals(rep: dict[str, Any]) -> Totals:
    s = rep.get("summary") or {}
    variants = (rep.get("versions") or {}).get("cases") or ()
    return Totals(int(s.get("cases", len(rep.get("cases") or ()))), len(variants),
                  int(s.get("cache_hits") or 0))


def stated(rep: dict[str, Any], field: str) -> bool:
    """The report states its run's ``field`` (one of ``RUN_ONLY``: a run's own report does),
    rather than holding null for it (a report rebuilt from saved records)."""
    value = (rep.get("summary") or {}).get(field)
    return isinstance(value, int if field == "cache_hits" else (int, float)) and \
        not isinstance(value, bool)


def cache_part(rep: dict[str, Any]) -> str:
    """`` (8 from the cache)`` for the text report's ops line; nothing when not stated."""
    return f" ({rep['summary']['cache_hits']} from the cache)" \
        if stated(rep, "cache_hits") else ""


def wall_words(rep: dict[str, Any]) -> str:
    """``wall time 4.2 s``, or ``NOT_REDERIVED`` for a report rebuilt from saved records."""
    return f"wall time {rep['summary']['wall_time_s']:.1f} s" \
        if stated(rep, "wall_time_s") else NOT_REDERIVED


def proofs_words(t: Totals) -> str:
    """``337 cases`` or ``337 cases and 657 version variants``."""
    return count(t.cases, "case") + (f" and {count(t.variants, 'version variant')}"
                                     if t.variants else "")


def cache_words(rep: dict[str, Any]) -> str:
    """How much of the run the cache served: a wall time alone misleads for a cached run.
    ``994 of 994 proofs from the cache (337 cases and 657 version variants), 0 proved in
    this run``; without --versions, ``337 of 337 cases from the cache, ...``."""
    if not stated(rep, "cache_hits"):
        return NOT_REDERIVED
    t = totals(rep)
    if not t.variants:
        return f"{t.cache_hits} of {count(t.cases, 'case')} from the cache, {t.proved_now} " \
               "proved in this run"
    return (f"{t.cache_hits} of {count(t.proofs, 'proof')} from the cache ({proofs_words(t)}), "
            f"{t.proved_now} proved in this run")


def failing(rep: dict[str, Any]) -> list[tuple[int, str]]:
    """The counts that fail a run (exit 1), each with what it counts; the run fails when
    one is not 0 (``batch.summary.exit_code`` reads this list)."""
    s = rep["summary"]
    v = (rep.get("versions") or {}).get("summary") or {}
    return [(s["unwaived_disagreements"], "unwaived disagreements"),
            (s["by_type"]["unwaived_disagreements"], "unwaived by-type disagreements"),
            (s["failed_cases"], "failed cases"), (s["invalid_cases"], "invalid cases"),
            (s["unexpected_inconclusive"], "inconclusive verdicts where evidence should "
                                           "have decided"),
            (int(v.get("failing") or 0), "failing version cells (undeclared, unwaived)"),
            (int(v.get("undeclared_failures") or 0),
             "version variants that failed a check (undeclared)")]


def exit_code(rep: dict[str, Any]) -> int:
    """verify-all's exit code from its report: 1 when a count of ``failing`` is not 0."""
    from ..errors import EXIT_FINDING, EXIT_OK
    return EXIT_FINDING if any(n for n, _ in failing(rep)) else EXIT_OK


def version_totals(section: dict[str, Any]) -> tuple[int, dict[str, int]]:
    """(schema versions, parameter cells by verdict) of a versions section, over its bands:
    the closing line's and the HTML card's one sum."""
    bands = section["summary"]["by_band"].values()
    return (sum(int(b["versions"]) for b in bands),
            {v: sum(int(b["parameters"].get(v, 0)) for b in bands) for v in VERDICT_ORDER})


def closing_line(rep: dict[str, Any]) -> str:
    """The text report's last line: ``337 cases: 833 agree, 50 disagree (50 declared), 216
    proposed, 84 inconclusive; 0 failing — exit 0``; with --versions, the schema versions'
    cells too."""
    s = rep["summary"]
    c = s["parameters"]
    new, declared = s["unwaived_disagreements"], s["declared_disagreements"]
    other = c["disagree"] - new - declared   # undeclared ones fail unless waived
    why = [f"{n} {w}" for n, w in ((declared, "declared"), (other, "waived"), (new, "new"))
           if n]
    verdicts = [f"{c[v]} {v}" + (f" ({', '.join(why)})" if v == "disagree" and why else "")
                for v in VERDICT_ORDER]
    line = f"{count(s['cases'], 'case')}: {', '.join(verdicts)}"
    section = rep.get("versions")
    if section:
        versions, cells = version_totals(section)
        line += (f"; {count(versions, 'schema version')}, parameters: "
                 + ", ".join(f"{cells[v]} {v}" for v in VERDICT_ORDER))
    fails = [(n, what) for n, what in failing(rep) if n]
    line += f"; {sum(n for n, _ in fails)} failing"
    if fails:
        line += f" ({', '.join(f'{n} {what}' for n, what in fails)})"
    return f"{line} — exit {rep['exit_code']}"
