"""The admission rule for a body's work: within 64 KiB on the event loop, past it in a worker
thread (the loop's own thread never runs it), refusals raised as they are."""

from __future__ import annotations

import threading

import pytest

from semmem.errors import InvalidInput
from semmem.offload import INLINE_BYTES, off_loop
from semmem.serving.admission import parse_body


def _thread(_: object) -> int | None:
    return threading.get_ident()


async def test_off_loop_a_small_body_stays_on_the_loop_a_large_one_leaves_it() -> None:
    loop_thread = threading.get_ident()
    assert await parse_body(b"{}", _thread) == loop_thread
    assert await off_loop(INLINE_BYTES, _thread, None) == loop_thread
    assert await off_loop(INLINE_BYTES + 1, _thread, None) != loop_thread
    large = b'{"a": "' + b"x" * INLINE_BYTES + b'"}'
    assert await parse_body(large, _thread) != loop_thread


async def test_parse_body_refusal_is_raised_from_the_thread() -> None:
    with pytest.raises(InvalidInput):
        await parse_body(b"[" * (INLINE_BYTES + 1), _thread)
