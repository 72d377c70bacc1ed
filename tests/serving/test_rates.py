"""Per-token rate limits: the rate's forms, a bucket per token, Retry-After in whole seconds."""

from __future__ import annotations

import pytest

from semmem.errors import InvalidInput, RateLimited
from semmem.serving.rates import Rate, RateLimiter


@pytest.mark.parametrize(("text", "per_s", "burst"), [
    ("20/s", 20.0, 20), ("600/m", 10.0, 10), (" 90 / min ", 1.5, 2), ("1800/h", 0.5, 1),
])
def test_rate_parse_forms_and_default_burst(text: str, per_s: float, burst: int) -> None:
    assert Rate.parse(text) == Rate(per_s, burst)
    assert Rate.parse(text, 5).burst == 5


@pytest.mark.parametrize("text", ["20", "0/s", "20/d", "x/s", "-1/s", ""])
def test_rate_parse_refuses_other_forms(text: str) -> None:
    with pytest.raises(InvalidInput, match="SEMMEM_RATE_LIMIT"):
        Rate.parse(text)


def test_bucket_per_token_refuses_past_burst_with_one_second_retry() -> None:
    """At 20/s with a burst of 3, the fourth request at once is refused, Retry-After 1 s (the
    host's second retry); another token keeps its own bucket."""
    limiter = RateLimiter(Rate(20.0, 3))
    for _ in range(3):
        limiter.take(b"a")
    with pytest.raises(RateLimited) as refused:
        limiter.take(b"a")
    assert refused.value.wait_s == 1 and refused.value.code == "rate_limited"
    assert refused.value.details == {"limit": "20/s", "burst": 3, "retryAfter": 1}
    for _ in range(3):
        limiter.take(b"b")
    assert limiter.refused == 1


def test_slow_rate_asks_for_the_wait_it_needs() -> None:
    limiter = RateLimiter(Rate.parse("6/m", 1))  # one request per 10 s
    limiter.take(b"a")
    with pytest.raises(RateLimited) as refused:
        limiter.take(b"a")
    assert 9 <= refused.value.wait_s <= 10


def test_no_rate_configured_never_refuses() -> None:
    limiter = RateLimiter.configured(None, None)
    for _ in range(1000):
        limiter.take(b"a")


class _Clock:
    """A clock the test moves by hand (the limiter reads time only through it)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_refilled_bucket_is_dropped_and_the_table_is_bounded() -> None:
    """A bucket untouched for burst / rate seconds is full again, the same as none: it goes.
    However many tokens come at once, at most ``max_buckets`` stay, oldest dropped first."""
    clock = _Clock()
    limiter = RateLimiter(Rate(2.0, 4), max_buckets=100, clock=clock)
    for i in range(50):
        limiter.take(f"t{i}".encode())
    assert limiter.buckets == 50  # positive control: each token has its bucket
    clock.now += 1.9  # not yet refilled (4 / 2 = 2 s)
    limiter.take(b"t0")
    assert limiter.buckets == 50
    clock.now += 0.2  # t1…t49 have refilled; t0 was used 0.2 s ago
    limiter.take(b"fresh")
    assert limiter.buckets == 2
    for i in range(1000):
        limiter.take(f"flood{i}".encode())
    assert limiter.buckets == 100
    for _ in range(3):  # the most recent token kept its own (emptied) bucket
        limiter.take(b"flood999")
    with pytest.raises(RateLimited):
        limiter.take(b"flood999")
