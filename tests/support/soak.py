"""Crash soak: a real server under a bounded write load, killed with SIGKILL at random points.

Each cycle starts ``semmem serve`` on the same store, runs writers (remember / update / forget,
with a recall now and then for a cursor) over several partitions for a random time, then kills
the process with SIGKILL mid-load. After each restart:

- every write that was in flight when the process died is retried with the same body (what
  the host does): it must answer 200, either replaying the committed result or applying once,
  and a second retry must replay it byte for byte;
- every partition, read back through the admin API, must hold exactly the acknowledged items
  (number and text), no number twice, no forgotten item.

After the last cycle the store is left running for the forget window and then every file is
scanned, raw and as Lance's file reader decodes it, for every forgotten or replaced text (each
carries a unique marker): none may remain, not even in the files a killed write or compaction
left (deleted once ``SEMMEM_ORPHAN_AGE_S`` old, 5 s here, by the restarted server's second
purge).

Maintenance is made aggressive (``SEMMEM_COMPACT_EVERY=4``, retention 1 s) so kills also land
in compactions and cleanups. ``benchmarks/cases/soak.py`` runs it from the command line;
``tests/system/test_crash.py`` runs a short version.

``run_stops`` is the replicas' version: two servers share the store, and each cycle stops one
of them (SIGTERM, a rolling deploy) within seconds of forgets made through it; the other one
alone must then purge every dropped text and its vector within the forget window (the stopped
one hands its pending purges to the store), before the stopped one starts again.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.support.files import decoded_hits, decoded_texts, decoded_with, read_if_there
from tests.support.server import ADMIN, AUTH, JSON, ONE_THREAD, ServerProcess, iso_in

HEADERS = {**AUTH, **JSON}
WORDS = ("amber", "basil", "cedar", "delta", "ember", "fjord", "grove", "harbor", "indigo",
         "juniper", "kelp", "lagoon", "meadow", "nectar", "orchid", "pepper", "quartz", "river")


@dataclass
class Partition:
    """What the clients were told about one partition (acknowledged writes only)."""

    name: str
    live: dict[int, str] = field(default_factory=dict)
    assigned: dict[int, str] = field(default_factory=dict)  # every number ever handed out
    dropped: list[str] = field(default_factory=list)  # forgotten or replaced texts
    cursor: str | None = None


@dataclass
class Pending:
    """A write whose answer was lost (the server died) or was a retryable failure."""

    partition: Partition
    body: dict[str, Any]


@dataclass
class Figures:
    """What a soak run counted."""

    kills: int = 0
    acked_writes: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    in_flight: int = 0
    in_flight_committed: int = 0  # the retry replayed a write the dead process had committed
    in_flight_applied: int = 0  # the retry applied a write that had not been committed
    ready_s: list[float] = field(default_factory=list)
    purge_s: float | None = None
    leftover_orphans: list[str] = field(default_factory=list)  # markers in unreferenced files
    leftover_live: list[str] = field(default_factory=list)  # markers in files a version uses
    violations: list[str] = field(default_factory=list)
    idle_writes: int = 0  # writes through the replica held idle past the retention
    idle_waits_s: list[float] = field(default_factory=list)
    stops: int = 0  # replicas stopped (SIGTERM) soon after forgets made through them
    stop_forgets: int = 0  # those forgets
    purged_after_stop_s: list[float] = field(default_factory=list)  # by the other replica
    left_after_stops: int = 0  # dropped texts or vectors in a file at the end

    def summary(self) -> dict[str, Any]:
        """The figures as one JSON-ready dict."""
        ready = sorted(self.ready_s)
        return {
            "kills": self.kills, "acked_writes": self.acked_writes,
            "statuses": dict(sorted(self.statuses.items())), "in_flight": self.in_flight,
            "in_flight_committed_before_kill": self.in_flight_committed,
            "in_flight_applied_on_retry": self.in_flight_applied,
            "restart_to_ready_s": {"median": ready[len(ready) // 2] if ready else None,
                                   "max": ready[-1] if ready else None},
            "dropped_texts_purged_after_s": self.purge_s,
            "dropped_markers_left_in_referenced_files": len(self.leftover_live),
            "dropped_markers_left_in_orphaned_files": len(self.leftover_orphans),
            "idle_replica_writes": self.idle_writes,
            "idle_replica_wait_s": {"median": sorted(self.idle_waits_s)[
                len(self.idle_waits_s) // 2] if self.idle_waits_s else None},
            "replica_stops": self.stops, "forgets_before_stops": self.stop_forgets,
            "purged_by_the_other_replica_s": {
                "median": sorted(self.purged_after_stop_s)[len(self.purged_after_stop_s) // 2]
                if self.purged_after_stop_s else None,
                "max": max(self.purged_after_stop_s, default=None)},
            "dropped_texts_or_vectors_left_after_stops": self.left_after_stops,
            "violations": len(self.violations), "first_violations": self.violations[:10],
        }


class Soak:
    """The write load, the retry of in-flight writes and the checks, over one store."""

    def __init__(self, server: ServerProcess, *, partitions: int, clients: int, seed: int) -> None:
        self.server = server
        self.rng = random.Random(seed)
        self.run = f"s{seed}"
        self.partitions = [Partition(f"soak-{i:03d}") for i in range(partitions)]
        self.clients = clients
        self.figures = Figures()
        self.pending: list[Pending] = []
        self._k = 0

    # ----- bodies ------------------------------------------------------------------------------
    def _marker(self) -> str:
        self._k += 1
        return f"mk{self.run}x{self._k}z"

    def _text(self, p: Partition) -> str:
        words = " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(2, 8)))
        return f"{self._marker()} {p.name} remembers {words}"

    def _body(self, p: Partition, operation: str, **fields: Any) -> dict[str, Any]:
        self._k += 1
        return {"version": 1, "operation": operation, "operationId": f"{self.run}-op{self._k}",
                "partition": p.name, "access": "read-write", "deadlineAt": iso_in(3600),
                **fields}

    def _next_body(self, p: Partition) -> dict[str, Any]:
        roll = self.rng.random()
        cursor = {"cursor": p.cursor} if p.cursor and self.rng.random() < 0.5 else {}
        if not p.live or roll < 0.45:
            return self._body(p, "tool", tool="remember", arguments={"text": self._text(p)})
        n = self.rng.choice(sorted(p.live))
        if roll < 0.70:
            return self._body(p, "tool", tool="update",
                              arguments={"n": n, "text": self._text(p)}, **cursor)
        if roll < 0.85:
            return self._body(p, "tool", tool="forget", arguments={"n": n}, **cursor)
        return self._body(p, "recall", input={"text": None}, maxBytes=16_384)

    # ----- the model of acknowledged state -----------------------------------------------------
    def _violation(self, what: str) -> None:
        self.figures.violations.append(what)

    def _apply(self, p: Partition, body: dict[str, Any], answer: dict[str, Any]) -> None:
        if body["operation"] == "recall":
            p.cursor = answer["cursor"]
            return
        result, args = answer["result"], body["arguments"]
        self.figures.acked_writes += 1
        p.cursor = None  # a cursor older than our own write would conflict on what it touched
        n = result.get("n")
        if body["tool"] == "remember":
            text = args["text"]
            if result.get("existing"):
                self._violation(f"{p.name}: unique text reported as existing: {result}")
            if n in p.assigned and p.assigned[n] != text:
                self._violation(f"{p.name}: number {n} handed out twice")
            p.assigned[n] = text
            p.live[n] = text
        elif body["tool"] == "update":
            if n not in p.live:
                self._violation(f"{p.name}: update of {n} acknowledged but {n} is not live")
                return
            p.dropped.append(p.live[n])
            p.live[n] = args["text"]
        elif body["tool"] == "forget":
            if n not in p.live:
                self._violation(f"{p.name}: forget of {n} acknowledged but {n} is not live")
                return
            p.dropped.append(p.live.pop(n))

    # ----- load --------------------------------------------------------------------------------
    async def _worker(self, client: httpx.AsyncClient, mine: list[Partition],
                      stop: asyncio.Event) -> None:
        while not stop.is_set():
            p = self.rng.choice(mine)
            body = self._next_body(p)
            for attempt in range(3):
                try:
                    r = await client.post("/memory", content=json.dumps(body), headers=HEADERS)
                except httpx.TransportError:  # the server died with this request in flight
                    if body["operation"] == "tool":
                        self.pending.append(Pending(p, body))
                    return
                self.figures.statuses[r.status_code] += 1
                if r.status_code == 200:
                    self._apply(p, body, r.json())
                    break
                if r.status_code in (429, 503) and attempt < 2:  # what the host retries
                    await asyncio.sleep(0.25 * (attempt + 1))
                    continue
                self._violation(f"{p.name}: {body.get('tool', 'recall')} answered "
                                f"{r.status_code}: {r.text[:200]}")
                if r.status_code >= 500 and body["operation"] == "tool":
                    self.pending.append(Pending(p, body))  # outcome unknown: settle it later
                return

    async def load_then_kill(self, seconds: float) -> None:
        """Run the writers for ``seconds``, then SIGKILL the server while they still send."""
        stop = asyncio.Event()
        limits = httpx.Limits(max_connections=self.clients)
        async with httpx.AsyncClient(base_url=self.server.url, timeout=60,
                                     limits=limits) as client:
            groups = [self.partitions[i::self.clients] for i in range(self.clients)]
            tasks = [asyncio.create_task(self._worker(client, g, stop)) for g in groups if g]
            await asyncio.sleep(seconds)
            await asyncio.to_thread(self.server.kill9)
            self.figures.kills += 1
            stop.set()
            await asyncio.gather(*tasks)

    # ----- after a restart ---------------------------------------------------------------------
    def items(self, client: httpx.Client, p: Partition) -> list[dict[str, Any]]:
        """Every live item of ``p`` as the store has it (admin API, all pages)."""
        out: list[dict[str, Any]] = []
        offset: int | None = 0
        while offset is not None:
            r = client.get("/admin/items", params={"partition": p.name, "offset": offset,
                                                    "limit": 1000}, headers=ADMIN)
            r.raise_for_status()
            page = r.json()
            out.extend(page["items"])
            offset = page["next"]
        return out

    def settle_pending(self, client: httpx.Client) -> None:
        """Retry every write whose answer was lost: applied or replayed exactly once."""
        pending, self.pending = self.pending, []
        for item in pending:
            p, body = item.partition, item.body
            self.figures.in_flight += 1
            stored = {i["text"] for i in self.items(client, p)}
            text = body["arguments"].get("text")
            gone = body["tool"] == "forget" and body["arguments"]["n"] not in {
                i["n"] for i in self.items(client, p)}
            committed = (text in stored) if text is not None else gone
            first = client.post("/memory", content=json.dumps(body), headers=HEADERS)
            if first.status_code != 200:
                self._violation(f"{p.name}: retry of in-flight {body['tool']} answered "
                                f"{first.status_code}: {first.text[:200]}")
                continue
            self.figures.in_flight_committed += committed
            self.figures.in_flight_applied += not committed
            self._apply(p, body, first.json())
            again = client.post("/memory", content=json.dumps(body), headers=HEADERS)
            if again.content != first.content:
                self._violation(f"{p.name}: second retry of {body['tool']} did not replay: "
                                f"{first.text} then {again.text}")

    def verify(self, client: httpx.Client) -> None:
        """Every partition holds exactly the acknowledged items; numbers unique."""
        for p in self.partitions:
            items = self.items(client, p)
            numbers = [i["n"] for i in items]
            if len(numbers) != len(set(numbers)):
                self._violation(f"{p.name}: duplicate numbers {sorted(numbers)}")
            have = {i["n"]: i["text"] for i in items}
            if have != p.live:
                lost = {n: t for n, t in p.live.items() if have.get(n) != t}
                extra = {n: t for n, t in have.items() if p.live.get(n) != t}
                self._violation(f"{p.name}: store differs from acknowledged writes: "
                                f"missing/changed {lost}, unexpected {extra}")
            back = set(have.values()) & set(p.dropped)
            if back:
                self._violation(f"{p.name}: forgotten or replaced texts came back: {back}")

    def idle_write(self, idle: ServerProcess, p: Partition) -> None:
        """A remember through the idle replica (it decides on what it last saw of ``p``)."""
        body = self._body(p, "tool", tool="remember", arguments={"text": self._text(p)})
        with httpx.Client(base_url=idle.url, timeout=60) as c:
            r = c.post("/memory", content=json.dumps(body), headers=HEADERS)
        self.figures.statuses[r.status_code] += 1
        self.figures.idle_writes += 1
        if r.status_code != 200:
            self._violation(f"{p.name}: idle replica's remember answered {r.status_code}: "
                            f"{r.text[:200]}")
            return
        self._apply(p, body, r.json())

    def check(self) -> None:
        """``semmem check`` on every partition table: a violation per broken invariant."""
        from semmem.store.upkeep.check import check_table

        for table in self.server.data.glob("p_*.lance"):
            for problem in check_table(str(table)):
                self._violation(f"{table.name}: {problem}")

    def scan(self) -> tuple[list[str], list[str]]:
        """Markers of dropped texts still in a file of the store: (in files some version
        references, in orphaned files no version references)."""
        import lance  # the benchmark, not semmem, looks inside the tables here

        markers = {t.split(" ", 1)[0].encode() for p in self.partitions for t in p.dropped}
        live: set[str] = set()
        orphaned: set[str] = set()
        for table in self.server.data.glob("*.lance"):
            used: set[str] = set()
            for _ in range(20):  # the running server's cleanup may drop a version meanwhile
                try:
                    ds = lance.dataset(str(table))
                    for v in ds.versions():
                        old = lance.dataset(str(table), version=v["version"])
                        used.update(Path(f.path).name for frag in old.get_fragments()
                                    for f in frag.data_files())
                    break
                except (ValueError, OSError):
                    used.clear()
                    time.sleep(0.05)
            for path in table.rglob("*"):
                if path.is_file():
                    # raw bytes and what Lance's reader decodes (compressed pages hide text)
                    blob = read_if_there(path) + b"\n".join(decoded_texts(path))
                    hits = {m.decode() for m in markers if m in blob}
                    orphan = path.parent.name == "data" and path.name not in used
                    (orphaned if orphan else live).update(hits)
        return sorted(live), sorted(orphaned)


def _versions(table: Path) -> set[int]:
    from semmem.store.commit.fence import listed_versions

    return listed_versions(str(table), {})


def _hold_idle(soak: Soak, idle: ServerProcess, timeout_s: float = 60.0) -> None:
    """The idle replica writes to one partition, then stays idle on it until the other
    server's cleanup removed the version above the one it decided on, and writes again."""
    from semmem.store.rows import table_name

    p = soak.rng.choice(soak.partitions)
    soak.idle_write(idle, p)
    table = soak.server.data / f"{table_name(p.name)}.lance"
    held = max(_versions(table))
    started = time.monotonic()
    while held + 1 not in _versions(table):  # the other server must write on top first
        if time.monotonic() - started > timeout_s:
            return
        time.sleep(0.1)
    while held + 1 in _versions(table):
        if time.monotonic() - started > timeout_s:
            soak._violation(f"{p.name}: version {held + 1} never cleaned up")
            return
        time.sleep(0.1)
    soak.figures.idle_waits_s.append(round(time.monotonic() - started, 1))
    soak.idle_write(idle, p)


