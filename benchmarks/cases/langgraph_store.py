"""LangGraph's store API on semmem (``SemmemStore`` over a real ``semmem serve``) beside
LangGraph's ``InMemoryStore``: ``get`` p50 in a namespace of 10 items and of N, ``search``
with and without a filter at N, ``put`` throughput with 8 concurrent writers.

Runs in the client's venv (langgraph and the client), the server from the server's venv::

    .venv-client/bin/python -m benchmarks langgraph_store --items 10000

The server uses the fake embedder (the model is beside the point: what is measured is how
reads and writes scale with the namespace); the figures go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "clients" / "python" / "src")]

WRITERS = 8
COLORS = ["red", "green", "blue", "amber", "violet"]


def value(i: int) -> dict[str, Any]:
    """The i-th item's value: a little text and fields to filter on."""
    return {"text": f"note {i} about the {COLORS[i % 5]} project, week {i % 52}",
            "color": COLORS[i % 5], "rank": i % 100}


def fill(store: BaseStore, namespace: tuple[str, ...], n: int) -> None:
    """Put ``n`` items in ``namespace`` (batches of 500)."""
    from langgraph.store.base import PutOp

    for start in range(0, n, 500):
        stop = min(n, start + 500)
        store.batch([PutOp(namespace, f"k{i}", value(i)) for i in range(start, stop)])


def p50_ms(run: Callable[[], Any], times: int) -> float:
    """Median wall time of ``run`` in milliseconds."""
    took = []
    for _ in range(times):
        start = time.perf_counter()
        run()
        took.append((time.perf_counter() - start) * 1000)
    return statistics.median(took)


def puts_per_s(store: BaseStore, namespace: tuple[str, ...], each: int) -> float:
    """Puts a second with ``WRITERS`` threads writing ``each`` distinct keys at once."""

    def writer(w: int) -> None:
        for i in range(each):
            store.put(namespace, f"w{w}-{i}", value(i))

    start = time.perf_counter()
    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(writer, range(WRITERS)))
    return WRITERS * each / (time.perf_counter() - start)


def measure(name: str, store: BaseStore, items: int, reads: int, each: int) -> None:
    """Print one store's figures."""
    fill(store, ("bench", "small"), 10)
    fill(store, ("bench", "large"), items)
    small = p50_ms(lambda: store.get(("bench", "small"), "k3"), reads)
    large = p50_ms(lambda: store.get(("bench", "large"), "k3"), reads)
    plain = p50_ms(lambda: store.search(("bench", "large"), query="amber project",
                                        limit=10), reads)
    filtered = p50_ms(lambda: store.search(("bench", "large"), query="amber project",
                                           filter={"color": "amber", "rank": {"$gte": 50}},
                                           limit=10), reads)
    rate = puts_per_s(store, ("bench", "writers"), each)
    print(f"{name:>14}: get p50 {small:.2f} ms (10 items) / {large:.2f} ms ({items} items), "
          f"ratio {large / small:.2f}; search p50 {plain:.1f} ms, filtered {filtered:.1f} ms "
          f"({items} items); put {rate:.0f}/s with {WRITERS} writers")


def main() -> None:
    """Parse arguments, run both stores, print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000, help="items in the large namespace")
    parser.add_argument("--reads", type=int, default=30, help="timed reads of each kind")
    parser.add_argument("--puts", type=int, default=25, help="puts per concurrent writer")
    parser.add_argument("--server-python", default=str(REPO / ".venv" / "bin" / "python"),
                        help="the interpreter that runs semmem serve")
    args = parser.parse_args()
    # The client's venv has these (``--help`` works without them).
    from langgraph.store.memory import InMemoryStore
    from semmem_client import Client
    from semmem_client.langgraph import SemmemStore

    from tests.support.server import ADMIN_TOKEN, TOKEN, ServerProcess


    measure("InMemoryStore", InMemoryStore(), args.items, args.reads, args.puts)
    with tempfile.TemporaryDirectory() as tmp:
        server = ServerProcess(Path(tmp) / "db", python=args.server_python).start().wait_ready()
        try:
            with Client(server.url, TOKEN, admin_token=ADMIN_TOKEN, deadline_s=120) as client:
                measure("SemmemStore", SemmemStore(client), args.items, args.reads, args.puts)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
