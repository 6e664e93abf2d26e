"""The package version: the one place it is written (pyproject reads it, ``--version``
prints it). It is kept out of proof records and the index, so a release rewrites no
evidence."""

__version__ = "0.1.0"