def run(kills: int, *, data: Path, fake_model: bool, partitions: int = 12, clients: int = 4,
        seed: int = 1, min_load_s: float = 0.3, max_load_s: float = 2.5,
        purge_timeout_s: float = 60.0, log: Path | None = None,
        idle_replica: bool = False) -> Figures:
    """The whole soak: ``kills`` cycles of load and SIGKILL, checks after each restart, and a
    final byte scan for dropped texts. ``idle_replica``: a second server on the same store
    writes to a partition, stays idle on it while the first writes, forgets and cleans up past
    the retention (the cycle's load runs meanwhile), then writes again."""
    env = {"SEMMEM_COMPACT_EVERY": "4", "SEMMEM_VERSION_RETENTION_S": "1",
           "SEMMEM_MAINTENANCE_DELAY_S": "0.1", "SEMMEM_MAX_CONCURRENCY": "64",
           "SEMMEM_ORPHAN_AGE_S": "5"}
    server = ServerProcess(data, model=not fake_model, log=log, maintenance_delay_s=None,
                           env=env if fake_model else {**ONE_THREAD, **env})
    idle = ServerProcess(data, model=not fake_model, maintenance_delay_s=None,
                         log=None if log is None else log.with_name("idle-" + log.name),
                         env=env if fake_model else {**ONE_THREAD, **env})
    soak = Soak(server, partitions=partitions, clients=clients, seed=seed)
    try:
        if idle_replica:
            idle.start().wait_ready()
        for _ in range(kills):
            server.start()
            soak.figures.ready_s.append(server.wait_ready().ready_s)
            with httpx.Client(base_url=server.url, timeout=60) as c:
                soak.settle_pending(c)
                soak.verify(c)
            load = soak.rng.uniform(min_load_s, max_load_s)
            if idle_replica:
                holding = threading.Thread(target=_hold_idle, args=(soak, idle))
                holding.start()
                asyncio.run(soak.load_then_kill(load))
                server.start()
                server.wait_ready()
                holding.join()
                with httpx.Client(base_url=server.url, timeout=60) as c:
                    soak.settle_pending(c)
                    soak.verify(c)
                asyncio.run(soak.load_then_kill(soak.rng.uniform(min_load_s, max_load_s)))
            else:
                asyncio.run(soak.load_then_kill(load))
        server.start()
        soak.figures.ready_s.append(server.wait_ready().ready_s)
        with httpx.Client(base_url=server.url, timeout=60) as c:
            soak.settle_pending(c)
            soak.verify(c)
        started = time.monotonic()  # the restarted server's start-up purge must clean up
        while True:
            live, orphaned = soak.scan()
            if not live and not orphaned:  # no file holds a dropped text any more
                soak.figures.purge_s = round(time.monotonic() - started, 1)
                break
            if time.monotonic() - started > purge_timeout_s:
                soak._violation(f"dropped texts still on disk after {purge_timeout_s} s: "
                                f"{(live + orphaned)[:5]}")
                break
            time.sleep(0.5)
        soak.figures.leftover_live, soak.figures.leftover_orphans = soak.scan()
        server.stop()
        idle.stop()
        soak.check()
    finally:
        server.stop()
        idle.stop()
    return soak.figures



