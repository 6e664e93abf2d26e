"""The lines a proof script may declare about itself: ``# torch-prover: op=X fwd_tol=T
vjp_tol=T surrogate=input:0``.

They are read from the source before the script runs, and checked: a tolerance must be
finite and positive, and a relative VJP tolerance of 1 or more would accept any gradient, so
neither can switch the check off. Each directive set is shown in every report.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields
from typing import Any


DIRECTIVE = re.compile(r"^\s*#\s*torch-prover:(.*)$", re.MULTILINE)


@dataclass(frozen=True)
class Directives:
    """What a script declares about itself: the target op when the graph cannot say,
    tolerances for random outputs. Each one set is shown in every report."""

    op: str | None = None
    fwd_tol: float | None = None      # forward: absolute, scaled by the outputs' magnitude
    vjp_tol: float | None = None      # VJP: relative error of finite difference vs autograd
    surrogate: tuple[str, ...] | None = None   # "input 0"...: PyTorch's backward is not
    # the op's derivative there; it can only remove autograd evidence, never add any

    def set(self) -> dict[str, Any]:
        """The directives the script gave, in declaration order of the fields."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) is not None}


def _tolerance(token: str, key: str, value: str) -> float:
    from ..errors import UsageError
    try:
        tol = float(value)
    except ValueError:
        raise UsageError(f"script directive {token!r}: not a {key} value") from None
    if not math.isfinite(tol) or tol <= 0:
        raise UsageError(f"script directive {token!r}: a tolerance must be a finite number "
                         "> 0 (this one would switch the numeric check off)")
    if key == "vjp_tol" and tol >= 1:
        raise UsageError(f"script directive {token!r}: a relative tolerance of 1 or more "
                         "accepts a finite difference of 0 against any gradient, which switches "
                         "the numeric check off")
    return tol


def directives(source: str) -> Directives:
    """The ``# torch-prover: ...`` lines of ``source`` (UsageError, one line, on an unknown
    key, a bad value, an unknown op, or a tolerance that would turn the check off)."""
    from ..errors import UsageError
    from ..tags.schema import UnknownOpError, canonical_op
    found: dict[str, Any] = {}
    keys = [f.name for f in fields(Directives)]
    for line in DIRECTIVE.findall(source):
        for token in line.split():
            key, _, value = token.partition("=")
            if key not in keys or not value:
                raise UsageError(f"unknown script directive {token!r} (known: "
                                 f"{', '.join(k + '=...' for k in keys)})")
            if key == "op":
                try:
                    found[key] = canonical_op(value)
                except UnknownOpError as exc:
                    raise UsageError(f"script directive {token!r}: {exc}") from None
            elif key == "surrogate":
                found[key] = _parameters(token, value)
            else:
                found[key] = _tolerance(token, key, value)
    return Directives(**found)


_PARAMETER = re.compile(r"^(input|output):(\d+)$")


def _parameters(token: str, value: str) -> tuple[str, ...]:
    """``input:0,output:0`` -> ("input 0", "output 0")."""
    from ..errors import UsageError
    found = []
    for part in value.split(","):
        m = _PARAMETER.match(part)
        if not m:
            raise UsageError(f"script directive {token!r}: {part!r} is not input:N or output:N")
        found.append(f"{m[1]} {m[2]}")
    return tuple(found)
