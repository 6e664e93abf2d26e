"""One case of a batch, as a worker proves it: the batch's options, the kinds of failure
(data, never text), a failed case's record, and ``prove_one``, which turns any failure of
one case into that case's record so the batch goes on."""
from __future__ import annotations

import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..case import Case
from ..compat import StrEnum
from ..errors import CaseError, OutputError, first_line
from ..tags.schema import UnknownOpError
from ..vocab import DocKind

if TYPE_CHECKING:   # the engine loads when a case is proved, not when a failure is read
    from ..engine.prove import TagSource


@dataclass(frozen=True)
class BatchOptions:
    jobs: int = 2
    timeout: float = 120.0
    numeric: bool = True
    out: Path | None = None
    cache_dir: Path | None = None
    tags: TagSource | None = None
    tag_source: str = "onnx.defs"
    tag_fingerprint: str = ""
    progress: Callable[[int, int, str], None] | None = None


FAILED_CASE_FORMAT = 1


class Failure(StrEnum):
    """Why a case produced no proof: a failed-case record's ``failure`` (never its text)."""

    CASE = "case error"          # the case itself: its export, the checker, its inputs
    CRASH = "worker died"        # the worker process died (killed, out of memory)
    TIMEOUT = "timed out"        # past the per-case timeout, twice
    EVIDENCE = "evidence not written"
    BUG = "internal error"       # an exception of ours
    NO_TAGS = "no tags"          # the tag source lacks the op


def error_record(case: Case, message: str, failure: Failure = Failure.BUG) -> dict[str, Any]:
    """A case that produced no proof (``status`` ``error``, or ``no-tags`` when the tag
    source lacks its op): its own shape (``schemas/failed-case.json``), not a proof record's;
    ``failure`` says which kind of failure, as data."""
    return {"kind": DocKind.FAILED_CASE, "format": FAILED_CASE_FORMAT,
            "op": case.op, "domain": case.domain, "case": case.name,
            "case_kind": case.kind, "exporter": case.exporter, "opset": case.export_opset,
            "status": "error", "error": message, "failure": failure.value, "parameters": [],
            **({"variant_of": case.variant_of} if case.variant_of else {})}


SETTLED = "__settled__"   # on a broken case's error record, worker to parent only (cache.cache_put)


def prove_one(case: Case, opts: BatchOptions) -> tuple[dict[str, Any], dict[str, str] | None]:
    """Prove ``case`` and write its evidence; any failure becomes an error record (a broken
    case's marked ``SETTLED``). Returns it and the evidence files' digests (None: none)."""
    from ..output.evidence import evidence_digests, write_proof
    from ..engine.prove import prove_case
    try:
        proof = prove_case(case, numeric=opts.numeric, tags=opts.tags,
                           tag_source=opts.tag_source)
        files = None
        if opts.out is not None:
            files = evidence_digests(write_proof(opts.out, proof))
        return proof.record(), files
    except OutputError as exc:
        return error_record(case, f"{case.op}/{case.name}: evidence not written: {exc}",
                            Failure.EVIDENCE), None
    except OSError as exc:   # a full or failing disk: this case fails, the batch goes on
        return error_record(case, f"{case.op}/{case.name}: evidence not written: "
                                  f"{exc.strerror or type(exc).__name__}"
                                  + (f" ({exc.filename})" if exc.filename else ""),
                            Failure.EVIDENCE), None
    except CaseError as exc:
        return {**error_record(case, str(exc), Failure.CASE), SETTLED: True}, None
    except UnknownOpError as exc:  # --tags-from a docs file that lacks the op: report, not guess
        return {**error_record(case, str(exc), Failure.NO_TAGS), "status": "no-tags"}, None
    except Exception as exc:  # a crash in one case never stops the batch
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        return error_record(case, f"{case.op}/{case.name}: {type(exc).__name__}: "
                                  f"{first_line(exc)}"
                                  f" (at {Path(tb.filename).name}:{tb.lineno})"), None
