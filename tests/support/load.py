"""Load and overload on loopback: many clients, mixed operations, many partitions; then a
deliberate overload, and recovery.

Phase 1 (``--seconds`` × ``--clients``): each client loops over recall / search / remember /
update / forget on ``--partitions`` partitions. Reads go to any partition; each partition is
written by one client only, so what it must hold afterwards is known exactly: every partition
is read back through the admin API and compared (a lost, changed or resurrected write counts).

Phase 2 (``--overload-seconds`` × ``--overload-clients``): clients send recalls back to back,
ignoring ``Retry-After``, far beyond ``SEMMEM_MAX_CONCURRENCY``: the server must answer 429
``overloaded`` with ``Retry-After`` (never a 5xx) and keep its memory bounded (resident set
size sampled every 0.25 s).

Phase 3 (recovery): one client recalls for a few seconds; the first answer must come quickly
and every answer be 200.

``benchmarks/cases/load.py`` runs it from the command line; ``tests/system/test_load.py``
runs a short version.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil  # type: ignore[import-untyped]

from tests.support.server import ADMIN, AUTH, ONE_THREAD, ServerProcess, iso_in
from tests.support.soak import WORDS

QUESTIONS = ("what do I like to eat?", "where do I live?", "which pets?", "plans for summer",
             "favourite music", "work schedule", "allergies", "languages spoken")


def pct(values: list[float], q: float) -> float | None:
    """The ``q`` quantile (0–1) of ``values`` in milliseconds, rounded; ``None`` if empty."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)


class Answer:
    """What the raw client reads of a response."""

    def __init__(self, status: int, headers: dict[str, str], content: bytes) -> None:
        self.status_code, self.headers, self.content = status, headers, content

    @property
    def text(self) -> str:
        """The body as text."""
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body as JSON."""
        return json.loads(self.content)


class RawClient:
    """One keep-alive HTTP/1.1 connection speaking just enough HTTP: a Python HTTP client
    library costs more CPU per request than the server, and on a small machine the client
    would measure itself."""

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.host, self.port = host, int(port)
        self._conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._head = (f"POST /memory HTTP/1.1\r\nHost: {host}\r\n"
                      f"Authorization: {AUTH['Authorization']}\r\n"
                      "Content-Type: application/json\r\nContent-Length: ").encode()

    async def post(self, body: bytes) -> Answer:
        """Send one provider request and read its answer (reconnecting if needed)."""
        if self._conn is None:
            self._conn = await asyncio.open_connection(self.host, self.port)
        reader, writer = self._conn
        writer.write(self._head + str(len(body)).encode() + b"\r\n\r\n" + body)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            await self.close()
            raise
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in
                   (line.partition(":") for line in lines[1:] if line)}
        content = await reader.readexactly(int(headers.get("content-length", "0")))
        if headers.get("connection", "").lower() == "close":
            await self.close()
        return Answer(int(lines[0].split()[1]), headers, content)

    async def close(self) -> None:
        """Close the connection."""
        if self._conn is not None:
            self._conn[1].close()
            self._conn = None


@dataclass
class Partition:
    """What one partition must hold: its writer's acknowledged writes."""

    name: str
    live: dict[int, str] = field(default_factory=dict)
    gone: set[str] = field(default_factory=set)


@dataclass
class Tally:
    """Answers and latencies, by operation."""

    statuses: Counter[str] = field(default_factory=Counter)
    latency: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    retry_after_missing: int = 0
    failures: list[str] = field(default_factory=list)

    def count(self, op: str, r: Answer, seconds: float) -> None:
        """Record one answer."""
        self.statuses[f"{op} {r.status_code}"] += 1
        if r.status_code == 200:
            self.latency[op].append(seconds)
        if r.status_code in (429, 503) and "retry-after" not in r.headers:
            self.retry_after_missing += 1
        if r.status_code >= 500:
            self.failures.append(f"{op}: {r.status_code} {r.text[:200]}")

    def by_status(self) -> dict[str, int]:
        """Answers per HTTP status, all operations together."""
        out: Counter[str] = Counter()
        for key, n in self.statuses.items():
            out[key.rsplit(" ", 1)[1]] += n
        return dict(sorted(out.items()))

    def latencies(self) -> dict[str, Any]:
        """p50/p99 (ms) of the 200 answers, per operation and overall."""
        every = [s for v in self.latency.values() for s in v]
        out: dict[str, Any] = {
            op: {"n": len(v), "p50_ms": pct(v, 0.5), "p99_ms": pct(v, 0.99)}
            for op, v in sorted(self.latency.items())
        }
        out["all"] = {"n": len(every), "p50_ms": pct(every, 0.5), "p99_ms": pct(every, 0.99)}
        return out


