"""The differentiability table (docs/table.md): every cell of the committed per-version
table (``models/versions.json``) as one flat row per (domain, op, version, io, index, name),
for consumers who parametrise tests over rows (`torch-prover table`).

The rows are built from the evidence once (``build``: versions.json, and each deciding
case's ``proof.json`` for its evidence classes), by ``scripts/table_data.py``, into
``torch_prover/data/table.json``, shipped in the wheel and read back through
``importlib.resources`` (``load``). The command proves nothing and imports neither torch nor
onnx: it reads that file, selects and renders. tests/test_table.py fails when the shipped
file drifts from models/.

The date in the provenance is the evidence's, never the clock's (a rebuild of the same
evidence gives the same bytes): the caller passes it (the script reads the committer date
of models/versions.json from git).
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ..vocab import DocKind

TABLE_FORMAT = 1
"""The rows' shape (docs/table.md, "Stability"): raised when a column is removed, renamed or
changes meaning; a new column or a new value of an open column keeps it."""

DATA = ("data", "table.json")
"""The shipped table, relative to the package (package data)."""

LICENCE = ("Apache-2.0: the table is data of torch-prover (LICENSE); its onnx_tag column "
           "quotes ONNX's operator schemas (Apache-2.0)")

DEFAULT_DOMAIN = "ai.onnx"

COLUMNS = ("domain", "op", "version", "in_force", "io", "index", "name", "onnx_tag",
           "supports", "verdict", "rule", "convention", "decided_by", "basis", "cases",
           "evidence", "numeric", "failing", "reason")
"""Every row's keys, in order (the CSV header)."""

FORMATS = ("jsonl", "csv", "json")


def _pairs(record: dict[str, Any] | None, io_: str, name: str) -> list[dict[str, Any]]:
    if not record:
        return []
    return [p for p in record.get("parameters", []) if p["io"] == io_ and p["name"] == name]


def rows_of(versions_doc: dict[str, Any],
            record: Callable[[str, str], dict[str, Any] | None]) -> list[dict[str, Any]]:
    """One row per cell of a versions table (``models/versions.json``'s shape); ``record(op,
    case)`` gives a deciding case's proof record (None when there is none), whose
    parameter's autograd evidence class (docs/design.md §1.1) and numeric outcome the row
    names."""
    rows = []
    for o in versions_doc["ops"]:
        domain = o.get("domain") or DEFAULT_DOMAIN
        for v in o["versions"]:
            for c in v["cells"]:
                params = [p for case in c["cases"]
                          for p in _pairs(record(o["op"], case), c["io"], c["name"])]
                rows.append({
                    "domain": domain, "op": o["op"], "version": v["version"],
                    "in_force": list(v["in_force"]), "io": c["io"], "index": c["index"],
                    "name": c["name"], "onnx_tag": c["tag"], "supports": c["supports"],
                    "verdict": c["verdict"], "rule": c["rule"],
                    "convention": c.get("convention"), "decided_by": v["decided_by"],
                    "basis": c.get("basis"), "cases": list(c["cases"]),
                    "evidence": sorted({p["evidence"] for p in params}),
                    "numeric": sorted({p["witnesses"]["numeric"]["outcome"] for p in params
                                       if "numeric" in p.get("witnesses", {})}),
                    "failing": c["failing"], "reason": c.get("reason")})
    return rows


