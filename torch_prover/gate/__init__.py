"""The PR gate: ``verify-all --changed-from BASE`` proves what a PR changes, and only that.

``changes`` compares the base branch's tags (its generated docs) with the installed onnx
(the PR's build), per (op, schema version, parameter); ``select`` picks the catalogue cases
and variants (``batch/versions.py``) that prove each changed version; ``judge`` turns their
records into one verdict per changed tag; ``comment`` renders the PR comment; ``command``
is the CLI's entry (checks before any work, run, output). ``scaffold`` writes a new op's
case (``new-case OP``). docs/pr-gate.md is the user's documentation.
"""
