"""Per-token rate limits (``SEMMEM_RATE_LIMIT``, ``SEMMEM_RATE_BURST``): a token bucket per
bearer token, in this process.

Each replica keeps its own buckets, so N replicas behind a balancer let a token through at up
to N times the rate; a shared limit would need a shared service (docs/operating.md). A request
over the rate is refused with 429 ``rate_limited`` and a ``Retry-After`` of the whole seconds
until the bucket holds a request again (at least 1: the host's second retry waits 1 s, and
``Retry-After`` counts whole seconds).

Only tokens that passed the credentials check name a bucket (with ``--insecure`` no token is
checked, so every caller shares one: ``Runtime.limit``). The table is bounded however many
tokens come and go (rotation): a bucket left alone long enough to refill is the same as no
bucket and is dropped, and past ``MAX_BUCKETS`` the least recently used goes first.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from semmem.errors import InvalidInput, RateLimited

_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*/\s*(s|sec|second|m|min|minute|h|hour)\s*$")
_PER_S = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600,
          "hour": 3600}
MAX_BUCKETS = 10_000


@dataclass(frozen=True)
class Rate:
    """Requests per second, and how many may come at once."""

    per_s: float
    burst: int

    @classmethod
    def parse(cls, text: str, burst: int | None = None) -> Rate:
        """``"20/s"``, ``"600/m"``, ``"1000/h"``; ``burst`` defaults to one second's worth
        (at least 1).

        Raises:
            InvalidInput: not of that form, or zero.
        """
        found = _RATE.match(text)
        per_s = float(found.group(1)) / _PER_S[found.group(2)] if found else 0.0
        if per_s <= 0:
            raise InvalidInput(f"SEMMEM_RATE_LIMIT must look like 20/s, 600/m or 1000/h, "
                               f"not {text!r}")
        return cls(per_s, burst if burst is not None else max(1, math.ceil(per_s)))


class RateLimiter:
    """A token bucket per bearer token; ``take`` spends one request or refuses."""

    def __init__(self, rate: Rate | None, *, max_buckets: int = MAX_BUCKETS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        # digest → (level, when), least recently used first
        self._buckets: OrderedDict[bytes, tuple[float, float]] = OrderedDict()
        self._max = max_buckets
        self._clock = clock
        self._lock = threading.Lock()
        self.refused = 0

    @property
    def buckets(self) -> int:
        """Buckets held now."""
        return len(self._buckets)

    @classmethod
    def configured(cls, limit: str | None, burst: int | None) -> RateLimiter:
        """The limiter of ``SEMMEM_RATE_LIMIT`` / ``SEMMEM_RATE_BURST`` (none: no limit)."""
        return cls(Rate.parse(limit, burst) if limit else None)

    def take(self, token: bytes | None) -> None:
        """Spend one request of ``token``'s bucket (no token, as when insecure: one shared
        bucket).

        Raises:
            RateLimited: the bucket is empty; ``wait_s`` says when it holds one again.
        """
        rate = self.rate
        if rate is None:
            return
        key = hashlib.sha256(token or b"").digest()
        now = self._clock()
        with self._lock:
            level, when = self._buckets.pop(key, (float(rate.burst), now))
            level = min(float(rate.burst), level + (now - when) * rate.per_s)
            self._prune(now, rate)
            if level >= 1.0:
                self._buckets[key] = (level - 1.0, now)
                return
            self._buckets[key] = (level, now)
            self.refused += 1
        wait = max(1, math.ceil((1.0 - level) / rate.per_s))
        raise RateLimited(
            f"too many requests for this token (limit {_shown(rate.per_s)}/s, burst "
            f"{rate.burst}); retry after {wait} s",
            {"limit": f"{_shown(rate.per_s)}/s", "burst": rate.burst, "retryAfter": wait},
            wait_s=wait)


    def _prune(self, now: float, rate: Rate) -> None:
        """Drop the oldest buckets while they have refilled (untouched for ``burst / per_s``
        seconds: no different from a new one) or there are too many (caller holds the lock)."""
        refill_s = rate.burst / rate.per_s
        buckets = self._buckets
        while buckets:
            oldest = next(iter(buckets))
            if len(buckets) < self._max and now - buckets[oldest][1] < refill_s:
                return
            del buckets[oldest]


def _shown(per_s: float) -> str:
    return f"{per_s:g}"
