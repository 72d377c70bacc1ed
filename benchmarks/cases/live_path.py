"""The live path over HTTP: a memory written while it is read, against one `semmem serve`.

    .venv/bin/python -m benchmarks live_path --facts 10000

Seeds one partition with ``--facts`` facts (real embeddings of the benchmark base set, through
the store, then one maintenance pass), serves it with the real model, and measures in one run
(every input distinct, so no query cache helps):

- steady recall p50/p95 (sequential, no writes);
- the recall right after a ``remember`` (the next turn's recall), p50/p95;
- a turn of 4 ``remember`` + 1 ``update`` (of an earlier fact) sent at once (wall time),
  against one ``remember``;
- 8 clients sending ``remember`` to the partition for ``--seconds``: acknowledged/s, p50/p95;
- steady recall p50/p95 right after that burst, while the server's maintenance runs.

``--server-repo DIR`` serves from another checkout (to measure older code the same way).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.envelopes import NAMES, QUERIES, envelope, make_facts, summary
from benchmarks.harness import seed_partition as seed
from benchmarks.harness import serve_tree as serve
from tests.support.server import REPO, TOKEN, free_port


class Live:
    """One served partition and the requests the measurements send."""

    def __init__(self, client: httpx.AsyncClient, facts: list[str], rng: random.Random) -> None:
        self.client = client
        self.facts = iter(facts)
        pool = [f"{q.format(n=n)} ({i})" for i in range(40) for q in QUERIES for n in NAMES]
        rng.shuffle(pool)
        self.queries = iter(pool)
        self.ids = 0

    def _id(self) -> str:
        self.ids += 1
        return f"op-{self.ids}"

    async def post(self, body: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        started = time.perf_counter()
        r = await self.client.post("/memory", json=body)
        elapsed = (time.perf_counter() - started) * 1000
        if r.status_code != 200:
            raise SystemExit(f"request failed: {r.status_code} {r.text}")
        return elapsed, r.json()

    async def recall(self) -> float:
        ms, _ = await self.post(envelope(self._id(), operation="recall",
                                         input={"text": next(self.queries)}, maxBytes=1024))
        return ms

    async def remember(self) -> tuple[float, int]:
        ms, body = await self.post(envelope(self._id(), operation="tool", tool="remember",
                                            arguments={"text": next(self.facts)}))
        return ms, int(body["result"]["n"])

    async def update(self, n: int) -> float:
        ms, _ = await self.post(envelope(self._id(), operation="tool", tool="update",
                                         arguments={"n": n, "text": next(self.facts)}))
        return ms


async def measure(live: Live, reps: int, burst_s: float) -> dict[str, Any]:
    """Every figure, in one run against one server."""
    for _ in range(10):  # model, snapshot, connections
        await live.recall()
    steady = [await live.recall() for _ in range(reps)]
    single, after, numbers = [], [], []
    for _ in range(max(20, reps // 3)):
        ms, n = await live.remember()
        single.append(ms)
        numbers.append(n)
        after.append(await live.recall())
    turns = []
    for target in numbers[:max(10, reps // 6)]:  # each turn updates a fact of an earlier turn
        started = time.perf_counter()
        await asyncio.gather(*(live.remember() for _ in range(4)), live.update(target))
        turns.append((time.perf_counter() - started) * 1000)
    burst: list[float] = []
    stop = time.perf_counter() + burst_s

    async def writer() -> None:
        while time.perf_counter() < stop:
            ms, _ = await live.remember()
            burst.append(ms)

    started = time.perf_counter()
    await asyncio.gather(*(writer() for _ in range(8)))
    burst_rate = len(burst) / (time.perf_counter() - started)
    during = [await live.recall() for _ in range(reps)]
    return {"steady_recall": summary(steady), "recall_after_remember": summary(after),
            "remember": summary(single), "turn_4_remember_1_update": summary(turns),
            "burst_8_clients": {**summary(burst), "per_s": round(burst_rate, 1)},
            "recall_after_burst": summary(during)}


async def run(port: int, facts: list[str], rng: random.Random, reps: int,
              burst_s: float) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    limits = httpx.Limits(max_connections=16)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=headers,
                                 timeout=60, limits=limits) as client:
        return await measure(Live(client, facts, rng), reps, burst_s)


def main() -> None:
    """Seed, serve, measure, print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=120, help="recalls per steady figure")
    parser.add_argument("--seconds", type=float, default=20.0, help="the 8-client burst")
    parser.add_argument("--server-repo", type=Path, default=REPO)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    facts = make_facts(20_000, rng)
    with tempfile.TemporaryDirectory(prefix="semmem-live-") as tmp:
        data = Path(tmp) / "db"
        asyncio.run(seed(data, args.facts))
        port = free_port()
        server = serve(data, port, args.server_repo.resolve(), Path(tmp) / "server.log")
        try:
            report = asyncio.run(run(port, facts, rng, args.reps, args.seconds))
        finally:
            server.terminate()
            server.wait(30)
    report = {"facts": args.facts, "server": str(args.server_repo), **report}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{args.facts} facts, one partition, real model, {os.cpu_count()} CPUs, over HTTP")
    steady = report["steady_recall"]["p50_ms"]
    for key, value in report.items():
        if isinstance(value, dict):
            extra = f"  {value['per_s']} acknowledged/s" if "per_s" in value else ""
            print(f"  {key:26s} p50 {value['p50_ms']:7.1f} ms  p95 {value['p95_ms']:7.1f} ms"
                  f"  ({value['p50_ms'] / steady:.2f}× steady p50){extra}")


if __name__ == "__main__":
    main()