class RssSampler:
    """The server's resident set size, sampled in the background."""

    def __init__(self, pid: int) -> None:
        self.proc = psutil.Process(pid)
        self.samples: list[tuple[float, int]] = []
        self._task: asyncio.Task[None] | None = None

    def now(self) -> int:
        """Current RSS in bytes (uvicorn serves from this one process)."""
        return int(self.proc.memory_info().rss)

    async def _run(self) -> None:
        while True:
            self.samples.append((time.monotonic(), self.now()))
            await asyncio.sleep(0.25)

    def start(self) -> None:
        """Begin sampling."""
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        """Stop sampling."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def peak_mib(self, since: float, until: float) -> float:
        """The largest sample between two instants, in MiB."""
        inside = [rss for at, rss in self.samples if since <= at <= until]
        return round(max(inside) / 2**20, 1) if inside else 0.0


class Load:
    """The three phases against one server."""

    def __init__(self, server: ServerProcess, *, partitions: int, clients: int, seed: int) -> None:
        self.server = server
        self.rng = random.Random(seed)
        self.parts = [Partition(f"load-{i:03d}") for i in range(partitions)]
        self.clients = clients
        self.tally = Tally()
        self._k = 0

    def _body(self, partition: str, operation: str, access: str = "read-write",
              **fields: Any) -> dict[str, Any]:
        self._k += 1
        return {"version": 1, "operation": operation, "operationId": f"load-{self._k}",
                "partition": partition, "access": access, "deadlineAt": iso_in(30), **fields}

    def _text(self, p: Partition) -> str:
        self._k += 1
        words = " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(3, 10)))
        return f"{p.name} fact {self._k}: likes {words}"

    async def _send(self, client: RawClient, op: str, body: dict[str, Any]) -> Answer | None:
        started = time.perf_counter()
        try:
            r = await client.post(json.dumps(body).encode())
        except (OSError, asyncio.IncompleteReadError) as exc:
            self.tally.failures.append(f"{op}: transport error {type(exc).__name__}")
            return None
        self.tally.count(op, r, time.perf_counter() - started)
        return r

    async def _client(self, client: RawClient, mine: list[Partition], until: float) -> None:
        while time.monotonic() < until:
            roll = self.rng.random()
            if roll < 0.40 or not mine:
                other = self.rng.choice(self.parts).name
                text = self.rng.choice([None, self.rng.choice(QUESTIONS)])
                await self._send(client, "recall", self._body(
                    other, "recall", "read", input={"text": text}, maxBytes=8192))
                continue
            if roll < 0.60:
                other = self.rng.choice(self.parts).name
                await self._send(client, "search", self._body(
                    other, "tool", "read", tool="search",
                    arguments={"query": self.rng.choice(QUESTIONS), "limit": 10}))
                continue
            p = self.rng.choice(mine)
            if roll < 0.85 or not p.live:
                text = self._text(p)
                r = await self._send(client, "remember", self._body(
                    p.name, "tool", tool="remember", arguments={"text": text}))
                if r is not None and r.status_code == 200:
                    p.live[r.json()["result"]["n"]] = text
            elif roll < 0.95:
                n, text = self.rng.choice(sorted(p.live)), self._text(p)
                r = await self._send(client, "update", self._body(
                    p.name, "tool", tool="update", arguments={"n": n, "text": text}))
                if r is not None and r.status_code == 200:
                    p.gone.add(p.live[n])
                    p.live[n] = text
            else:
                n = self.rng.choice(sorted(p.live))
                r = await self._send(client, "forget", self._body(
                    p.name, "tool", tool="forget", arguments={"n": n}))
                if r is not None and r.status_code == 200:
                    p.gone.add(p.live.pop(n))

    async def mixed(self, seconds: float) -> None:
        """Phase 1: the mixed load."""
        until = time.monotonic() + seconds
        clients = [RawClient(self.server.url) for _ in range(self.clients)]
        await asyncio.gather(*(
            self._client(c, self.parts[i::self.clients], until) for i, c in enumerate(clients)))
        for c in clients:
            await c.close()

    def lost_writes(self) -> dict[str, int]:
        """Compare every partition with its writer's acknowledged writes."""
        lost = changed = back = extra = 0
        with httpx.Client(base_url=self.server.url, timeout=60) as c:
            for p in self.parts:
                have: dict[int, str] = {}
                offset: int | None = 0
                while offset is not None:
                    page = c.get("/admin/items", params={"partition": p.name, "offset": offset,
                                                          "limit": 1000}, headers=ADMIN).json()
                    have.update({i["n"]: i["text"] for i in page["items"]})
                    offset = page["next"]
                lost += sum(1 for n in p.live if n not in have)
                changed += sum(1 for n, t in p.live.items() if n in have and have[n] != t)
                back += len(set(have.values()) & p.gone)
                extra += sum(1 for n in have if n not in p.live)
        return {"acknowledged_items": sum(len(p.live) for p in self.parts), "lost": lost,
                "changed": changed, "resurrected": back, "unexpected": extra}

    async def overload(self, seconds: float, clients: int) -> Tally:
        """Phase 2: back-to-back recalls from far more clients than the server serves."""
        tally = Tally()
        until = time.monotonic() + seconds
        # Bodies made up front (deadline an hour out): the clients spend their CPU on sending.
        bodies = [json.dumps(self._body(p.name, "recall", "read", deadlineAt=iso_in(3600),
                                        input={"text": q}, maxBytes=8192)).encode()
                  for p in self.parts[:20] for q in QUESTIONS]

        async def hammer(client: RawClient) -> None:
            while time.monotonic() < until:
                started = time.perf_counter()
                try:
                    r = await client.post(self.rng.choice(bodies))
                except (OSError, asyncio.IncompleteReadError) as exc:
                    tally.failures.append(f"transport error {type(exc).__name__}")
                    continue
                tally.count("recall", r, time.perf_counter() - started)
            await client.close()

        await asyncio.gather(*(hammer(RawClient(self.server.url)) for _ in range(clients)))
        return tally

    async def recovery(self, seconds: float) -> dict[str, Any]:
        """Phase 3: one polite client; time to the first 200 and the answers after it."""
        tally = Tally()
        started = time.monotonic()
        first: float | None = None
        client = RawClient(self.server.url)
        while time.monotonic() - started < seconds:
            body = self._body(self.rng.choice(self.parts).name, "recall", "read",
                              input={"text": self.rng.choice(QUESTIONS)}, maxBytes=8192)
            t0 = time.perf_counter()
            r = await client.post(json.dumps(body).encode())
            tally.count("recall", r, time.perf_counter() - t0)
            if r.status_code == 200 and first is None:
                first = time.monotonic() - started
            if r.status_code == 429:
                await asyncio.sleep(float(r.headers.get("retry-after", "1")))
        await client.close()
        return {"first_200_after_s": None if first is None else round(first, 3),
                "statuses": tally.by_status(), "latency": tally.latencies()["all"]}


