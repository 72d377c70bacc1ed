"""Loaded (through ``PYTHONPATH``) only into servers the tests run under libfaketime.

libfaketime 0.9.10 with ``FAKETIME_DONT_FAKE_MONOTONIC=1`` fails every
``clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, ...)`` with EINVAL, and that is the call
CPython's ``time.sleep`` makes, so every ``time.sleep`` in such a process raised
``OSError: [Errno 22]``. Relative waits (``nanosleep``, ``select``, condition variables) work,
so ``time.sleep`` waits on ``select`` here. Faking the monotonic clock too is no way out: timed
waits on locks and events then never return.
"""

import operator
import select
import time
from typing import SupportsIndex


def _sleep(length: float | SupportsIndex) -> None:
    seconds = length if isinstance(length, float) else operator.index(length)
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    select.select([], [], [], seconds)


time.sleep = _sleep
