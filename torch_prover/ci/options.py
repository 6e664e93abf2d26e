"""The CI options of the batch commands (``verify-all``, ``merge``): their flags, their
checks before any work, and what they write after it.

``--github`` (on by default when ``GITHUB_ACTIONS=true``, as GitHub sets it; ``--no-github``
turns it off, e.g. in a shard whose merge annotates) prints workflow annotations and
appends the step summary to ``$GITHUB_STEP_SUMMARY``; ``--junit PATH`` writes JUnit XML;
``--onnx-src DIR`` points each annotation at its line in ``DIR/onnx/defs``. Every output
is checked before any work with the other outputs and inputs (``preflight``). Light at
import: the parser is built before any command runs.
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--github", action=argparse.BooleanOptionalAction, default=None,
                        help="GitHub Actions output: an ::error annotation per failing "
                             "verdict and the summary appended to $GITHUB_STEP_SUMMARY "
                             "(default: on when GITHUB_ACTIONS=true)")
    parser.add_argument("--junit", metavar="PATH", help="also write the verdicts as JUnit "
                                                         "XML (one testcase per parameter of "
                                                         "each schema version)")
    parser.add_argument("--onnx-src", metavar="DIR", help="root of the ONNX checkout: each "
                                                          "annotation points at its line in "
                                                          "onnx/defs; ONNX's points come from "
                                                          "its onnx/backend/test/data/node")


@dataclass(frozen=True)
class Plan:
    """The CI outputs of one command. Its files are checked with the command's other
    outputs and inputs (``outputs()``, through ``preflight.outputs_checked``), once."""
    github: bool = False
    junit: str | None = None
    step_summary: str | None = None
    onnx_src: Path | None = None
    command_line: str = "torch-prover"
    suite: str = "torch-prover"      # the JUnit suite's name: verb and selection, no path

    def outputs(self) -> list[Any]:
        """Every file this plan writes (``preflight.Output``), for the output rule
        (``preflight.outputs_checked``): the JUnit file is replaced only when torch-prover
        wrote it; the step summary is GitHub's file, appended to."""
        from ..output.ownership import Holds
        from ..preflight import Output
        return ([Output("--junit", self.junit, Holds.JUNIT)] if self.junit is not None
                else []) + ([Output("$GITHUB_STEP_SUMMARY", self.step_summary,
                                    Holds.STEP_SUMMARY)] if self.step_summary is not None
                            else [])


def plan(args: argparse.Namespace, argv: Sequence[str] | None = None) -> Plan:
    """Check the CI options (before any work): UsageError, one line, otherwise. The files
    they name are the output rule's to check (``Plan.outputs``)."""
    from .. import preflight
    from ..errors import UsageError
    github = args.github if args.github is not None else (
        os.environ.get("GITHUB_ACTIONS") == "true")
    junit = args.junit
    onnx_src = None
    if args.onnx_src is not None and (github or junit is not None):
        onnx_src = preflight.onnx_source(args.onnx_src)
    elif (args.onnx_src is not None and not preflight.has_node_tests(args.onnx_src)
          and getattr(args, "changed_from", None) is None):
        # (PR mode reads the checkout's node tests, committed or generated, and says what is
        # missing when it needs them: gate/command.prepare)
        raise UsageError("--onnx-src places GitHub annotations and JUnit testcases: give it "
                         "with --github (or in GitHub Actions, where GITHUB_ACTIONS=true "
                         "turns them on) or --junit, or name a checkout with "
                         "onnx/backend/test/data/node (ONNX's points)")
    summary = None
    if github and os.environ.get("GITHUB_STEP_SUMMARY"):
        from ..inputs import utf8_name
        summary = utf8_name(os.environ["GITHUB_STEP_SUMMARY"], "$GITHUB_STEP_SUMMARY")
    line = "torch-prover " + " ".join(shlex.quote(a) for a in (argv or [args.command]))
    return Plan(github, junit, summary, onnx_src, line, suite_name(args))


def suite_name(args: argparse.Namespace) -> str:
    """``torch-prover verify-all --versions all --shard 1/3``: the command's verb and what
    it selects, without a path (a dashboard groups runs by it; ``$RUNNER_TEMP`` differs on
    every runner)."""
    parts = ["torch-prover", args.command]
    if getattr(args, "changed_from", None) is not None:
        parts.append("--changed-from")
        if getattr(args, "tags_from", None):
            parts.append("--tags-from")
    for flag, value in (("--ops", getattr(args, "ops", None)),
                        ("--versions", getattr(args, "versions", "latest")),
                        ("--shard", getattr(args, "shard", None))):
        if value and not (flag == "--versions" and value == "latest"):
            parts.append(f"{flag} {value}")
    return " ".join(parts)


def emit(p: Plan, report: dict[str, Any], fmt: str) -> None:
    """After the report: the JUnit file, the annotations (on stdout, or on stderr when
    stdout carries a JSON document: GitHub reads workflow commands on both), the summary."""
    if not (p.github or p.junit is not None):
        return
    from .github import Locator
    from .outcomes import all_tests
    found = all_tests(report)
    locator = Locator(p.onnx_src)   # onnx/defs read once, and only if a test needs a line
    if p.junit is not None:
        from .junit import write_junit
        write_junit(p.junit, found, p.suite,
                    report.get("summary", {}).get("wall_time_s"),
                    locator.place if p.onnx_src is not None else None)
        from ..output.inert import one_line
        print(f"JUnit XML written to {one_line(p.junit)}", file=sys.stderr)
    if p.github:
        from .github import annotations, append_summary, summary_markdown
        stream = sys.stderr if fmt == "json" else sys.stdout
        for line in annotations(found, locator):
            print(line, file=stream)
        if p.step_summary is not None:
            append_summary(p.step_summary, summary_markdown(found, report, p.command_line))