async def run_async(server: ServerProcess, *, seconds: float, clients: int, partitions: int,
                    overload_seconds: float, overload_clients: int, recovery_seconds: float,
                    seed: int) -> dict[str, Any]:
    """All three phases; the figures as one dict (``"ok"`` says whether every check held)."""
    load = Load(server, partitions=partitions, clients=clients, seed=seed)
    assert server.proc is not None
    rss = RssSampler(server.proc.pid)
    idle_mib = round(rss.now() / 2**20, 1)
    rss.start()
    t0 = time.monotonic()
    await load.mixed(seconds)
    t1 = time.monotonic()
    writes = await asyncio.to_thread(load.lost_writes)
    t2 = time.monotonic()
    over = await load.overload(overload_seconds, overload_clients)
    t3 = time.monotonic()
    recovered = await load.recovery(recovery_seconds)
    t4 = time.monotonic()
    await rss.stop()
    after_mib = round(rss.now() / 2**20, 1)
    served = sum(n for k, n in load.tally.statuses.items())
    over_status = over.by_status()
    figures: dict[str, Any] = {
        "load": {
            "seconds": round(t1 - t0, 1), "clients": clients, "partitions": partitions,
            "requests": served, "throughput_rps": round(served / (t1 - t0), 1),
            "statuses": load.tally.by_status(), "latency": load.tally.latencies(),
            "writes": writes, "failures": load.tally.failures[:10],
        },
        "overload": {
            "seconds": round(t3 - t2, 1), "clients": overload_clients,
            "statuses": over_status, "retry_after_missing": over.retry_after_missing,
            "latency_of_200": over.latencies()["all"], "failures": over.failures[:10],
        },
        "recovery": recovered,
        "rss_mib": {"idle": idle_mib, "peak_load": rss.peak_mib(t0, t1),
                    "peak_overload": rss.peak_mib(t2, t3), "peak_recovery": rss.peak_mib(t3, t4),
                    "after": after_mib},
    }
    five = sum(n for s, n in load.tally.by_status().items() if s.startswith("5")) + sum(
        n for s, n in over_status.items() if s.startswith("5"))
    figures["ok"] = (
        five == 0 and not load.tally.failures and not over.failures
        and writes["lost"] == writes["changed"] == writes["resurrected"] == 0
        and writes["unexpected"] == 0
        and (overload_seconds == 0 or over_status.get("429", 0) > 0)
        and over.retry_after_missing == 0
        and recovered["first_200_after_s"] is not None
        and set(recovered["statuses"]) == {"200"}
    )
    return figures


def run(data: Path, *, fake_model: bool, seconds: float = 60, clients: int = 32,
        partitions: int = 100, overload_seconds: float = 15, overload_clients: int = 256,
        recovery_seconds: float = 5, max_concurrency: int = 32, seed: int = 1,
        log: Path | None = None) -> dict[str, Any]:
    """Start a server on ``data``, run the phases, stop it; the figures."""
    env = {"SEMMEM_MAX_CONCURRENCY": str(max_concurrency)}
    server = ServerProcess(data, model=not fake_model, log=log, maintenance_delay_s=None,
                           env=env if fake_model else {**ONE_THREAD, **env})
    server.start()
    try:
        ready = server.wait_ready().ready_s
        figures = asyncio.run(run_async(
            server, seconds=seconds, clients=clients, partitions=partitions,
            overload_seconds=overload_seconds, overload_clients=overload_clients,
            recovery_seconds=recovery_seconds, seed=seed))
    finally:
        server.stop()
    return {"model": "fake" if fake_model else "all-MiniLM-L6-v2",
            "max_concurrency": max_concurrency, "ready_s": round(ready, 1), **figures}

