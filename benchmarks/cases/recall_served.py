"""The recall case with ``--served``: what one client of ``semmem serve`` sees.

A fresh store seeded with the facts through the core (in batches, then one maintenance pass),
``semmem serve`` on the bundled model in its own process on a free loopback port, then
sequential requests from one client: recalls with distinct inputs (none served by the query
cache) and remembers of new facts.
"""

from __future__ import annotations

import asyncio
import os
import random
import tempfile
from pathlib import Path
from typing import Any

import httpx

from benchmarks.envelopes import NAMES, QUERIES, envelope, make_facts, seed, summary, timed
from tests.support.server import AUTH, ServerProcess


def served(size: int, recalls: int, remembers: int, max_bytes: int,
           rng_seed: int = 7) -> dict[str, Any]:
    """Seed ``size`` facts, serve, measure; the figures."""
    rng = random.Random(rng_seed)
    facts = make_facts(size + remembers, rng)
    stored, fresh = facts[:size], facts[size:]
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
                pool = [q.format(n=n) for q in QUERIES for n in NAMES]
                picked = rng.sample(pool, min(len(pool), recalls + 10))
                warmup, asked = picked[:10], picked[10:]
                for i, q in enumerate(warmup):  # model, snapshot, connection
                    timed(client, envelope(f"warm-{i}", operation="recall",
                                           input={"text": q}, maxBytes=max_bytes))
                took = [timed(client, envelope(f"r-{i}", operation="recall",
                                               input={"text": q}, maxBytes=max_bytes))
                        for i, q in enumerate(asked)]
                wrote = [timed(client, envelope(f"w-{i}", operation="tool", tool="remember",
                                                arguments={"text": t}))
                         for i, t in enumerate(fresh)]
                sample = client.post("/memory", json=envelope(
                    "sample", operation="recall", input={"text": asked[0]},
                    maxBytes=max_bytes)).json()
        finally:
            server.stop()
    return {"size": size, "served": True, "max_bytes": max_bytes,
            "seed_seconds": round(seed_s, 1), "recall": summary(took),
            "remember": summary(wrote), "sample_recall_lines": len(sample["sources"])}
