"""One module per command: each holds ``NAME``, ``add_parser(sub)``
(its options, as its ``--help`` shows them) and ``handle(args) -> int`` (the arguments handed
to the library, the result rendered, the exit code returned). ``cli/__init__.py`` composes
them; a command module imports the library and cli's shared modules (options, settings,
outputs), never another command (tests/test_layout.py). A new command is a module here,
named after it, listed in ``ALL``, with its ``--help`` recorded in tests/data/help/
(``TORCH_PROVER_UPDATE_HELP=1``, tests/test_cli_help.py).

A handler imports the library it calls inside its body: the parser is built before any
command runs, so ``--help`` and a bad argument never wait for torch's import, and a Ctrl-C
during that import reaches ``cli.run``."""
from __future__ import annotations

from . import (check_evidence, coverage, fix_tags, merge, new_case, node_tests, prove, report,
               run, script, table, tags, verify_all)

ALL = (prove, verify_all, merge, node_tests, report, coverage, run, script, fix_tags, new_case,
       check_evidence, tags, table)
"""Every command, in the order ``torch-prover --help`` lists them."""
