"""The recall case with ``--served``: what clients of ``semmem serve`` see while the memory they
read is written (the live path; once its own case, ``live_path``).

One partition of ``--sizes`` facts (the real embeddings of the base set, through the store,
then one maintenance pass), ``semmem serve`` on the bundled model in its own process (of
another checkout's code with ``--server-repo DIR``), then, every input distinct (no query cache
helps):

- steady recall p50/p95 (``--reps`` sequential recalls, no writes);
- ``--remembers`` single ``remember`` calls, each followed by a recall (the next turn's);
- turns of 4 ``remember`` + 1 ``update`` (of an earlier fact) sent at once (wall time), one
  per two remembers (at least one);
- with ``--seconds S``: 8 clients sending ``remember`` for S seconds (acknowledged/s,
  p50/p95), then steady recall again while the server's maintenance runs.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.envelopes import NAMES, QUERIES, envelope, make_facts, summary
from benchmarks.harness import seed_partition, serve_tree
from tests.support.server import TOKEN, free_port


class Live:
    """One served partition and the requests the measurements send."""

    def __init__(self, client: httpx.AsyncClient, facts: list[str], rng: random.Random,
                 max_bytes: int) -> None:
        self.client = client
        self.facts = iter(facts)
        pool = [f"{q.format(n=n)} ({i})" for i in range(40) for q in QUERIES for n in NAMES]
        rng.shuffle(pool)
        self.queries = iter(pool)
        self.max_bytes = max_bytes
        self.ids = 0

    async def post(self, body: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        """Milliseconds and the answer of one request, which must succeed."""
        self.ids += 1
        started = time.perf_counter()
        r = await self.client.post("/memory", json={**body, "operationId": f"op-{self.ids}"})
        elapsed = (time.perf_counter() - started) * 1000
        if r.status_code != 200:
            raise SystemExit(f"request failed: {r.status_code} {r.text}")
        return elapsed, r.json()

    async def recall(self) -> float:
        ms, _ = await self.post(envelope("", operation="recall",
                                         input={"text": next(self.queries)},
                                         maxBytes=self.max_bytes))
        return ms

    async def remember(self) -> tuple[float, int]:
        ms, body = await self.post(envelope("", operation="tool", tool="remember",
                                            arguments={"text": next(self.facts)}))
        return ms, int(body["result"]["n"])

    async def update(self, n: int) -> float:
        ms, _ = await self.post(envelope("", operation="tool", tool="update",
                                         arguments={"n": n, "text": next(self.facts)}))
        return ms


async def measure(live: Live, reps: int, remembers: int, burst_s: float) -> dict[str, Any]:
    """Every figure, in one run against one server."""
    for _ in range(10):  # model, snapshot, connections
        await live.recall()
    steady = [await live.recall() for _ in range(reps)]
    single, after, numbers = [], [], []
    for _ in range(remembers):
        ms, n = await live.remember()
        single.append(ms)
        numbers.append(n)
        after.append(await live.recall())
    turns = []
    for target in numbers[:max(1, remembers // 2)]:  # each turn updates an earlier fact
        started = time.perf_counter()
        await asyncio.gather(*(live.remember() for _ in range(4)), live.update(target))
        turns.append((time.perf_counter() - started) * 1000)
    out = {"steady_recall": summary(steady), "recall_after_remember": summary(after),
           "remember": summary(single), "turn_4_remember_1_update": summary(turns)}
    if burst_s > 0:
        burst: list[float] = []
        stop = time.perf_counter() + burst_s

        async def writer() -> None:
            while time.perf_counter() < stop:
                burst.append((await live.remember())[0])

        started = time.perf_counter()
        await asyncio.gather(*(writer() for _ in range(8)))
        rate = len(burst) / (time.perf_counter() - started)
        out["burst_8_clients"] = {**summary(burst), "per_s": round(rate, 1)}
        out["recall_after_burst"] = summary([await live.recall() for _ in range(reps)])
    return out


async def against(port: int, facts: list[str], rng: random.Random, reps: int, remembers: int,
                  max_bytes: int, burst_s: float) -> dict[str, Any]:
    """The measurements against the server on ``port``."""
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}",
                                 headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60,
                                 limits=httpx.Limits(max_connections=16)) as client:
        return await measure(Live(client, facts, rng, max_bytes), reps, remembers, burst_s)


def served(size: int, reps: int, remembers: int, max_bytes: int, burst_s: float = 0.0,
           repo: Path | None = None, rng_seed: int = 11) -> dict[str, Any]:
    """Seed ``size`` facts, serve them (``repo``'s code), measure; the figures."""
    from tests.support.server import REPO

    tree = (repo or REPO).resolve()
    rng = random.Random(rng_seed)
    facts = make_facts(3 * remembers + int(1000 * burst_s) + 20, rng)  # ≤ 1,000/s
    with tempfile.TemporaryDirectory(prefix="semmem-served-") as tmp:
        data = Path(tmp) / "db"
        started = time.perf_counter()
        asyncio.run(seed_partition(data, size))
        seeded = time.perf_counter() - started
        port = free_port()
        server = serve_tree(data, port, tree, Path(tmp) / "server.log")
        try:
            figures = asyncio.run(against(port, facts, rng, reps, remembers, max_bytes,
                                          burst_s))
        finally:
            server.terminate()
            server.wait(30)
    steady = figures["steady_recall"]["p50_ms"]
    return {"size": size, "served": True, "server": str(tree), "max_bytes": max_bytes,
            "seed_seconds": round(seeded, 1), **figures,
            "after_remember_ratio": round(figures["recall_after_remember"]["p50_ms"] / steady, 2),
            "turn_ratio": round(figures["turn_4_remember_1_update"]["p50_ms"]
                                / figures["remember"]["p50_ms"], 2)}
