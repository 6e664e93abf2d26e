"""A report's provenance: what makes it a report (or a shard's slice) of one real run.

Every ``verify-all`` report carries it under ``provenance`` (``build_report`` writes what
``run`` gives it here): the torch-prover that made it (version and a digest of its source,
the cache's own key), the package versions the evidence depends on, the request (the
``--ops`` selection, ``--versions``, numeric checks on or off, the per-case timeout), the
waivers, and the tag source -- its label, its sha256, and for a ``--tags-from`` file its
whole text, so that ``merge`` and ``fix-tags`` re-check every record against the very tags
it was judged against without reading any file but the report (docs/safety.md).
``this_tool_problem`` says why a report cannot be re-checked here.
"""
from __future__ import annotations

import hashlib
from typing import Any, Sequence

from ..inputs import Bound, read_bytes

PROVENANCE_FORMAT = 1


def of_run(ops: Sequence[str] | None, versions: str, numeric: bool, timeout: float,
           waivers: Sequence[Any], label: str, tags_path: str | None,
           torchscript: bool = True, domain: str | None = None) -> dict[str, Any]:
    """The provenance of a run asked for these (``waivers``: ``waivers.Waiver``;
    ``torchscript``: whether the TorchScript exporter was used, ``--no-torchscript``;
    ``domain``: another domain's run, ``--domain``, which a re-check must re-deal: None for
    ai.onnx, whose reports do not name it)."""
    from ..engine.prove import versions as package_versions
    from ..version import __version__
    from .cache import engine_digest
    return {"format": PROVENANCE_FORMAT,
            "torch_prover": {"version": __version__, "source": engine_digest()},
            "versions": package_versions(),
            "request": {"ops": sorted(ops) if ops is not None else None,
                        "versions": versions, "numeric": numeric,
                        "timeout": float(timeout), "torchscript": torchscript,
                        **({"domain": domain} if domain is not None else {})},
            "waivers": [w.as_dict() for w in waivers],
            "tags": tag_source(label, tags_path)}


def tag_source(label: str, path: str | None) -> dict[str, Any]:
    """The tag source as a report carries it: the installed onnx's tags by digest, a docs
    file by its sha256 and text (the bytes decoded: the docs reader accepts UTF-8 only)."""
    if path is None:
        from ..tags.schema import installed_digest
        return {"source": label, "path": None, "sha256": installed_digest(), "text": None}
    raw = read_bytes(path, Bound.DOCS, "--tags-from")
    return {"source": label, "path": path, "sha256": hashlib.sha256(raw).hexdigest(),
            "text": raw.decode("utf-8")}


def this_tool_problem(prov: dict[str, Any]) -> str | None:
    """Why this torch-prover cannot re-check a report of provenance ``prov`` (None: it can):
    another torch-prover (its rules and catalogue are what a record is re-derived with),
    another onnx (its schema versions are what the run planned), tags that are not what
    the report says they are."""
    from ..engine.prove import versions as package_versions
    from ..version import __version__
    from .cache import engine_digest
    tool = prov["torch_prover"]
    if (tool["version"], tool["source"]) != (__version__, engine_digest()):
        same = "its source differs" if tool["version"] == __version__ else \
            f"torch-prover {tool['version']}"
        return (f"made by another torch-prover ({same}; this is {__version__}): re-check it "
                "with the torch-prover that made it, or rerun verify-all")
    mine = package_versions()["onnx"]
    if prov["versions"].get("onnx") != mine:
        return (f"made with onnx {prov['versions'].get('onnx')}, this torch-prover runs onnx "
                f"{mine}: rerun verify-all here")
    tags = prov["tags"]
    if tags["text"] is None:
        from ..tags.schema import installed_digest
        if tags["path"] is not None or tags["sha256"] != installed_digest():
            return ("judged against onnx.defs tags that are not this onnx's (another build "
                    "of the same version): rerun verify-all here")
    elif hashlib.sha256(tags["text"].encode("utf-8")).hexdigest() != tags["sha256"]:
        return "its --tags-from text is not the file it names (sha256 differs)"
    return None


def differing_field(a: dict[str, Any], b: dict[str, Any], prefix: str = "") -> str | None:
    """The first field (dotted path) in which two provenances differ, or None."""
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if isinstance(x, dict) and isinstance(y, dict):
            found = differing_field(x, y, f"{prefix}{key}.")
            if found:
                return found
        elif x != y:
            return f"{prefix}{key}"
    return None
