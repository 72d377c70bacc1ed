"""Simulated conversations against one `semmem serve`: the read and write mix of real agents.

    .venv/bin/python -m benchmarks agent_turns --clients 1,8,32 --seconds 30

C concurrent conversations, each in its own partition pre-filled with ``--facts`` facts (real
embeddings of the benchmark base set, written through the store). Every turn recalls a fresh
input; then, with probability 0.3, remembers one new fact (sometimes two or three at once, sent
in parallel like a model's parallel tool calls), with 0.05 updates and with 0.02 forgets a number
the recall showed, under the recall's cursor. A 429 is retried after its ``Retry-After`` (as a
host does) and counted. Reports per-operation p50/p95/p99, turns/s and errors per C.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.envelopes import NAMES, QUERIES, make_facts
from benchmarks.harness import pct
from benchmarks.harness import serve_tree as serve
from tests.support.server import REPO, TOKEN, free_port, iso_in


class Conversation:
    """One simulated agent talking to its own partition."""

    def __init__(self, client: httpx.AsyncClient, partition: str, rng: random.Random,
                 texts: list[str], tally: dict[str, Any]) -> None:
        self.client, self.partition, self.rng = client, partition, rng
        self.texts = iter(texts)
        self.tally = tally
        self.ids = 0
        self.run = secrets.token_hex(4)  # operation ids unique across runs and levels

    async def call(self, kind: str, body: dict[str, Any]) -> dict[str, Any] | None:
        self.ids += 1
        body = {"version": 1, "operationId": f"{self.run}-{self.partition}-{self.ids}",
                "partition": self.partition, "access": "read-write",
                "deadlineAt": iso_in(30), **body}
        started = time.perf_counter()
        while True:
            r = await self.client.post("/memory", json=body)
            if r.status_code != 429:
                break
            self.tally["retried_429"] += 1
            await asyncio.sleep(float(r.headers.get("retry-after", "1")))
        self.tally["ms"].setdefault(kind, []).append((time.perf_counter() - started) * 1000)
        if r.status_code != 200:
            self.tally["errors"].setdefault(f"{kind} {r.status_code}", 0)
            self.tally["errors"][f"{kind} {r.status_code}"] += 1
            return None
        answer: dict[str, Any] = r.json()
        return answer

    async def turn(self) -> None:
        query = self.rng.choice(QUERIES).format(n=self.rng.choice(NAMES)) + \
            f" ({self.rng.randrange(10**9)})"
        recalled = await self.call("recall", {"operation": "recall", "input": {"text": query},
                                              "maxBytes": 1024})
        if recalled is None:
            return
        cursor, shown = recalled["cursor"], [int(s["id"]) for s in recalled["sources"]]
        writes = []
        if self.rng.random() < 0.3:
            for _ in range(self.rng.choice([1, 1, 1, 2, 3])):
                writes.append(self.call("remember", {"operation": "tool", "tool": "remember",
                                                     "arguments": {"text": next(self.texts)}}))
        if shown and self.rng.random() < 0.05:
            writes.append(self.call("update", {
                "operation": "tool", "tool": "update", "cursor": cursor,
                "arguments": {"n": self.rng.choice(shown), "text": next(self.texts)}}))
        if shown and self.rng.random() < 0.02:
            writes.append(self.call("forget", {
                "operation": "tool", "tool": "forget", "cursor": cursor,
                "arguments": {"n": self.rng.choice(shown)}}))
        await asyncio.gather(*writes)
        self.tally["turns"] += 1


async def seed(data: Path, partitions: int, size: int) -> None:
    """``partitions`` partitions of ``size`` real-embedded facts, written through the store."""
    from benchmarks.harness import fill
    from benchmarks.vectors import base_set
    from semmem.embedding.files import default_model_dir
    from semmem.embedding.reference import SentenceTransformerEmbedder
    from semmem.store import Store

    model = SentenceTransformerEmbedder(default_model_dir())
    texts, vectors, _ = base_set(model, 10_000)
    store = Store(str(data), dim=model.dim, model_id=model.model_id)
    await store.open()
    for p in range(partitions):
        start = (p * size) % (len(texts) - size)
        await fill(store, f"conversation-{p}", texts[start:start + size],
                   vectors[start:start + size], size)
    await store.close()


async def run(port: int, clients: int, seconds: float, seed_: int) -> dict[str, Any]:
    tally: dict[str, Any] = {"turns": 0, "retried_429": 0, "errors": {}, "ms": {}}
    rng = random.Random(seed_)
    pool = make_facts(20_000, rng)
    limits = httpx.Limits(max_connections=clients * 4)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60,
                                 headers={"Authorization": f"Bearer {TOKEN}"},
                                 limits=limits) as client:
        chats = [Conversation(client, f"conversation-{c}", random.Random(seed_ + c),
                              pool[c::clients], tally) for c in range(clients)]
        stop = time.perf_counter() + seconds

        async def talk(chat: Conversation) -> None:
            while time.perf_counter() < stop:
                await chat.turn()

        started = time.perf_counter()
        await asyncio.gather(*(talk(c) for c in chats))
        elapsed = time.perf_counter() - started
    ops = {kind: {"n": len(ms), "p50": round(pct(ms, .5), 1), "p95": round(pct(ms, .95), 1),
                  "p99": round(pct(ms, .99), 1)} for kind, ms in sorted(tally["ms"].items())}
    return {"clients": clients, "turns_per_s": round(tally["turns"] / elapsed, 2),
            "turns": tally["turns"], "errors": tally["errors"],
            "retried_429": tally["retried_429"], "ops": ops}


def main() -> None:
    """Seed, serve, converse at each C, print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", default="1,8,32")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--facts", type=int, default=1000)
    parser.add_argument("--server-repo", type=Path, default=REPO)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    levels = [int(c) for c in args.clients.split(",")]
    reports = []
    with tempfile.TemporaryDirectory(prefix="semmem-conv-") as tmp:
        data = Path(tmp) / "db"
        asyncio.run(seed(data, max(levels), args.facts))
        port = free_port()
        server = serve(data, port, args.server_repo.resolve(), Path(tmp) / "server.log")
        try:
            for c in levels:
                reports.append(asyncio.run(run(port, c, args.seconds, args.seed)))
        finally:
            server.terminate()
            server.wait(30)
    if args.json:
        print(json.dumps(reports, indent=2))
        return
    print(f"conversations, {args.facts} facts each, real model, {os.cpu_count()} CPUs, "
          f"{args.seconds:.0f} s per level, server {args.server_repo}")
    for rep in reports:
        print(f"C={rep['clients']:3d}  {rep['turns_per_s']:6.2f} turns/s  errors {rep['errors']}"
              f"  429 retried {rep['retried_429']}")
        for kind, s in rep["ops"].items():
            print(f"       {kind:8s} n={s['n']:5d}  p50 {s['p50']:7.1f}  p95 {s['p95']:7.1f}"
                  f"  p99 {s['p99']:7.1f} ms")


if __name__ == "__main__":
    main()