# ----- replicas stopped soon after their forgets ------------------------------------------------
async def _load(soak: Soak, servers: list[ServerProcess], seconds: float) -> None:
    """The writers for ``seconds``, each partition's through one of ``servers``."""
    stop = asyncio.Event()
    limits = httpx.Limits(max_connections=soak.clients)
    clients = [httpx.AsyncClient(base_url=s.url, timeout=60, limits=limits) for s in servers]
    try:
        groups = [soak.partitions[i::soak.clients] for i in range(soak.clients)]
        tasks = [asyncio.create_task(soak._worker(clients[i % len(clients)], g, stop))
                 for i, g in enumerate(groups) if g]
        await asyncio.sleep(seconds)
        stop.set()
        await asyncio.gather(*tasks)
    finally:
        for c in clients:
            await c.aclose()


def _forget_through(soak: Soak, server: ServerProcess, count: int) -> int:
    """Up to ``count`` forgets through ``server``, of live facts of random partitions."""
    done = 0
    with httpx.Client(base_url=server.url, timeout=60) as c:
        for p in soak.rng.sample(soak.partitions, len(soak.partitions)):
            if done == count or not p.live:
                continue
            body = soak._body(p, "tool", tool="forget",
                              arguments={"n": soak.rng.choice(sorted(p.live))})
            r = c.post("/memory", content=json.dumps(body), headers=HEADERS)
            soak.figures.statuses[r.status_code] += 1
            if r.status_code != 200:
                soak._violation(f"{p.name}: forget through the replica about to stop "
                                f"answered {r.status_code}: {r.text[:200]}")
                continue
            soak._apply(p, body, r.json())
            done += 1
    return done


