"""A proof script's text, decoded as ``python SCRIPT`` decodes it (PEP 263).

Why one helper: the runner reads the script before anything runs (its directives, the
record's source) and the child reads it again to run it; both must accept what Python
accepts -- a latin-1 file with a ``# -*- coding: latin-1 -*-`` cookie -- and refuse, in one
line, what Python refuses (a binary file).
"""
from __future__ import annotations

import io
import tokenize
from pathlib import Path

from ..errors import UsageError
from ..inputs import Bound, read_bytes


class ScriptFileError(UsageError):
    """The file is not Python source text; the message says why, in one line."""


def script_text(path: str | Path) -> str:
    """The decoded source of ``path`` (ScriptFileError when Python could not read it)."""
    data = read_bytes(path, Bound.SCRIPT)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError) as exc:      # a bad or unknown coding cookie
        why = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        raise ScriptFileError(f"{path}: not Python source ({why})") from None
    except UnicodeDecodeError as exc:
        raise ScriptFileError(f"{path}: not Python source text: byte {exc.start} is not "
                              f"{exc.encoding} (a binary file? declare another encoding with a "
                              "coding cookie, PEP 263)") from None
    return text.removeprefix("\ufeff")
