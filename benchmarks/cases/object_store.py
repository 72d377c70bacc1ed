"""Object storage: S3 requests and wall time per operation, with a round trip injected.

    .venv/bin/python -m benchmarks object_store --sizes 30,1000,10000
    .venv/bin/python -m benchmarks object_store --repo ../other-checkout   # older code

Starts moto's S3 server (its own process) on 127.0.0.1 and the counting proxy of
``tests/support/s3proxy.py`` in front of it; two replicas (``Store`` + ``Memory`` each, their
own connections and caches, the fake embedder at 384 dimensions so the figures are the
store's) share one bucket. Per partition size: the partition is written (30 facts one at a
time; larger ones imported and maintained, then 30 more one at a time), then each operation is
measured ``--reps`` times, first with no delay (requests, counted at the proxy: what moto
receives) and then with ``--delay-ms`` (20) slept before every request (p50 wall time):

- cold recall: a replica opened afresh, its first recall of the partition;
- warm recall: the same recall again;
- remember: one more fact through replica A;
- replica recall: B's recall right after A's remember (B held the older snapshot);
- turn: 5 remembers sent at once through A (one model turn's parallel tool calls);
- forget + purge: a forget through A, then a maintenance pass with zero retention.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MOTO = Path(sys.executable).parent / "moto_server"
DIM = 384
QUERY = "which fact mentions topic 7"
# S3 Standard, us-east-1, per request: PUT, COPY, POST, LIST $0.005 per 1,000; GET and the
# others $0.0004 per 1,000; DELETE free.
PRICE_WRITE, PRICE_READ = 0.005 / 1000, 0.0004 / 1000


def dollars_per_million(entries: list[Any]) -> float:
    """What a million operations that each made ``entries`` would cost in requests."""
    cost = 0.0
    for e in entries:
        method = e.kind.split()[0]
        if method == "DELETE":
            continue
        cost += PRICE_WRITE if method in ("PUT", "POST", "LIST") else PRICE_READ
    return cost * 1_000_000


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End a server this run started."""
    proc.terminate()
    proc.wait(10)


