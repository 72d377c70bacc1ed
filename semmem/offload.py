"""Request work above a small size runs off the event loop: one rule for every door.

Parsing, checking and cutting a body cost CPU in proportion to its size; on the event loop a
4 MiB body stops every other request for seconds. ``off_loop`` runs such work on a worker
thread when its input is larger than ``SMALL_BYTES`` and inline otherwise (a thread hop costs
more than a small body's work).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

SMALL_BYTES = 64 * 1024  # the provider path's whole body: its work stays on the loop


async def off_loop(size: int, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)``, on a worker thread when ``size`` (bytes or characters of its
    input) is above ``SMALL_BYTES``."""
    if size <= SMALL_BYTES:
        return fn(*args, **kwargs)
    return await asyncio.to_thread(fn, *args, **kwargs)