def build(models: Path, date: str, tool: dict[str, str],
          other_domains: Sequence[dict[str, Any]] = (),
          derived: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The table document of the evidence under ``models`` (versions.json, index.json's
    package versions, the deciding cases' proof.json): ``date`` is the evidence's, ``tool``
    the torch-prover that built it (version, source digest); ``other_domains``: the ops of
    the domains beside ai.onnx in versions.json's op shape, each with its ``domain``
    (``batch/domain_versions.py``), appended after ai.onnx's; ``derived``: records made
    with the table rather than read from models/ (Gradient-1's, ``batch/gradient_witness``),
    each found by its op and case before a proof.json is looked for."""
    models = Path(models)
    raw = (models / "versions.json").read_bytes()
    versions_doc = json.loads(raw)
    packages = json.loads((models / "index.json").read_text(encoding="utf-8"))["versions"]
    cache: dict[tuple[str, str], dict[str, Any] | None] = {
        (r["op"], r["case"]): r for r in derived}

    def record(op: str, case: str) -> dict[str, Any] | None:
        if (op, case) not in cache:
            path = models / op / case / "proof.json"
            cache[op, case] = json.loads(path.read_text(encoding="utf-8")) \
                if path.is_file() else None
        return cache[op, case]

    return {"kind": DocKind.TABLE.value, "format": TABLE_FORMAT, "licence": LICENCE,
            "provenance": {"torch_prover": dict(tool),
                           "onnx": packages["onnx"], "torch": packages["torch"],
                           "onnxruntime": packages["onnxruntime"], "date": date,
                           "evidence": {"versions.json": hashlib.sha256(raw).hexdigest()}},
            "rows": rows_of({"ops": versions_doc["ops"] + list(other_domains)}, record)}


def dumps(doc: dict[str, Any]) -> str:
    """The shipped file's text: one JSON document, one row per line (a change of evidence is
    a diff of the rows it changes)."""
    head = json.dumps({k: v for k, v in doc.items() if k != "rows"}, ensure_ascii=False)
    rows = ",\n".join(json.dumps(r, ensure_ascii=False) for r in doc["rows"])
    return f"{head[:-1]}, \"rows\": [\n{rows}\n]}}\n"


def load() -> dict[str, Any]:
    """The table shipped with this torch-prover (package data)."""
    path = resources.files("torch_prover").joinpath(*DATA)
    return json.loads(path.read_text(encoding="utf-8"))


def select(rows: Iterable[dict[str, Any]], ops: Sequence[str] = (),
           domains: Sequence[str] = (), versions: Sequence[int] = ()) -> list[dict[str, Any]]:
    """The rows of these ops, domains and schema versions (an empty selection: all)."""
    return [r for r in rows if (not ops or r["op"] in ops)
            and (not domains or r["domain"] in domains)
            and (not versions or r["version"] in versions)]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return " ".join(map(str, value))
    return str(value)


def render(doc: dict[str, Any], rows: list[dict[str, Any]], fmt: str) -> str:
    """``rows`` of the table ``doc`` as JSON Lines (one row a line), CSV (the COLUMNS header;
    a list's items space-separated, in_force as 'first last', null as empty) or JSON (the
    document: its licence and provenance, and the rows)."""
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(COLUMNS)
        for r in rows:
            w.writerow([_cell(r[c]) for c in COLUMNS])
        return buf.getvalue()
    if fmt == "json":
        from .report import to_json   # every JSON document printed: one writer (tests check it)
        return to_json({**{k: v for k, v in doc.items() if k != "rows"}, "rows": rows})
    raise ValueError(f"unknown table format {fmt!r}")


BUILD_ONLY = (("provenance", "date"), ("provenance", "torch_prover", "source"))
"""What a rebuild may change without the evidence changing: the date (the evidence's last
commit, which a commit of the table itself may follow) and the building source's digest."""


def drift(shipped: str, rebuilt: str) -> list[str]:
    """How a shipped table differs from one rebuilt from the evidence, beside BUILD_ONLY:
    its header fields, then each row added, removed or changed ([] when in sync)."""
    a, b = json.loads(shipped), json.loads(rebuilt)
    for doc in (a, b):
        for path in BUILD_ONLY:
            node = doc
            for key in path[:-1]:
                node = node[key]
            node.pop(path[-1], None)
    found = [f"{k}: shipped {a.get(k)!r}, evidence {b.get(k)!r}"
             for k in sorted(set(a) | set(b)) if k != "rows" and a.get(k) != b.get(k)]
    key = lambda r: (r["domain"], r["op"], r["version"], r["io"], r["index"], r["name"])  # noqa: E731
    ra, rb = {key(r): r for r in a["rows"]}, {key(r): r for r in b["rows"]}
    found += [f"row {k} {'only shipped' if k not in rb else 'only in the evidence' if k not in ra else 'differs'}"
              for k in sorted(set(ra) | set(rb), key=repr) if ra.get(k) != rb.get(k)]
    return found
