"""HTTP under concurrency: requests/s and latency at 1, 8 and 32 concurrent clients.

    .venv/bin/python -m benchmarks http_load --facts 10000 --requests 400
    .venv/bin/python -m benchmarks http_load --mix recall --encoders torch,onnx --rounds 2

A real ``semmem serve`` process (bundled model) on 127.0.0.1 over a store seeded through the
store layer with the real embeddings of the 10k base set, one partition per simulated user
(``--users``). Each client sends a bounded mix: 70 % recall, 20 % search, 10 % remember (all
texts distinct, so no query cache hit); ``--mix recall`` sends recalls only. Statuses other
than 200 are counted (429 = shed). ``--encoders`` restarts the server once per encoder on the
same data (``SEMMEM_ENCODER``), alternating for ``--rounds`` rounds, so the encoders are
compared under the same load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.harness import mutation, open_encoder, pct, queries
from benchmarks.vectors import base_set
from semmem.items import now_ms
from semmem.store import ItemRow, Store
from tests.support.server import AUTH, JSON, ServerProcess, iso_in


async def seed(data: Path, users: int, per_user: int) -> None:
    """``users`` partitions of ``per_user`` facts with their real (cached) embeddings."""
    model = open_encoder("torch")
    texts, vectors, _ = base_set(model)
    store = Store(str(data), dim=model.dim, model_id=model.model_id)
    await store.open()
    for u in range(users):
        ts = now_ms()
        lo = (u * per_user) % max(1, len(texts) - per_user)
        rows = [ItemRow(i + 1, texts[lo + i], vectors[lo + i], ts, ts, 1)
                for i in range(min(per_user, len(texts)))]
        await store.write(f"user-{u}", mutation(rows, len(rows)))
        await store.maintain(f"user-{u}")


def request(kind: str, user: int, text: str, i: int) -> dict[str, Any]:
    """One provider request body."""
    env: dict[str, Any] = {"version": 1, "operationId": f"load-{i}", "partition": f"user-{user}",
                           "access": "read-write", "deadlineAt": iso_in(120)}
    if kind == "recall":
        return {**env, "operation": "recall", "input": {"text": text}, "maxBytes": 1024}
    if kind == "search":
        return {**env, "operation": "tool", "tool": "search",
                "arguments": {"query": text, "limit": 10}}
    return {**env, "operation": "tool", "tool": "remember",
            "arguments": {"text": f"new fact {i}: {text}"}}


def run(url: str, clients: int, total: int, users: int, offset: int,
        mix: str = "mixed") -> dict[str, Any]:
    """``total`` requests from ``clients`` threads; latency percentiles and throughput."""
    rng = random.Random(clients)
    texts = queries(total, offset=offset)
    weights = [7, 2, 1] if mix == "mixed" else [1, 0, 0]
    kinds = rng.choices(["recall", "search", "remember"], weights=weights, k=total)
    plan = [(kinds[i], rng.randrange(users), texts[i], offset + i) for i in range(total)]
    lock = threading.Lock()
    lat: dict[str, list[float]] = {"recall": [], "search": [], "remember": []}
    statuses: dict[int, int] = {}

    def worker() -> None:
        with httpx.Client(base_url=url, timeout=120, headers={**AUTH, **JSON}) as client:
            while True:
                with lock:
                    if not plan:
                        return
                    kind, user, text, i = plan.pop()
                payload = json.dumps(request(kind, user, text, i)).encode()
                t0 = time.perf_counter()
                r = client.post("/memory", content=payload)
                ms = (time.perf_counter() - t0) * 1000
                with lock:
                    statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
                    if r.status_code == 200:
                        lat[kind].append(ms)

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    every = [v for vs in lat.values() for v in vs]
    return {"clients": clients, "rps": total / elapsed, "p50": pct(every, .5),
            "p99": pct(every, .99), "recall_p99": pct(lat["recall"], .99) if lat["recall"] else 0,
            "remember_p99": pct(lat["remember"], .99) if lat["remember"] else 0,
            "statuses": statuses}


def serve(data: Path, encoder: str | None) -> ServerProcess:
    """``semmem serve`` on ``data`` (``encoder``: SEMMEM_ENCODER, else the server's default)."""
    env = {"SEMMEM_QUERY_CACHE": "0"}
    if encoder:  # "onnx", or "onnx@2" for two intra-op threads (SEMMEM_TORCH_THREADS)
        name, _, threads = encoder.partition("@")
        env["SEMMEM_ENCODER"] = name
        if threads:
            env["SEMMEM_TORCH_THREADS"] = threads
    server = ServerProcess(data / "db", model=True, env=env, maintenance_delay_s=None,
                           log=data / "server.log").start()
    try:
        server.wait_ready()
    except BaseException:
        server.stop()
        raise
    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--facts", type=int, default=1000, help="facts per user")
    parser.add_argument("--requests", type=int, default=300, help="per concurrency level")
    parser.add_argument("--levels", default="1,8,32")
    parser.add_argument("--mix", choices=["mixed", "recall"], default="mixed")
    parser.add_argument("--encoders", default="",
                        help="e.g. torch,onnx or torch@1,onnx@2 (default: the server's)")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    (Path.cwd() / "data").mkdir(exist_ok=True)
    data = Path(tempfile.mkdtemp(prefix="load-", dir=Path.cwd() / "data"))
    asyncio.run(seed(data / "db", args.users, args.facts))
    print("| encoder | concurrent clients | requests/s | p50 ms | p99 ms | recall p99 ms | "
          "remember p99 ms | statuses |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    offset = 0
    try:
        for _ in range(args.rounds):
            for encoder in args.encoders.split(",") if args.encoders else [None]:
                server = serve(data, encoder)
                url = server.url
                try:
                    run(url, 2, 20, args.users, offset=100_000 + offset)  # warm up
                    for clients in [int(c) for c in args.levels.split(",")]:
                        r = run(url, clients, args.requests, args.users, offset, args.mix)
                        offset += args.requests
                        print(f"| {encoder or 'default'} | {clients} | {r['rps']:.1f} | "
                              f"{r['p50']:.1f} | {r['p99']:.1f} | {r['recall_p99']:.1f} | "
                              f"{r['remember_p99']:.1f} | {r['statuses']} |", flush=True)
                finally:
                    server.stop()
    finally:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
