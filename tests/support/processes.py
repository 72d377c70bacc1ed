"""Running one test function in several spawned processes at once (real concurrent writers)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from typing import Any


def results_of(target: Callable[..., None], args: Sequence[tuple[Any, ...]],
               timeout: float = 120.0) -> list[Any]:
    """Start one spawned process per ``args``, each running ``target(*args, queue)`` and putting
    one result on the queue; the results (in the order they came), once every process has
    exited cleanly."""
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=target, args=(*a, queue)) for a in args]
    for p in procs:
        p.start()
    results = [queue.get(timeout=timeout) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0, f"a writer process exited with {p.exitcode}"
    return results
