"""The one guard every served call passes, on every surface (provider, admin API, console):
credentials, readiness, the concurrency limit and the request metrics; and the partition
keys owners may name. Inside it, a door's work on its body (parsing, checking) goes through
``serving.admission``: on the event loop within 64 KiB, past it in a worker thread."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from semmem.contract import check_partition
from semmem.errors import InvalidInput, SemmemError
from semmem.protocol.status import status_of
from semmem.serving.runtime import Runtime

if TYPE_CHECKING:
    from semmem.memory import Memory


@dataclass
class Call:
    """One guarded call: the memory it may use, and its labels for the metrics."""

    memory: Memory
    operation: str
    tool: str = ""


@asynccontextmanager
async def served(rt: Runtime, operation: str, check: Callable[[], None] | None = None, *,
                 receive: Callable[[], Awaitable[None]] | None = None) -> AsyncIterator[Call]:
    """Run one call: ``check`` (credentials) first, then readiness, then ``receive`` (reading
    the request body, within its deadline), and only then a concurrency slot; the call's
    outcome is counted whatever it is (the caller may relabel ``operation``/``tool``).

    Raises:
        Unauthorized (from ``check``), NotReady, what ``receive`` raises, Overloaded, and
        whatever the call raises.
    """
    started = time.perf_counter()
    labels = {"operation": operation, "tool": ""}
    status = 200
    rt.metrics.in_flight.inc()
    try:
        if check is not None:
            check()
        memory = rt.require_memory()
        if receive is not None:
            await receive()
        async with rt.limiter.slot():
            call = Call(memory, operation)
            try:
                yield call
            finally:
                labels = {"operation": call.operation, "tool": call.tool}
    except SemmemError as exc:
        status = status_of(exc)
        raise
    except Exception:
        status = 500
        raise
    finally:
        rt.metrics.in_flight.dec()
        rt.metrics.observe(labels["operation"], labels["tool"], status,
                           time.perf_counter() - started)


async def nameable(rt: Runtime, partition: str) -> str:
    """``partition`` if an owner (admin API, console) may name it: within the contract's
    bound, or a partition that exists (made before every surface checked the bound), so its
    owner can still open and delete it.

    Raises:
        InvalidInput: over the bound and no such partition. NotReady, Overloaded: looking.
    """
    try:
        return check_partition(partition)
    except InvalidInput:
        memory = rt.require_memory()
        async with rt.limiter.slot():
            if partition in await memory.owned_partitions():
                return partition
        raise
