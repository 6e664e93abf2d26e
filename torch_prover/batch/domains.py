"""``--domain``: which domain a verify-all or coverage run is about.

ai.onnx (the default) is the catalogue: its cases, its per-version plan, its case-less ops
decided by type, models/index.json and versions.json. Every other domain the reference
cases cover (``cases/other_domains.py``: ai.onnx.ml, ai.onnx.preview.training,
ai.onnx.preview) is proved through the same run path -- the worker pool, the cache,
``output.evidence`` -- but at each case's own schema version only: no plan of variants, no
index, no pruning (a run of one domain never deletes another's evidence) and no ONNX
node-test points (they are ai.onnx's).
"""
from __future__ import annotations

from typing import Any, Sequence

from ..case import Case
from ..errors import UsageError

DEFAULT = "ai.onnx"


def known() -> list[str]:
    """ai.onnx, then every domain a reference case covers (sorted)."""
    from ..cases.other_domains import DOMAIN_CASES
    return [DEFAULT] + sorted({c.domain for c in DOMAIN_CASES})


def checked(domain: str) -> str:
    """``domain`` if a run can take it, else UsageError naming the ones it can."""
    if domain not in known():
        raise UsageError(f"--domain {domain}: no cases in that domain (known: "
                         f"{', '.join(known())})")
    return domain


def registered() -> dict[str, tuple[str, ...]]:
    """Every op name of the domains a run can take (``known``) the installed onnx
    registers -> the domains that have it (ai.onnx as ``DEFAULT``)."""
    import onnx.defs
    wanted = set(known())
    out: dict[str, set[str]] = {}
    for s in onnx.defs.get_all_schemas_with_history():
        domain = s.domain or DEFAULT
        if domain in wanted:
            out.setdefault(s.name, set()).add(domain)
    return {op: tuple(sorted(ds, key=known().index)) for op, ds in out.items()}


def resolve(name: str) -> tuple[str, str]:
    """(op, domain) of an op name as ``prove`` takes it: any capitalisation, in ai.onnx or
    another domain a run can take. No op name of the installed onnx is in two of them
    (tests/test_prove_domains.py), so the name says which; were one ever, it is refused
    in one line naming the domains. An unknown name: UnknownOpError naming the closest
    ops of every domain."""
    import difflib

    from ..tags.schema import UnknownOpError
    ops = registered()
    by_lower: dict[str, list[str]] = {}
    for op in ops:
        by_lower.setdefault(op.lower(), []).append(op)
    found = [name] if name in ops else by_lower.get(name.lower(), [])
    if not found:
        close = difflib.get_close_matches(name, sorted(ops), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownOpError(f"unknown ONNX op {name!r}" + hint)
    where = [(op, d) for op in found for d in ops[op]]
    if len(where) > 1:
        raise UsageError(f"{name}: an op of {', '.join(f'{d} ({op})' for op, d in where)}; "
                         "`torch-prover verify-all --domain DOMAIN --ops OP` proves one of them")
    return where[0]


def cases_of(domain: str, ops_arg: str | None, *, versions: str = "latest",
             shard: str | None = None, case_free: bool = False) -> list[Case]:
    """The cases of a run of the other ``domain`` asked for ``--ops``; the options that
    need ai.onnx's plan or its node tests are refused (one line, exit 2)."""
    from ..cases.other_domains import DOMAIN_CASES
    for flag, given in (("--versions " + versions, versions != "latest"),
                        ("--shard", shard is not None), ("--case-free", case_free)):
        if given:
            raise UsageError(f"{flag} plans ai.onnx's schema versions; --domain {domain} "
                             f"proves each case at its own version")
    mine = [c for c in DOMAIN_CASES if c.domain == domain]
    if ops_arg is None:
        return mine
    chosen = []
    for op in dict.fromkeys(n.strip() for n in ops_arg.split(",") if n.strip()):
        found = [c for c in mine if c.op == op]
        if not found:
            raise UsageError(f"--ops: no case for op {op} in domain {domain} (ops with "
                             f"cases: {', '.join(sorted({c.op for c in mine}))})")
        chosen.extend(found)
    return sorted(chosen, key=mine.index)


def case_version(case: Case) -> int | None:
    """The schema version of its domain a reference case of another domain runs: the one in
    force at the opset its reference op emits the node at (``engine.prove.domain_opset``
    reads the same from the exported model); None for a case without such a node."""
    import onnx.defs

    from ..cases import other_domains
    from ..cases.reference import ReferenceOp
    refs = {r.op: r for r in vars(other_domains).values() if isinstance(r, ReferenceOp)}
    for key in case.translation or {}:
        r = refs.get(key)
        if r is not None and r.onnx_op == case.op:
            return onnx.defs.get_schema(case.op, r.opset, r.domain).since_version
    return None


def coverage_entries(domain: str) -> list[dict[str, Any]]:
    """Every op of ``domain`` (the shipped table's rows: every schema version onnx
    registers), each schema version with the cases that decide it and how it is decided
    (``decided_by``; the parameters no case or type decides)."""
    from ..cases.other_domains import DOMAIN_CASES
    from ..output import table
    rows = [r for r in table.load()["rows"] if r["domain"] == domain]
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        e = out.setdefault(r["op"], {"op": r["op"], "domain": domain, "cases": sorted(
            c.name for c in DOMAIN_CASES if c.domain == domain and c.op == r["op"]),
            "versions": {}})
        # and what decided a row without a case (Gradient-1: ONNX's model tests of it)
        e["cases"] = sorted(set(e["cases"]) | set(r["cases"]))
        v = e["versions"].setdefault(r["version"], {"version": r["version"],
                                                    "decided_by": r["decided_by"],
                                                    "undecided": []})
        if r["supports"] is None:
            v["undecided"].append(f"{r['io']} {r['index']} ({r['name']})")
    return [{**e, "versions": sorted(e["versions"].values(), key=lambda v: v["version"])}
            for _, e in sorted(out.items())]


def coverage_text(entries: Sequence[dict[str, Any]]) -> str:
    """One line an op: its cases, then each schema version and how it is decided."""
    lines = []
    for e in entries:
        how = ", ".join(f"{e['op']}-{v['version']}: {v['decided_by']}" for v in e["versions"])
        lines.append(f"{e['op']}: {', '.join(e['cases']) or 'no case'} ({how})")
    return "\n".join(lines) + "\n"
