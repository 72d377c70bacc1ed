"""One place that decides whether a failed commit or read lost a race (start again on the
latest version) or met a real error (give up and report it)."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

from lance.commit import CommitConflictError

T = TypeVar("T")

_MARKERS = ("concurrent writer", "commit conflict", "conflict", "retryable",
            "incompatible with concurrent transaction")


def is_commit_conflict(exc: BaseException) -> bool:
    """Whether Lance refused a commit because another commit landed first: pylance's typed
    ``CommitConflictError``; LanceDB's own API raises untyped errors, whose message is all
    there is."""
    if isinstance(exc, CommitConflictError):
        return True
    text = str(exc).lower()
    return any(marker in text for marker in _MARKERS)


def retry_conflicts(fn: Callable[[], T], attempts: int = 10) -> T:
    """Run ``fn`` again after a commit conflict, at most ``attempts`` times in all."""
    for attempt in range(attempts - 1):
        try:
            return fn()
        except OSError as exc:
            if not is_commit_conflict(exc):
                raise
            time.sleep(0.01 * (attempt + 1))
    return fn()


async def moved_on(tbl: Any, version: int) -> bool:
    """Whether a version newer than ``version`` was committed: then a failure to read or write
    at ``version`` is a lost race (a cleanup may have removed that version's files after a
    compaction), not a broken store, and the caller starts again on the latest version."""
    try:
        await tbl.checkout_latest()
        return bool(await tbl.version() != version)
    except Exception:  # the store itself fails: not a race
        return False


async def backoff(attempt: int) -> None:
    """Wait a little, more after each lost race, with jitter so racers spread out."""
    await asyncio.sleep(min(0.2, 0.002 * (2 ** min(attempt, 6))) * random.random())
