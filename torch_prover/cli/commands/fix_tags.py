"""``torch-prover fix-tags``: disagreements and proposals turned into a checked patch against
ONNX's C++ sources, with its PR text (fix/command.py)."""
from __future__ import annotations

import argparse

from ..settings import cache_dir

NAME = "fix-tags"


def add_parser(sub) -> None:
    x = sub.add_parser("fix-tags", help="turn disagreements and proposals into a checked patch "
                                        "against ONNX's C++ sources, with its PR text")
    x.add_argument("--onnx-src", required=True, metavar="DIR", help="root of an ONNX checkout")
    x.add_argument("--report", metavar="FILE", help="verify-all's JSON report (default: run "
                                                    "verify-all on the catalogue, cache used)")
    x.add_argument("-o", "--output", default=None,
                   help="the patch (default: fix.patch); the PR text goes beside it (fix.md)")
    x.add_argument("--pr-dir", metavar="DIR",
                   help="instead of one patch: one pull request per op family, "
                        "DIR/<family>/<family>.patch (its C++ and the regenerated docs) and "
                        "its PR text")
    x.add_argument("--docs", metavar="DIR",
                   help="with --pr-dir: ONNX's generated Changelog.md and Operators.md of the "
                        "sources' commit (default: the checkout's docs/)")
    x.add_argument("--ops", help="only these ops' verdicts (comma-separated)")
    x.add_argument("--only", choices=("disagree", "proposed"), help="only these verdicts")
    x.add_argument("--include-conventions", action="store_true",
                   help="also edit parameters a named convention decides (left out by "
                        "default; the PR text labels them in their own section)")
    x.add_argument("--jobs", type=int, help="workers when running verify-all (default: 2, or "
                                            "[tool.torch-prover] jobs in pyproject.toml)")
    x.add_argument("--versions", default="latest", metavar="latest|all|A..B",
                   help="without --report: the schema versions verify-all proves (default: "
                        "latest); with --report, the report's own")
    x.add_argument("--domain", default="ai.onnx", metavar="DOMAIN",
                   help="the domain whose tags to fix: ai.onnx (the default), or ai.onnx.ml, "
                        "ai.onnx.preview.training or ai.onnx.preview (--report: a "
                        "verify-all --domain run's)")
    x.add_argument("--format", choices=("text", "json"), default="text",
                   help="the summary on stdout as text or as one JSON object")


def handle(args: argparse.Namespace) -> int:
    from ...fix.command import cmd_fix_tags
    return cmd_fix_tags(args, cache_dir(args))
