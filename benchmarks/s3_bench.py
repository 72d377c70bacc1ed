"""Object storage: latency and cross-replica visibility on an S3-compatible server (moto).

    .venv/bin/python benchmarks/s3_bench.py --writes 40

Starts moto's S3 server on 127.0.0.1, then two ``Store``/``Memory`` instances in two processes
(the replicas; the fake embedder, so the figures are the store's) on one ``s3://`` prefix:
remember latency through replica A, recall latency through replica B, and how long after A's
write returns B's recall shows it, with ``read_consistency`` 0 and 1 s. moto is an in-memory
Python server, so absolute latencies are not those of a real object store; the shape is.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing as mp
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.recall_bench import pct

BUCKET = "bench"


def options(endpoint: str) -> dict[str, str]:
    """LanceDB storage options for the loopback S3 server."""
    return {"aws_access_key_id": "test", "aws_secret_access_key": "test",
            "aws_region": "us-east-1", "aws_endpoint": endpoint, "allow_http": "true"}


async def _memory(endpoint: str, prefix: str, consistency_ms: int) -> Any:
    from semmem.embedder import HashingEmbedder
    from semmem.memory import Memory
    from semmem.store import Store

    embedder = HashingEmbedder()
    store = Store(f"s3://{BUCKET}/{prefix}", dim=embedder.dim, model_id=embedder.model_id,
                  storage_options=options(endpoint),
                  read_consistency=timedelta(milliseconds=consistency_ms))
    await store.open()
    return Memory(store, embedder)


def reader(endpoint: str, prefix: str, consistency_ms: int, inbox: Any, outbox: Any) -> None:
    """Replica B: for each (marker, written_at) it is told about, poll recall until seen."""
    async def go() -> None:
        mem = await _memory(endpoint, prefix, consistency_ms)
        await mem.recall("p", "warm", 256)
        outbox.put("ready")
        lat: list[float] = []
        while True:
            msg = inbox.get()
            if msg is None:
                break
            marker, written_at = msg
            while True:
                t0 = time.perf_counter()
                text = (await mem.recall("p", marker, 4096)).text
                lat.append((time.perf_counter() - t0) * 1000)
                if marker in text:
                    outbox.put(time.time() - written_at)
                    break
        outbox.put(lat)

    asyncio.run(go())


async def writer(endpoint: str, prefix: str, writes: int, consistency_ms: int) -> dict[str, Any]:
    """Replica A writes; replica B (another process) waits for each write to show."""
    ctx = mp.get_context("spawn")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    mem = await _memory(endpoint, prefix, consistency_ms)
    await mem.remember("p", "seed fact")
    proc = ctx.Process(target=reader, args=(endpoint, prefix, consistency_ms, inbox, outbox))
    proc.start()
    assert outbox.get(timeout=120) == "ready"
    write_ms, visible_ms = [], []
    for i in range(writes):
        marker = f"marker{i}x{consistency_ms}"
        t0 = time.perf_counter()
        await mem.remember("p", f"fact number {i} {marker}")
        write_ms.append((time.perf_counter() - t0) * 1000)
        inbox.put((marker, time.time()))
        visible_ms.append(outbox.get(timeout=120) * 1000)
    inbox.put(None)
    recall_ms = outbox.get(timeout=120)
    proc.join(30)
    return {"write": write_ms, "visible": visible_ms, "recall": recall_ms}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, default=40)
    args = parser.parse_args()
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
                 aws_secret_access_key="test", region_name="us-east-1"
                 ).create_bucket(Bucket=BUCKET)
    print("| read consistency | remember via A p50/p95 ms | recall via B p50/p95 ms | "
          "A's write visible to B after, p50/max ms |")
    print("| --- | --- | --- | --- |")
    try:
        for consistency in (0, 1000):
            r = asyncio.run(writer(endpoint, f"c{consistency}", args.writes, consistency))
            print(f"| {consistency} ms | {pct(r['write'], .5):.1f} / {pct(r['write'], .95):.1f} "
                  f"| {pct(r['recall'], .5):.1f} / {pct(r['recall'], .95):.1f} "
                  f"| {pct(r['visible'], .5):.0f} / {max(r['visible']):.0f} |", flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
