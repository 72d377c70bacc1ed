"""The event loop's admission rule for a request's own work: what is small runs on the loop,
what is larger runs in a worker thread. Every door calls it for its body's work (parsing,
validation: ``serving/admission.parse_body``), the core for cutting a conversation
(``conversations/ingest.py``), and a store search for its filter and ranking over more than
:data:`INLINE_ENTRIES` items (``stored/items.py``), so no body within a door's size limit
stalls the others' requests.

Small is :data:`INLINE_BYTES`, the provider path's body limit: a 64 KiB body parses and is
checked in about a millisecond, less than handing it to a thread and back costs a busy loop.
The larger bodies of ``POST /store`` (8 MiB) and ``POST /ingest`` (4 MiB) take tens to
hundreds of milliseconds, and a message's cutting seconds: in a thread the loop keeps serving
meanwhile (Python hands it the interpreter every 5 ms; ``json``'s C scanner keeps it for one
object at a time, its hook runs Python between objects). The model's time is the model
queue's to share (``semmem.embedding.queue``).

A body refused or replayed costs no more than reading it and this parse: a door checks what
it can from the parsed body (access, a replay) before any further work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

INLINE_BYTES = 64 * 1024  # work on a body up to this size stays on the event loop
# Entries a request's own filtering and ranking goes through on the event loop (a store
# search's LangGraph filter is Python per item: ~1-10 µs each, a few milliseconds for these).
INLINE_ENTRIES = 512


async def off_loop(size: int, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)``, on the event loop if ``size`` (the bytes or characters it
    works through) is at most :data:`INLINE_BYTES`, else in a worker thread; what it raises,
    raised."""
    return await _inline_or_thread(size <= INLINE_BYTES, fn, *args, **kwargs)


async def off_loop_over(entries: int, fn: Callable[P, T], *args: P.args,
                        **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)`` that goes through ``entries`` items (a filter, a ranking): on
    the event loop if at most :data:`INLINE_ENTRIES`, else in a worker thread (one hop for
    all of them, not one per item); what it raises, raised."""
    return await _inline_or_thread(entries <= INLINE_ENTRIES, fn, *args, **kwargs)


async def _inline_or_thread(inline: bool, fn: Callable[P, T], *args: P.args,
                            **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)`` on the event loop when ``inline``, else in a worker thread."""
    if inline:
        return fn(*args, **kwargs)
    return await asyncio.to_thread(fn, *args, **kwargs)
