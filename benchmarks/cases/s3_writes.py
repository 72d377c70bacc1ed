"""Object storage: latency and cross-replica visibility on an S3-compatible server (moto).

    .venv/bin/python -m benchmarks s3_writes --writes 40

Starts moto's S3 server (``moto_server``, its own process) on 127.0.0.1, then two
``Store``/``Memory`` instances with separate connections and caches (the replicas; the fake
embedder, so the figures are the store's) on one ``s3://`` prefix:
remember latency through replica A, recall latency through replica B, and how long after A's
write returns B's recall shows it, with ``read_consistency`` 0 and 1 s. moto is an in-memory
Python server, so absolute latencies are not those of a real object store; the shape is.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from benchmarks.harness import pct

BUCKET = "bench"


def options(endpoint: str) -> dict[str, str]:
    """LanceDB storage options for the loopback S3 server."""
    return {"aws_access_key_id": "test", "aws_secret_access_key": "test",
            "aws_region": "us-east-1", "aws_endpoint": endpoint, "allow_http": "true"}


async def _memory(endpoint: str, prefix: str, consistency_ms: int) -> Any:
    from semmem.embedding.fakes import HashingEmbedder
    from semmem.memory import Memory
    from semmem.store import Store

    embedder = HashingEmbedder()
    store = Store(f"s3://{BUCKET}/{prefix}", dim=embedder.dim, model_id=embedder.model_id,
                  storage_options=options(endpoint),
                  read_consistency=timedelta(milliseconds=consistency_ms))
    await store.open()
    return Memory(store, embedder)


async def measure(endpoint: str, prefix: str, writes: int, consistency_ms: int
                  ) -> dict[str, list[float]]:
    """Replica A writes; replica B polls recall until each write shows (5 ms between polls)."""
    a = await _memory(endpoint, prefix, consistency_ms)
    b = await _memory(endpoint, prefix, consistency_ms)
    await a.remember("p", "seed fact")
    await b.recall("p", "warm", 256)
    write_ms: list[float] = []
    visible_ms: list[float] = []
    recall_ms: list[float] = []
    for i in range(writes):
        marker = f"marker{i}x{consistency_ms}"
        t0 = time.perf_counter()
        await a.remember("p", f"fact number {i} {marker}")
        written = time.perf_counter()
        write_ms.append((written - t0) * 1000)
        while True:
            t1 = time.perf_counter()
            text = (await b.recall("p", None, 4096)).text  # newest first, no ranking
            recall_ms.append((time.perf_counter() - t1) * 1000)
            if marker in text:
                visible_ms.append((time.perf_counter() - written) * 1000)
                break
            await asyncio.sleep(0.005)
    return {"write": write_ms, "visible": visible_ms, "recall": recall_ms}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, default=40)
    args = parser.parse_args()
    import boto3

    from tests.support.server import free_port

    # moto in its own process, so the replicas here do not share its interpreter lock
    port = free_port()
    server = subprocess.Popen([str(Path(sys.executable).parent / "moto_server"), "-H",
                               "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
                 aws_secret_access_key="test", region_name="us-east-1"
                 ).create_bucket(Bucket=BUCKET)
    print("| read consistency | remember via A p50/p95 ms | recall via B p50/p95 ms | "
          "A's write visible to B after, p50/max ms |")
    print("| --- | --- | --- | --- |")
    try:
        for consistency in (0, 1000):
            r = asyncio.run(measure(endpoint, f"c{consistency}", args.writes, consistency))
            print(f"| {consistency} ms | {pct(r['write'], .5):.1f} / {pct(r['write'], .95):.1f} "
                  f"| {pct(r['recall'], .5):.1f} / {pct(r['recall'], .95):.1f} "
                  f"| {pct(r['visible'], .5):.0f} / {max(r['visible']):.0f} |", flush=True)
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
