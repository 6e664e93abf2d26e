"""A simulated PR for the gate's tests: the installed onnx's own docs, edited into a base.

The installed onnx plays the PR's build. Its generated docs (``scripts/onnx_docs.py``:
gen_doc.py of the onnx package, about 4 s) are a base with no change at all; each edit
below makes the base differ from the PR in one known way, so a test's expectation comes
from the edit it made (and the schema's history), never from the gate's output.
"""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


_GENERATED: dict[str, bytes] = {}
"""What ``scripts/onnx_docs.py`` wrote, by path under its root: made once per test process
(gen_doc.py takes about 4 s; the gate's, fix-tags' and points' tests all start from it)."""


def generate_docs(root: Path) -> Path:
    """``root/docs`` holding the installed onnx's Changelog.md and Operators.md (and the
    rest of what ``scripts/onnx_docs.py`` writes under ``root``), a fresh copy per call."""
    if not _GENERATED:
        import tempfile
        spec = importlib.util.spec_from_file_location("onnx_docs",
                                                      ROOT / "scripts" / "onnx_docs.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        with tempfile.TemporaryDirectory() as tmp:
            module.generate(Path(tmp))
            _GENERATED.update({p.relative_to(tmp).as_posix(): p.read_bytes()
                               for p in sorted(Path(tmp).rglob("*")) if p.is_file()})
    for rel, data in _GENERATED.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root / "docs"


def _section(text: str, anchor: str) -> tuple[int, int]:
    """(start, end) of the op section whose heading anchor is ``anchor`` (``Relu-14`` in a
    Changelog.md, ``Relu`` in an Operators.md): up to the next heading of level 1-3."""
    m = re.search(rf'^### (?:<sub>\w+</sub> )?<a name="{re.escape(anchor)}"></a>.*$', text,
                  re.M)
    assert m, f"no section {anchor}"
    nxt = re.compile(r"^#{1,3} ", re.M).search(text, m.end())
    return m.start(), nxt.start() if nxt else len(text)


def section_span(text: str, anchor: str) -> tuple[int, int]:
    """(start, end) of the op section ``anchor`` (its heading to the next heading)."""
    return _section(text, anchor)


def set_tag(text: str, anchor: str, param: str, old: str, new: str) -> str:
    """The section's entry of ``param``: its marker ``old`` replaced by ``new``
    (``differentiable`` <-> ``non-differentiable``); the entry must carry ``old``."""
    start, end = _section(text, anchor)
    body = text[start:end]
    entry = re.compile(rf"^<dt><tt>{re.escape(param)}</tt> \(([^)]*)\) : ", re.M)
    m = entry.search(body)
    assert m, f"{anchor}: no entry {param}"
    marks = [t.strip() for t in m.group(1).split(",")]
    assert old in marks, f"{anchor} {param}: marked {marks}, not {old}"
    marks[marks.index(old)] = new
    edited = body[:m.start(1)] + ", ".join(marks) + body[m.end(1):]
    return text[:start] + edited + text[end:]


def drop_section(text: str, anchor: str) -> str:
    """The text without the op section ``anchor``: a schema version the base lacks."""
    start, end = _section(text, anchor)
    return text[:start] + text[end:]


DIFF_MARKS = ("differentiable", "non-differentiable")


def retag(text: str, anchor: str, param: str, tag: str) -> str:
    """The section's entry of ``param`` marked ``tag`` (``differentiable``,
    ``non-differentiable``, or ``unknown``: no mark, as gen_doc.py writes an unknown tag),
    its other marks (``optional``...) kept."""
    start, end = _section(text, anchor)
    body = text[start:end]
    entry = re.compile(rf"^<dt><tt>{re.escape(param)}</tt>(?: \(([^)]*)\))? : ", re.M)
    m = entry.search(body)
    assert m, f"{anchor}: no entry {param}"
    marks = [t.strip() for t in (m.group(1) or "").split(",") if t.strip()]
    marks = [t for t in marks if t not in DIFF_MARKS] + ([tag] if tag in DIFF_MARKS else [])
    head = f"<dt><tt>{param}</tt>" + (f" ({', '.join(marks)})" if marks else "") + " : "
    edited = body[:m.start()] + head + body[m.end():]
    return text[:start] + edited + text[end:]


def rename_param(text: str, anchor: str, old: str, new: str) -> str:
    """The section's entry of parameter ``old`` renamed ``new``, its tag kept."""
    start, end = _section(text, anchor)
    body = text[start:end]
    entry = f"<dt><tt>{old}</tt>"
    assert body.count(entry) == 1, f"{anchor}: no single entry {old}"
    return text[:start] + body.replace(entry, f"<dt><tt>{new}</tt>") + text[end:]
