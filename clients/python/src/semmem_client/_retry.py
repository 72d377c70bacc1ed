"""The host's retry rule (contract, "Deadlines and retries"), shared by both clients.

One deadline across all attempts; transport failures, 408, 429 and 5xx are retried, by default
at most twice, after 250 ms and then 1 s, or after a valid ``Retry-After`` when that fits the
deadline; every attempt sends the same bytes (same operation id), so a write whose reply was
lost is replayed by the server, never applied twice. Other 4xx answers are final.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from semmem_client._errors import DeadlineExceeded, SemmemError

DELAYS_S = (0.25, 1.0)
# The server's rule (semmem/protocol/untrusted.py): ASCII digits only, at most 18 of them;
# ``str.isdigit`` is true for "²" and "٣", which ``float`` then refuses with a ValueError.
_DELTA_SECONDS = re.compile(r"[0-9]{1,18}")


@dataclass(frozen=True)
class Retry:
    """A retry policy: the waits before each retry (their number is the retries), and whether
    a server's ``Retry-After`` replaces a wait when it fits the deadline.

    ``Retry()`` is the contract's host rule (250 ms, then 1 s); ``Retry(delays_s=())`` never
    retries. Whatever the policy, no attempt starts after the call's deadline.
    """

    delays_s: tuple[float, ...] = DELAYS_S
    retry_after: bool = True

    def __post_init__(self) -> None:
        if any(not math.isfinite(d) or d < 0 for d in self.delays_s):
            raise ValueError("retry delays must be finite and non-negative")


def retryable(status: int | None) -> bool:
    """Whether a failure may be retried: no answer (``None``), 408, 429 or 5xx."""
    return status is None or status in (408, 429) or 500 <= status <= 599


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """A ``Retry-After`` header in seconds (delta-seconds or an HTTP date), ``None`` if invalid."""
    if value is None:
        return None
    value = value.strip(" \t")
    if _DELTA_SECONDS.fullmatch(value):
        return float(value)
    try:
        at = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if at.tzinfo is None:
        return None
    return max(0.0, at.timestamp() - (time.time() if now is None else now))


class Attempts:
    """The attempts of one call: the time each may take, and whether (and when) to try again."""

    def __init__(self, deadline_s: float, policy: Retry | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._deadline = clock() + deadline_s
        self.policy = policy or Retry()
        self.retries = 0

    def timeout(self, last: SemmemError | None = None) -> float:
        """Seconds the next attempt may take; raises ``last`` when none are left (a first
        attempt always has some: ``deadline_s`` is positive)."""
        left = self._deadline - self._clock()
        if left <= 0:
            raise last or DeadlineExceeded("the call's deadline passed before an answer came")
        return left

    def after(self, failure: SemmemError, retry_after: str | None = None) -> float:
        """Seconds to wait before retrying ``failure``; raises it when it is not retried."""
        delays = self.policy.delays_s
        if not retryable(failure.status) or self.retries >= len(delays):
            raise failure
        left = self._deadline - self._clock()
        hinted = retry_after_s(retry_after) if self.policy.retry_after else None
        delay = hinted if hinted is not None and hinted < left else delays[self.retries]
        if delay >= left:
            raise failure
        self.retries += 1
        return delay
