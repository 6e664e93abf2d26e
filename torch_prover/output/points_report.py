"""The ``onnx_points`` section of a verify-all report in words (text and Markdown; pure).

What ONNX's own node tests said about the decided cells (``batch/onnx_points.py``): the
counts per state, then every contradiction (a parameter called non-differentiable that is
smooth at an ONNX point: a finding to read, not an override) and every parameter ONNX's
points did not exercise. The tests whose expected outputs the runtime does not reproduce are
counted here and listed with their reasons in the JSON report (27 with onnx 1.23.2: one line
each would bury the findings).
"""
from __future__ import annotations

from typing import Any

from ..vocab import PointsState
from .text_table import wrap_line


def _cell(e: dict[str, Any]) -> str:
    return f"{e['op']}-{e['version']} {e['io']} {e['name']}"


def lines(section: dict[str, Any]) -> list[str]:
    """The section as plain lines (each one logical line; the callers wrap or bullet them)."""
    s = section["summary"]
    head = (f"ONNX's points ({section['source']}; at most {section['per_version']} tests per "
            f"schema version, {s['tests_measured']} measured in {s['versions_with_tests']} "
            "schema versions): " + ", ".join(f"{s[p.value]} {p.value}" for p in PointsState)
            + f"; {len(section['mismatches'])} tests the runtime does not reproduce (the JSON "
              "report's mismatches say why)")
    out = [head]
    for e in section["cells"]:
        if e["state"] == PointsState.CONTRADICT:
            out.append(f"contradiction: {_cell(e)}: called {e['supports']}, smooth at ONNX's "
                       f"points ({', '.join(e['tests'])})")
    quiet = [_cell(e) for e in section["cells"] if e["state"] == PointsState.NOT_EXERCISED]
    if quiet:
        out.append(f"not exercised at ONNX's points (called differentiable, no derivative "
                   f"there): {', '.join(quiet)}")
    return out


def _text(found: list[str], width: int) -> str:
    first, *rest = found
    text = wrap_line(first, width)
    for line in rest:
        text += wrap_line("  " + line, width, "    ")
    return "\n".join(text) + "\n"


def _markdown(title: str, found: list[str]) -> str:
    first, *rest = found
    return "\n".join([f"### {title}\n\n{first}\n"] + [f"- {x}" for x in rest]) + "\n"


def points_text(section: dict[str, Any], width: int) -> str:
    return _text(lines(section), width)


def points_markdown(section: dict[str, Any]) -> str:
    return _markdown("ONNX's points", lines(section))


_LETTER = {"differentiable": "D", "non-differentiable": "N"}


def case_free_lines(section: dict[str, Any]) -> list[str]:
    """``verify-all --case-free``'s verdicts: a head line, then one line per cell."""
    s = section["summary"]
    head = (f"Case-free verdicts ({section['source']}; at most {section['per_version']} tests "
            f"per schema version): {s['ops']} ops, {s['versions']} schema versions, parameters: "
            + ", ".join(f"{n} {v}" for v, n in s["parameters"].items()))
    out = [head]
    for o in section["ops"]:
        for v in o["versions"]:
            for c in v["cells"]:
                said = _LETTER.get(c["supports"] or "", "-")
                out.append(f"{o['op']}-{v['version']} {c['io']} {c['name']}: {c['verdict']} "
                           f"(tag {c['tag']}, evidence {said}; {c['rule']})")
    return out


def case_free_text(section: dict[str, Any], width: int) -> str:
    return _text(case_free_lines(section), width)


def case_free_markdown(section: dict[str, Any]) -> str:
    return _markdown("Case-free verdicts", case_free_lines(section))
