"""``torch-prover tags OP``: an op's schema tags, at one opset or every version; with
``--explain``, each witness's outcome from the op's catalogue cases."""
from __future__ import annotations

import argparse
import sys

from ... import preflight
from ...errors import EXIT_OK, UsageError
from ...output import documents
from ..outputs import terminal_width
from ..settings import cache_dir

NAME = "tags"


def add_parser(sub) -> None:
    t = sub.add_parser("tags", help="print an op's schema tags")
    t.add_argument("op")
    t.add_argument("--opset", type=int, help="schema in force at this opset (default: latest)")
    t.add_argument("--all-versions", action="store_true",
                   help="every schema version's tags: one row per parameter, a column a version")
    t.add_argument("--format", choices=("text", "json"), default="text")
    t.add_argument("--explain", action="store_true",
                   help="per parameter: the tag, each witness's outcome and the convention, "
                        "from the op's catalogue cases (served by verify-all's cache, proved "
                        "when not cached)")


def handle(args: argparse.Namespace) -> int:
    from ...output import report
    from ...tags.schema import canonical_op, schema_tags
    op = canonical_op(args.op)
    if args.all_versions and (args.opset is not None or args.explain):
        flag = "--opset" if args.opset is not None else "--explain"
        raise UsageError(f"--all-versions shows every schema version's tags; {flag} is about "
                         f"one version: give one of them")
    if args.all_versions:
        from ...batch.versions_plan import tags_all_versions, tags_all_versions_text
        doc = tags_all_versions(op)
        sys.stdout.write(report.to_json(doc) if args.format == "json"
                         else tags_all_versions_text(doc))
        return EXIT_OK
    tags = schema_tags(op, preflight.schema_opset(args.opset))
    if getattr(args, "explain", False):
        from ...batch.tags_explain import explain_tags
        return explain_tags(op, tags, args.opset, args.format, terminal_width(),
                            cache_dir(args))
    if args.format == "json":
        sys.stdout.write(report.to_json(documents.tags_doc(tags)))
    else:
        sys.stdout.write(report.tags_text(tags, schema_tags(op), terminal_width()))
    return EXIT_OK
