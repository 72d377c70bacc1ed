"""A door's body parsed under the event loop's admission rule (``semmem.offload``): on the
loop up to 64 KiB, in a worker thread above."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from semmem.offload import off_loop
from semmem.protocol.jsonio import loads

T = TypeVar("T")


async def parse_body(body: bytes, check: Callable[[Any], T]) -> T:
    """``check`` of the parsed JSON ``body`` (``protocol.jsonio.loads``), off the loop when
    the body is over ``offload.INLINE_BYTES``.

    Raises:
        InvalidInput: not strict JSON; and whatever ``check`` raises.
    """
    return await off_loop(len(body), _parsed, body, check)


def _parsed(body: bytes, check: Callable[[Any], T]) -> T:
    return check(loads(body))