def start_moto() -> str:
    """moto's S3 server in its own process; its endpoint."""
    port = free_port()
    proc = subprocess.Popen([str(MOTO), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    atexit.register(stop, proc)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return f"http://127.0.0.1:{port}"
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def make_bucket(endpoint: str, name: str) -> None:
    """A bucket of its own per size (moto lists a prefix by scanning the whole bucket)."""
    import boto3

    boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
                 aws_secret_access_key="test", region_name="us-east-1").create_bucket(Bucket=name)


class Bench:
    """The proxy, the replicas' options and the measurements."""

    def __init__(self, moto: str, delay_ms: float, reps: int, proxy: Any) -> None:
        self.proxy = proxy.S3Proxy(moto).start()
        self.delay_ms = delay_ms
        self.reps = reps
        self.opts = {"aws_access_key_id": "test", "aws_secret_access_key": "test",
                     "aws_region": "us-east-1", "aws_endpoint": self.proxy.endpoint,
                     "allow_http": "true"}
        self.facts = 0

    async def replica(self, uri: str) -> Any:
        """A replica: its own store (connection, caches) on ``uri``."""
        from semmem.embedding.fakes import HashingEmbedder
        from semmem.memory import Memory
        from semmem.store import Store

        emb = HashingEmbedder(dim=DIM, model_id=f"hashing-{DIM}")
        store = Store(uri, dim=DIM, model_id=emb.model_id, storage_options=self.opts,
                      version_retention=timedelta(seconds=1))
        await store.open()
        return Memory(store, emb)

    def fact(self) -> str:
        """A new, distinct fact."""
        self.facts += 1
        return f"fact {self.facts} about topic {self.facts % 97} and item {self.facts * 7919}"

    async def measure(self, make: Callable[[], Awaitable[Callable[[], Awaitable[Any]]]]
                      ) -> tuple[float, float, float]:
        """Median requests of the step ``make`` prepares (preparation not counted), their
        median cost per million steps, then its p50 wall time with the delay."""
        counts, costs, times = [], [], []
        for delay in (0.0, self.delay_ms):
            self.proxy.delay_ms = 0.0
            for _ in range(self.reps):
                step = await make()
                self.proxy.delay_ms = delay
                self.proxy.reset()
                started = time.perf_counter()
                await step()
                elapsed = (time.perf_counter() - started) * 1000
                if delay == 0.0:
                    counts.append(len(self.proxy.entries()))
                    costs.append(dollars_per_million(self.proxy.entries()))
                else:
                    times.append(elapsed)
                self.proxy.delay_ms = 0.0
        return statistics.median(counts), statistics.median(costs), statistics.median(times)


async def size(bench: Bench, moto: str, n: int) -> dict[str, tuple[float, float, float]]:
    """Every operation's (requests, p50 ms) on a partition of ``n`` facts."""
    bucket = f"bench-{n}-{int(time.time() * 1000)}"
    make_bucket(moto, bucket)
    uri = f"s3://{bucket}/store"
    a, b = await bench.replica(uri), await bench.replica(uri)
    p = "bench-partition"
    if n > 30:
        await a.import_(p, [{"text": bench.fact()} for _ in range(n - 30)], batch_size=1000)
        await a.store.maintain(p, retention=timedelta(0))
    for _ in range(min(n, 30)):
        await a.remember(p, bench.fact())
    await a.recall(p, QUERY, 2000)
    await b.recall(p, QUERY, 2000)
    out: dict[str, tuple[float, float, float]] = {}
    opened: list[Any] = []

    async def cold() -> Callable[[], Awaitable[Any]]:
        for m in opened:
            await m.close()
        opened.clear()
        fresh = await bench.replica(uri)
        opened.append(fresh)
        return lambda: fresh.recall(p, QUERY, 2000)

    out["cold recall"] = await bench.measure(cold)

    async def warm() -> Callable[[], Awaitable[Any]]:
        return lambda: a.recall(p, QUERY, 2000)

    out["warm recall"] = await bench.measure(warm)

    async def remember() -> Callable[[], Awaitable[Any]]:
        return lambda: a.remember(p, bench.fact())

    out["remember"] = await bench.measure(remember)

    async def replica_recall() -> Callable[[], Awaitable[Any]]:
        await a.remember(p, bench.fact())
        return lambda: b.recall(p, QUERY, 2000)

    out["replica recall"] = await bench.measure(replica_recall)

    async def turn() -> Callable[[], Awaitable[Any]]:
        return lambda: asyncio.gather(*(a.remember(p, bench.fact()) for _ in range(5)))

    out["turn of 5 writes"] = await bench.measure(turn)

    async def forget() -> Callable[[], Awaitable[Any]]:
        n_ = (await a.remember(p, bench.fact()))["n"]

        async def go() -> None:
            await a.forget(p, n_)
            await a.store.maintain(p, retention=timedelta(0))

        return go

    out["forget + purge"] = await bench.measure(forget)
    for m in (*opened, a, b):
        await m.close()
    return out


def main() -> None:
    """Run every size and print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="30,1000,10000")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--repo", type=Path, default=ROOT, help="the checkout whose semmem runs")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import tests.support.s3proxy as proxy  # this checkout's proxy, whichever semmem runs

    sys.path.insert(0, str(args.repo.resolve()))
    moto = start_moto()
    bench = Bench(moto, args.delay_ms, args.reps, proxy)
    print(f"semmem from {args.repo}; moto on loopback; {args.delay_ms:.0f} ms per request "
          f"for the times; medians of {args.reps}")
    print(f"{'facts':>6}  {'operation':<18} {'requests':>8} {'$ per 1M':>9} {'p50 ms':>8}")
    for n in (int(s) for s in args.sizes.split(",")):
        for name, (requests, cost, ms) in asyncio.run(size(bench, moto, n)).items():
            print(f"{n:>6}  {name:<18} {requests:>8.0f} {cost:>9.2f} {ms:>8.0f}", flush=True)


if __name__ == "__main__":
    main()
