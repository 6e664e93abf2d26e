"""The two names of Python 3.11 torch_prover uses, on Python 3.10 too.

Why: ONNX supports Python 3.10, and so does torch_prover (README, Setup). The codebase uses
two names 3.11 added: ``enum.StrEnum`` (the words of a record, ``vocab.py``) and
``tomllib`` (waivers and ``[tool.torch-prover]``). On 3.11 and later they are the standard
library's; on 3.10, ``tomllib`` is ``tomli`` (the library ``tomllib`` was made from: a
dependency on 3.10 only, ``pyproject.toml``), and ``StrEnum`` a ``str`` enum whose ``str()``
and ``format()`` are its value, as 3.11's are. Every module takes them from here
(tests/test_python310.py checks that none takes them from the standard library).
"""
from __future__ import annotations

import sys
from enum import Enum

if sys.version_info >= (3, 11):
    import tomllib
    from enum import StrEnum
else:   # pragma: no cover - Python 3.10
    import tomli as tomllib

    class StrEnum(str, Enum):
        """3.11's ``enum.StrEnum``: members are strings, ``str(member)`` is the value."""

        __str__ = str.__str__
        __format__ = str.__format__

__all__ = ["StrEnum", "tomllib"]