def _left(soak: Soak, embed: Any) -> list[str]:
    """The dropped texts some file of the store still holds, or holds the vector of. A
    dropped text whose vector a live fact has too (the fake embedder hashes words into 64
    signed buckets: two texts of the same words whose markers share a bucket and sign get one
    vector, about one pair in 1,500 texts) is looked for by its text alone: the live fact's
    row holds that vector rightly."""
    import numpy as np

    dropped = sorted({t for p in soak.partitions for t in p.dropped})
    if not dropped:
        return []
    vectors = np.asarray(embed(dropped), np.float32)
    live = [t for p in soak.partitions for t in p.live.values()]
    twin = np.zeros(len(dropped), bool)
    if live:
        twin = (vectors @ np.asarray(embed(live), np.float32).T).max(axis=1) >= 0.9999
    found = decoded_hits(soak.server.data, dropped, vectors, by_text=twin)
    return [dropped[i] for i in sorted(found)]


def _embedder(fake_model: bool) -> Any:
    """What made the stored vectors (to look for them): the fake, or the bundled model."""
    if fake_model:
        from semmem.embedding.fakes import HashingEmbedder

        return HashingEmbedder().embed_batch
    from semmem.settings import Settings
    from semmem.wiring import load_embedder

    return load_embedder(Settings()).embed_batch


