"""The retry rule on its own, on a clock the test moves: which failures, how long, how often."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from semmem_client import Conflict, SemmemError, TransportError, Unavailable
from semmem_client._retry import Attempts, retry_after_s


class Clock:
    """A monotonic clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_retry_after_reads_seconds_and_http_dates() -> None:
    """Delta-seconds and an HTTP date are read; anything else is ignored."""
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert retry_after_s("3") == 3.0
    assert 25 < (retry_after_s(later) or 0) <= 30
    assert [retry_after_s(v) for v in (None, "-1", "soon", "1.5")] == [None, None, None, None]


@pytest.mark.parametrize("value", ["\u00b2", "\u0663", "1\u00b2", "\uff11", "+3", " 3 4",
                                   "9" * 19])
def test_retry_after_reads_ascii_digits_only(value: str) -> None:
    """A ``Retry-After`` in other scripts' digits (``isdigit`` is true for ``²`` and ``٣``),
    signed, or past 18 digits is ignored, as the server's parser ignores it: no ``ValueError``."""
    assert retry_after_s(value) is None
    assert Attempts(10.0, clock=Clock()).after(SemmemError("busy", status=429), value) == 0.25


def test_schedule_is_250ms_then_1s_then_the_failure() -> None:
    """Two retries at most, in the contract's order; the third failure is raised."""
    clock = Clock()
    attempts = Attempts(10.0, clock=clock)
    failure = Unavailable("down", status=503)
    assert attempts.after(failure) == 0.25
    assert attempts.after(failure) == 1.0
    with pytest.raises(Unavailable):
        attempts.after(failure)


@pytest.mark.parametrize("failure", [
    TransportError("reset"), SemmemError("timeout", status=408, code="timeout"),
    SemmemError("busy", status=429), SemmemError("bad gateway", status=502)])
def test_retryable_failures(failure: SemmemError) -> None:
    """No answer, 408, 429 and any 5xx are retried."""
    assert Attempts(10.0, clock=Clock()).after(failure) == 0.25


def test_other_4xx_raise_at_once() -> None:
    """A 409 (or any 4xx but 408 and 429) is never retried."""
    with pytest.raises(Conflict):
        Attempts(10.0, clock=Clock()).after(Conflict("changed", status=409))


def test_retry_after_wins_only_when_it_fits() -> None:
    """``Retry-After`` replaces the wait when it ends before the deadline; else the schedule."""
    clock = Clock()
    attempts = Attempts(10.0, clock=clock)
    busy = SemmemError("busy", status=429)
    assert attempts.after(busy, "4") == 4.0
    clock.now += 4
    assert attempts.after(busy, "30") == 1.0


def test_no_retry_once_the_wait_passes_the_deadline() -> None:
    """A retry that could only start after the deadline is not made; the failure is raised."""
    clock = Clock()
    attempts = Attempts(1.0, clock=clock)
    clock.now += 0.9
    with pytest.raises(Unavailable):
        attempts.after(Unavailable("down", status=503))
    clock.now += 0.2
    with pytest.raises(Unavailable):
        attempts.timeout(Unavailable("down", status=503))
