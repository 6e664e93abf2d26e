"""verify-all --shard K/N: which ops one shard of a CI matrix runs (``merge`` joins the
shards' reports into the report of one unsharded run)."""
from __future__ import annotations

from typing import Sequence

from .. import preflight
from ..errors import UsageError

MAX_SHARDS = 100_000
"""More shards than this is no CI matrix (the report's schema says the same)."""


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``K/N`` with 1 <= K <= N <= MAX_SHARDS, in ASCII digits (``str.isdigit`` takes '²',
    which ``int`` refuses); UsageError otherwise."""
    if text is None:
        return None
    k, sep, n = text.strip().partition("/")
    if not sep or not preflight.is_decimal(k) or not preflight.is_decimal(n) or \
            not 1 <= int(k) <= int(n) <= MAX_SHARDS:
        raise UsageError(f"--shard {text!r}: give K/N with 1 <= K <= N <= {MAX_SHARDS}, "
                         "e.g. --shard 2/3")
    return int(k), int(n)


def shard_ops(ops: Sequence[str], shard: tuple[int, int]) -> set[str]:
    """The ops of shard ``shard`` (K, N). Shards split the run by op (every case, variant
    and by-type row of an op stays together, so each op's status is whole in one shard):
    the ops in name order, dealt round-robin."""
    k, n = shard
    return {op for i, op in enumerate(sorted(ops)) if i % n == k - 1}