def run_stops(cycles: int, *, data: Path, fake_model: bool, partitions: int = 12,
              clients: int = 4, seed: int = 1, forgets: int = 3, window_s: float = 60.0,
              log: Path | None = None) -> Figures:
    """``cycles`` rounds of: load through two replicas, forgets through a random one of them,
    SIGTERM to it within 0–2 s, then every dropped text and vector out of every file (decoded
    scan) within ``window_s`` while only the other one runs, then the stopped one restarted.
    At the end every partition is checked against the acknowledged writes, the last stop's
    scan is the final one, and ``semmem check`` runs on every partition."""
    env = {"SEMMEM_COMPACT_EVERY": "4", "SEMMEM_VERSION_RETENTION_S": "1",
           "SEMMEM_MAINTENANCE_DELAY_S": "0.1", "SEMMEM_MAX_CONCURRENCY": "64",
           "SEMMEM_ORPHAN_AGE_S": "5"}
    env = env if fake_model else {**ONE_THREAD, **env}
    replicas = [ServerProcess(data, model=not fake_model, maintenance_delay_s=None, env=env,
                              log=None if log is None else log.with_name(f"{n}-{log.name}"))
                for n in ("a", "b")]
    soak = Soak(replicas[0], partitions=partitions, clients=clients, seed=seed)
    embed = _embedder(fake_model)
    try:
        for r in replicas:
            r.start()
        for r in replicas:
            soak.figures.ready_s.append(r.wait_ready().ready_s)
        for cycle in range(cycles):
            asyncio.run(_load(soak, replicas, soak.rng.uniform(0.3, 2.5)))
            victim = soak.rng.choice(replicas)
            survivor = replicas[1 - replicas.index(victim)]
            before = {t for p in soak.partitions for t in p.dropped}
            soak.figures.stop_forgets += _forget_through(soak, victim, forgets)
            fresh = sorted({t for p in soak.partitions for t in p.dropped} - before)
            seen = decoded_hits(soak.server.data, fresh, embed(fresh)) if fresh else set()
            if len(seen) != len(fresh):  # the positive control: the scan sees them now
                soak._violation(f"the scan missed {len(fresh) - len(seen)} text(s) just "
                                "forgotten")
            time.sleep(soak.rng.uniform(0.0, 2.0))  # "within seconds of its forgets"
            victim.stop()
            soak.figures.stops += 1
            with httpx.Client(base_url=survivor.url, timeout=60) as c:
                soak.settle_pending(c)  # writes a 503 left unsettled (none expected)
            started = time.monotonic()
            while left := _left(soak, embed):
                if time.monotonic() - started > window_s:
                    where = [str(f.relative_to(data))
                             for f in decoded_with(data, left[0], embed([left[0]])[0])]
                    said = [line for r in replicas for line in r.output().splitlines()
                            if "WARNING" in line or "ERROR" in line or "Traceback" in line]
                    soak._violation(f"{len(left)} dropped text(s) or their vectors still on "
                                    f"disk {window_s} s after a replica stopped: {left[:3]}, "
                                    f"the first in {where}; the replicas warned: {said[-8:]}")
                    break
                time.sleep(0.5)
            soak.figures.purged_after_stop_s.append(round(time.monotonic() - started, 1))
            soak.figures.left_after_stops = len(left)
            with httpx.Client(base_url=survivor.url, timeout=60) as c:
                soak.verify(c)
            if cycle < cycles - 1:
                soak.figures.ready_s.append(victim.start().wait_ready().ready_s)
        for r in replicas:
            r.stop()
        soak.check()
    finally:
        for r in replicas:
            r.stop()
    return soak.figures
