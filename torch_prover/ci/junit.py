"""``--junit PATH``: the tests of a batch report (``outcomes.tests``) as JUnit XML.

Written with junitparser, a maintained library for exactly this format (docs/ci.md says
why it and not junit-xml): one ``<testsuite>`` per command, one ``<testcase>`` per test --
classname the op, name the parameter and schema version (``Clip-13 input 1 (min)``) or the
case -- with ``<failure>`` for a failed test and ``<skipped>`` for an accepted, undecided
one (its ``type`` says why: declared, waived, not decided...), each with its one-line
message and the command that reproduces it. Every name and message goes through the one
escaping (``output.inert.xml_text``): a name a PR chose stays on one line, its control
characters shown as escapes; a detail's other characters XML 1.0 cannot hold are replaced
(U+FFFD), so the file always parses.

What a dashboard reads (mikepenz/action-junit-report, Jenkins' xUnit): the suite's name is
the command's verb and selection, never a path (``options.suite_name``); with the ONNX
sources (``--onnx-src``) each testcase carries ``file`` and ``line``, its parameter's
declaration in ``onnx/defs`` (the annotations' locator); and the document validates
against junit-10.xsd (tests/data/junit), which has no ``skipped`` on ``<testsuites>``:
junitparser writes one there, so it is dropped (the ``<testsuite>`` keeps its count).
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Callable
from xml.etree import ElementTree

from ..output.inert import xml_text as _xml
from .outcomes import Result, Test

Place = Callable[[Test], tuple[str | None, int | None]]
"""A test's file and line (``github.Locator.place``), or (None, None)."""

def junit_xml(found: list[Test], suite_name: str, wall_time_s: float | None = 0.0,
              place: Place | None = None) -> str:
    """The document as text (UTF-8, with its XML declaration); ``place``: each testcase's
    file and line. ``wall_time_s`` None (a merged report, which cannot re-derive it:
    ``output/run_totals.RUN_ONLY``): no ``time`` attribute, which junit-10.xsd allows."""
    from junitparser import Failure, JUnitXml, Skipped, TestCase, TestSuite
    suite = TestSuite(_xml(suite_name))
    cases = []
    for t in found:
        case = TestCase(_xml(t.label), classname=_xml(t.op))
        detail = _xml(t.message + (f"\nreproduce: {t.reproduce}" if t.reproduce else ""),
                      lines=True)
        if t.result is Result.FAILED:
            failure = Failure(_xml(f"{t.why}: {t.message}"), _xml(t.why))
            failure.text = detail
            case.result = [failure]
        elif t.result is Result.SKIPPED:
            skipped = Skipped(_xml(f"{t.why}: {t.message}"), _xml(t.why))
            case.result = [skipped]
        else:
            case.system_out = detail
        cases.append(case)
    suite.add_testcases(cases)   # once: add_testcase recounts the suite every time
    doc = JUnitXml()
    doc.add_testsuite(suite)
    doc.update_statistics()
    suite.time = doc.time = round(float(wall_time_s or 0.0), 3)   # the run's, not the cases'
    buf = io.BytesIO()
    doc.write(buf)
    root = ElementTree.fromstring(buf.getvalue())
    root.attrib.pop("skipped", None)   # not in junit-10.xsd's <testsuites>
    for elem in (root, *root.iter("testsuite")) if wall_time_s is None else ():
        elem.attrib.pop("time", None)
    for t, elem in zip(found, root.iter("testcase")) if place is not None else ():
        path, line = place(t)
        if path is not None:
            elem.set("file", _xml(path))
            if line is not None:
                elem.set("line", str(line))
    out = io.BytesIO()
    ElementTree.ElementTree(root).write(out, encoding="utf-8", xml_declaration=True)
    return out.getvalue().decode("utf-8")


def write_junit(path: str | Path, found: list[Test], suite_name: str,
                wall_time_s: float | None = 0.0, place: Place | None = None) -> None:
    """Write ``path`` atomically (``evidence.write_text``: a temporary, then a rename)."""
    from ..output.evidence import write_text
    from ..output.ownership import Holds
    write_text(Path(path), junit_xml(found, suite_name, wall_time_s, place), Holds.JUNIT)
