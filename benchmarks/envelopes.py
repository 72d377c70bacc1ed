"""The synthetic facts, queries and request envelopes of the HTTP cases: a partition named
``bench``, facts about people, questions about them, v1 request bodies, and a summary of
latencies (p50, p95, mean, max)."""

from __future__ import annotations

import random
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

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
