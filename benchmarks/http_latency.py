"""Latency of recall and remember over HTTP, with the real model, at N facts in a partition.

Seeds a fresh store with ``--facts`` synthetic facts (through the core, in batches), starts
``semmem serve`` on a free loopback port, then times sequential requests from one client:
``--recalls`` recalls with varied inputs and ``--remembers`` remembers of new facts.

    .venv/bin/python benchmarks/http_latency.py --facts 1000 --recalls 200 --remembers 100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.server import AUTH, ServerProcess

PARTITION = "bench"

NAMES = ["Alice", "Bruno", "Chen", "Dara", "Emeka", "Fatima", "Goran", "Hana", "Ines", "Jonas",
         "Kofi", "Lena", "Mateo", "Nadia", "Omar", "Priya", "Quentin", "Rosa", "Sven", "Tariq",
         "Uma", "Viktor", "Wen", "Ximena", "Yusuf", "Zoe", "Arjun", "Beatriz", "Cyril", "Dmitri",
         "Elif", "Farid", "Greta", "Hiro", "Ilse", "Jamal", "Kira", "Luca", "Mira", "Nils"]
FACTS = [
    "{n} is allergic to {x}", "{n} prefers {x} for breakfast", "{n} lives in {c}",
    "{n} works as a {j}", "{n} plays the {i} on weekends", "{n} is learning {l}",
    "{n}'s favourite film is set in {c}", "{n} drives a {v} to work", "{n} has a pet {p}",
    "{n} wants to visit {c} next year", "{n} runs {k} km every Sunday",
    "{n}'s birthday is in {m}", "{n} is reading a book about {t}", "{n} dislikes {x}",
    "{n} keeps a {p} called Pixel", "{n} commutes by {v}", "{n} studied {t} at university",
    "{n} speaks {l} at home", "{n} moved from {c} in {m}", "{n} volunteers as a {j} on Fridays",
    "{n} cooks {x} every {m}", "{n} is saving for a trip to {c}", "{n}'s team uses {l} daily",
    "{n} bought a {i} in {c}", "{n} avoids {x} since {m}",
]
FILL = {
    "x": ["peanuts", "oat porridge", "shellfish", "green tea", "sourdough", "mango", "lentils",
          "dark chocolate", "gluten", "espresso"],
    "c": ["Lyon", "Osaka", "Lagos", "Lisbon", "Montreal", "Nairobi", "Seoul", "Krakow",
          "Valparaiso", "Hobart"],
    "j": ["nurse", "welder", "data engineer", "architect", "teacher", "pilot", "baker",
          "translator", "paramedic", "lawyer"],
    "i": ["cello", "banjo", "piano", "trumpet", "drums", "violin", "harp", "ukulele",
          "saxophone", "flute"],
    "l": ["Portuguese", "Japanese", "Swahili", "Polish", "Korean", "Icelandic", "Hindi",
          "Turkish", "Greek", "Finnish"],
    "v": ["bicycle", "electric scooter", "hybrid car", "tram", "motorbike", "van", "ferry",
          "train", "bus", "pickup truck"],
    "p": ["cat", "parrot", "tortoise", "beagle", "rabbit", "goldfish", "ferret", "gecko",
          "hamster", "husky"],
    "k": ["5", "8", "10", "12", "15", "21", "3", "6", "9", "42"],
    "m": ["January", "March", "May", "July", "September", "November", "April", "June",
          "August", "December"],
    "t": ["volcanoes", "medieval trade", "bird migration", "quantum computing", "jazz history",
          "urban gardening", "the Silk Road", "deep-sea fish", "Roman law", "typography"],
}
QUERIES = [
    "What should I cook for {n} tonight?", "Where does {n} live?", "Plan a trip for {n}",
    "What instrument does {n} play?", "Which languages does {n} know?",
    "Recommend a book for {n}", "How does {n} get to work?", "When is {n}'s birthday?",
    "Does {n} have any pets?", "Any food allergies I should know about for {n}?",
]


def make_facts(count: int, rng: random.Random) -> list[str]:
    """``count`` distinct synthetic facts."""
    out: set[str] = set()
    while len(out) < count:
        template = rng.choice(FACTS)
        values = {k: rng.choice(v) for k, v in FILL.items()}
        out.add(template.format(n=rng.choice(NAMES), **values))
    return sorted(out)


async def seed(data: Path, facts: list[str], embedder: Any = None) -> float:
    """Import the facts through the core (the configured model unless ``embedder`` is given),
    then one maintenance pass; returns seconds taken."""
    from semmem.settings import Settings
    from semmem.wiring import open_memory

    started = time.perf_counter()
    memory = await open_memory(Settings(data=str(data)), embedder)
    try:
        await memory.import_(PARTITION, [{"text": t} for t in facts], batch_size=256)
        await memory.maintain(PARTITION)
    finally:
        await memory.close()
    return time.perf_counter() - started


def envelope(operation_id: str, **fields: Any) -> dict[str, Any]:
    """A v1 request body for the bench partition."""
    deadline = datetime.now(UTC) + timedelta(seconds=10)
    return {"version": 1, "operationId": operation_id, "partition": PARTITION,
            "access": "read-write", "deadlineAt": deadline.isoformat(), **fields}


def timed(client: httpx.Client, body: dict[str, Any]) -> float:
    """Milliseconds for one request, which must succeed."""
    started = time.perf_counter()
    r = client.post("/memory", json=body)
    elapsed = (time.perf_counter() - started) * 1000
    if r.status_code != 200:
        raise SystemExit(f"request failed: {r.status_code} {r.text}")
    return elapsed


def summary(samples: list[float]) -> dict[str, float]:
    """p50, p95, mean and max in milliseconds."""
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"n": len(ordered), "p50_ms": round(statistics.median(ordered), 1),
            "p95_ms": round(p95, 1), "mean_ms": round(statistics.fmean(ordered), 1),
            "max_ms": round(ordered[-1], 1)}


def main() -> None:
    """Seed, serve, measure, print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=1000)
    parser.add_argument("--recalls", type=int, default=200)
    parser.add_argument("--remembers", type=int, default=100)
    parser.add_argument("--max-bytes", type=int, default=8192)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    facts = make_facts(args.facts + args.remembers, rng)
    stored, fresh = facts[:args.facts], facts[args.facts:]

    with tempfile.TemporaryDirectory(prefix="semmem-bench-") as tmp:
        data = Path(tmp) / "db"
        seed_s = asyncio.run(seed(data, stored))
        # Only the model and its threads may come from the caller's environment.
        env = {k: os.environ[k] for k in ("SEMMEM_MODEL", "SEMMEM_TORCH_THREADS")
               if k in os.environ}
        server = ServerProcess(data, model=True, env=env, maintenance_delay_s=None,
                               log=Path(tmp) / "server.log").start()
        try:
            server.wait_ready()
            with httpx.Client(base_url=server.url, headers=AUTH, timeout=30) as client:
                # Distinct inputs, so no recall is served by the query-embedding cache.
                pool = [q.format(n=n) for q in QUERIES for n in NAMES]
                picked = rng.sample(pool, min(len(pool), args.recalls + 10))
                warmup, queries = picked[:10], picked[10:]
                for i, q in enumerate(warmup):  # model, snapshot, connection
                    timed(client, envelope(f"warm-{i}", operation="recall",
                                           input={"text": q}, maxBytes=args.max_bytes))
                recalls = [timed(client, envelope(f"r-{i}", operation="recall",
                                                  input={"text": q}, maxBytes=args.max_bytes))
                           for i, q in enumerate(queries)]
                remembers = [timed(client, envelope(f"w-{i}", operation="tool",
                                                    tool="remember", arguments={"text": t}))
                             for i, t in enumerate(fresh)]
                sample = client.post("/memory", json=envelope(
                    "sample", operation="recall", input={"text": queries[0]},
                    maxBytes=args.max_bytes)).json()
        finally:
            server.stop()

    report = {
        "facts": args.facts, "max_bytes": args.max_bytes, "cpus": os.cpu_count(),
        "seed_seconds": round(seed_s, 1), "recall": summary(recalls),
        "remember": summary(remembers),
        "sample_recall_lines": len(sample["sources"]),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{args.facts} facts in one partition, real model, {os.cpu_count()} CPUs, "
          f"sequential requests over HTTP on loopback (seeded in {report['seed_seconds']} s)")
    for name in ("recall", "remember"):
        s = report[name]
        assert isinstance(s, dict)
        print(f"  {name:9s} n={s['n']:4d}  p50 {s['p50_ms']:7.1f} ms  p95 {s['p95_ms']:7.1f} ms"
              f"  mean {s['mean_ms']:7.1f} ms  max {s['max_ms']:7.1f} ms")
    print(f"  (a sample recall returned {report['sample_recall_lines']} lines at "
          f"maxBytes {args.max_bytes})")


if __name__ == "__main__":
    main()
