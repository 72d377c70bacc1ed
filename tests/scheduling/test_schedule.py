"""Durable deletion: forgotten, replaced and deleted texts leave every file of the store.

Each text carries a unique marker; after the forget window the whole store directory is
scanned byte by byte. The window with the settings here (retention 1 s, raised to the fence's
5 s floor; delay 0.1 s) is ``Purger.window_s`` = 11.2 s plus the maintenance passes.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import lance
import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from semmem.store import Store
from tests.support.files import decoded_with, files_with
from tests.support.server import ADMIN, ServerProcess
from tests.support.web import Client, app_client, send, tool

RETENTION, DELAY = 1.0, 0.1
KEPT = max(RETENTION, 5.0)  # the retention asked for, raised to the write fence's floor
WINDOW = KEPT + DELAY + max(DELAY, 1.0) + KEPT + DELAY  # Purger.window_s
FAST = {"version_retention_s": RETENTION, "maintenance_delay_s": DELAY}


def marker() -> str:
    """A string found nowhere else."""
    return f"mark{uuid.uuid4().hex}"


def referenced(path: Path) -> bool:
    """Whether some version of the Lance table holding ``path`` still uses it."""
    table = next(p for p in path.parents if p.suffix == ".lance")
    if path.parent.name != "data":
        return True  # manifests, deletion files: part of a version
    for _ in range(20):  # a running server's cleanup may remove a version while we look
        try:
            ds = lance.dataset(str(table))
            return any(
                Path(f.path).name == path.name
                for v in ds.versions()
                for frag in lance.dataset(str(table), version=v["version"]).get_fragments()
                for f in frag.data_files()
            )
        except (ValueError, OSError):
            time.sleep(0.05)
    raise AssertionError(f"cannot read the versions of {table}")


def wait_gone(root: Path, needles: list[str], limit: float,
              keep: Callable[[Path], bool] = lambda p: True) -> float:
    """Seconds until no file (that ``keep`` selects) holds any needle; fails after ``limit``."""
    started = time.monotonic()
    while True:
        left = {n: [p for p in files_with(root, n) if keep(p)] for n in needles}
        left = {n: ps for n, ps in left.items() if ps}
        if not left:
            return time.monotonic() - started
        assert time.monotonic() - started < limit, f"still on disk: {left}"
        time.sleep(0.2)


def remember(c: Client, partition: str, text: str) -> int:
    r = send(c, tool("remember", {"text": text}, partition=partition))
    assert r.status_code == 200, r.text
    n: int = r.json()["result"]["n"]
    return n


def test_forget_gone_from_disk_within_window(tmp_path: Path) -> None:
    """A forgotten text is in no file once the window has passed, though recall lost it at once."""
    data, m = tmp_path / "db", marker()
    with app_client(data, **FAST) as c:
        remember(c, "p", "Kept fact about tea")
        n = remember(c, "p", f"Secret {m} about coffee")
        assert files_with(data, m)
        r = send(c, tool("forget", {"n": n}, partition="p"))
        assert r.status_code == 200 and r.json()["result"]["forgotten"] is True
        took = wait_gone(data, [m], WINDOW + 10)
        assert took <= WINDOW + 5
        items = c.get("/admin/items", params={"partition": "p"}, headers=ADMIN).json()
        assert [i["text"] for i in items["items"]] == ["Kept fact about tea"]


def test_forget_then_writes_within_retention_gone_within_window(tmp_path: Path) -> None:
    """Writes right after a forget keep versions that still reference the text past the first
    purge; the follow-up purge removes them (without it the text stayed for good)."""
    data, m = tmp_path / "db", marker()
    with app_client(data, **FAST) as c:
        n = remember(c, "p", f"Secret {m} to drop")
        assert send(c, tool("forget", {"n": n}, partition="p")).status_code == 200
        for i in range(3):
            time.sleep(0.2)
            remember(c, "p", f"Later fact number {i}")
        took = wait_gone(data, [m], WINDOW + 10)
        assert took <= WINDOW + 5


def test_update_old_text_gone_from_disk_within_window(tmp_path: Path) -> None:
    """The text an update replaced leaves the disk like a forgotten one; the new text stays."""
    data, old, new = tmp_path / "db", marker(), marker()
    with app_client(data, **FAST) as c:
        n = remember(c, "p", f"Lives in {old}")
        r = send(c, tool("update", {"n": n, "text": f"Lives in {new}"}, partition="p"))
        assert r.status_code == 200, r.text
        wait_gone(data, [old], WINDOW + 10)
        assert files_with(data, new)


def test_delete_partition_leaves_no_text(tmp_path: Path) -> None:
    """Deleting a partition removes every file holding its texts within the forget window
    (its tombstone goes in at once, its old versions with the purge); others stay."""
    data, gone, kept = tmp_path / "db", marker(), marker()
    with app_client(data, **FAST) as c:
        for i in range(5):
            remember(c, "doomed", f"Doomed fact {i} {gone}")
        remember(c, "other", f"Other fact {kept}")
        assert files_with(data, gone)
        r = c.delete("/admin/partitions", params={"partition": "doomed"}, headers=ADMIN)
        assert r.status_code == 200 and r.json() == {"deleted": True, "partition": "doomed"}
        wait_gone(data, [gone], WINDOW + 10)
        assert files_with(data, kept)


def test_delete_partition_leaves_no_partition_name(tmp_path: Path) -> None:
    """After deleting a partition its name (an owner's namespace) is in no file."""
    data, name = tmp_path / "db", marker()
    with app_client(data, **FAST) as c:
        remember(c, name, "A fact in a partition about to go")
        assert c.delete("/admin/partitions", params={"partition": name},
                        headers=ADMIN).status_code == 200
        wait_gone(data, [name], WINDOW + 5)


@pytest.mark.timeout(120)
def test_forget_before_kill9_purged_after_restart(tmp_path: Path) -> None:
    """A process killed before its purge loses the schedule; the restarted one purges anyway."""
    data, m = tmp_path / "db", marker()
    env = {"SEMMEM_VERSION_RETENTION_S": str(RETENTION),
           "SEMMEM_MAINTENANCE_DELAY_S": "30"}  # the first process never gets to purge
    server = ServerProcess(data, env=env).start().wait_ready()
    try:
        with server.client() as c:
            n = remember(c, "p", f"Secret {m} before the crash")
            assert send(c, tool("forget", {"n": n}, partition="p")).status_code == 200
        time.sleep(0.5)
        assert files_with(data, m)
        server.kill9()
    finally:
        server.stop()
    env["SEMMEM_MAINTENANCE_DELAY_S"] = str(DELAY)
    restarted = ServerProcess(data, env=env).start().wait_ready()
    try:
        took = wait_gone(data, [m], WINDOW + 15)
        assert took <= WINDOW + 10
    finally:
        restarted.stop()


def test_forget_while_compaction_races_writes_unreferenced(tmp_path: Path) -> None:
    """Forgets among a stream of writes with compaction every 2 writes: once the window has
    passed no version of any table references a forgotten text."""
    data = tmp_path / "db"
    markers = [marker() for _ in range(6)]
    with app_client(data, compact_every=2, **FAST) as c:
        numbers = [remember(c, "race", f"Racing secret {m}") for m in markers]
        for i, n in enumerate(numbers):
            remember(c, "race", f"Racing filler {i} one")
            assert send(c, tool("forget", {"n": n}, partition="race")).status_code == 200
            remember(c, "race", f"Racing filler {i} two")
        wait_gone(data, markers, WINDOW + 15, keep=referenced)


async def test_forget_after_compaction_lost_race_leaves_no_orphan(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Compactions racing a stream of writes (some lose their commit: Lance would keep their
    rewritten files for 7 days), then every text forgotten and maintained with zero retention:
    no file may hold any of them."""
    emb = HashingEmbedder()
    store = Store(str(tmp_path / "db"), dim=emb.dim, model_id=emb.model_id)
    await store.open()
    memory, root = Memory(store, emb), tmp_path / "db"
    markers: list[str] = []

    async def writes() -> None:
        for _ in range(8):
            markers.append(marker())
            n = (await memory.remember("p", f"Contended fact {markers[-1]}"))["n"]
            # An edit of an older item deletes a row where the compaction is rewriting (a
            # stream of remembers alone only moves the head, whose fragment compaction skips).
            markers.append(marker())
            await memory.update("p", max(1, n - 3), f"Contended edit {markers[-1]}")

    async def compactions() -> None:
        for _ in range(4):
            await store.maintain("p")
            await asyncio.sleep(0)

    caplog.set_level(logging.INFO, logger="semmem.store")
    for _ in range(20):  # until some compaction lost its commit
        await asyncio.gather(writes(), compactions())
        if any("compaction did not commit" in r.getMessage() for r in caplog.records):
            break
    else:
        pytest.skip("no compaction lost a race on this run")
    assert [f.name for f in root.rglob("p_*.lance/data/*") if not referenced(f)] == []
    for item in await memory.list("p"):
        await memory.forget("p", item.n)
    await store.maintain("p")  # compact: the forgotten rows leave the live data file
    await store.maintain("p", retention=timedelta(0))  # nobody else reads: drop old versions
    assert [m for m in markers if files_with(root, m)] == []


@pytest.mark.timeout(120)
def test_a_forget_made_by_another_process_is_purged_by_the_running_server(
        tmp_path: Path) -> None:
    """``semmem forget`` (or a library user) runs no maintenance: it leaves a purge request
    in the registry, and the server serving the store purges the text within the window plus
    its polling interval (2 s); without it the text stayed on disk until a restart."""
    data, m = tmp_path / "db", marker()
    env = {"SEMMEM_VERSION_RETENTION_S": str(RETENTION),
           "SEMMEM_MAINTENANCE_DELAY_S": str(DELAY)}
    server = ServerProcess(data, env=env).start().wait_ready()
    try:
        with server.client() as c:
            n = remember(c, "p", f"Secret {m} forgotten from the command line")
            remember(c, "p", "an ordinary fact")

        async def forget_elsewhere() -> None:
            memory = await Memory.open(str(data), HashingEmbedder())
            try:
                await memory.forget("p", n)
            finally:
                await memory.close()

        assert files_with(data, m)  # the scan sees it first
        asyncio.run(forget_elsewhere())
        took = wait_gone(data, [m], WINDOW + 20)
        assert took <= WINDOW + 10
        with server.client() as c:
            r = c.get("/admin/stats", params={"partition": "p"}, headers=ADMIN)
            assert r.status_code == 200 and r.json()["count"] == 1
    finally:
        server.stop()
    assert "Traceback" not in server.output()


@pytest.mark.timeout(120)
def test_expired_idempotency_records_leave_every_file_of_an_idle_partition(
        tmp_path: Path) -> None:
    """A record's expiry schedules its own pass (and the purge after it): in a partition
    nobody writes to again, the record and its keyed fingerprint leave every file within
    the TTL plus the window, instead of waiting for a later write."""
    data = tmp_path / "db"
    env = {"SEMMEM_VERSION_RETENTION_S": str(RETENTION),
           "SEMMEM_MAINTENANCE_DELAY_S": str(DELAY), "SEMMEM_IDEMPOTENCY_TTL_S": "1"}
    server = ServerProcess(data, env=env).start().wait_ready()
    try:
        with server.client() as c:
            body = tool("remember", {"text": "a fact written with an operation id"},
                        partition="idle", operation_id="op-that-expires", deadline=1.0)
            assert send(c, body).status_code == 200
        from semmem.store.rows import op_key

        key = op_key("op-that-expires")
        assert decoded_with(data, text=key)  # the scan sees the record first
        deadline = time.monotonic() + 1 + WINDOW + 20
        while decoded_with(data, text=key):
            assert time.monotonic() < deadline, "the expired record stayed on disk"
            time.sleep(0.2)
    finally:
        server.stop()


@pytest.mark.broken_store
async def test_a_corrupt_partition_backs_off_and_logs_once_per_interval(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Maintenance of a partition whose manifests are garbage fails: it is retried after 1 s,
    2 s, 4 s … (not every delay), with one traceback and then one line per retry."""
    from semmem.scheduling.maintainer import Maintainer, backoff_s

    embedder = HashingEmbedder()
    store = Store(str(tmp_path / "db"), dim=embedder.dim, model_id=embedder.model_id)
    await store.open()
    memory = Memory(store, embedder)
    for i in range(3):
        await memory.remember("broken", f"fact {i} {marker()}")
    table = next((tmp_path / "db").glob("p_*.lance"))
    for path in (table / "_versions").iterdir():  # every manifest unreadable
        path.write_bytes(b"not a manifest")
    maintainer = Maintainer(store, delay_s=0.05, compact_every=1)
    caplog.set_level(logging.INFO, logger="semmem.scheduling.schedule")
    maintainer.start()  # the server's own loop
    try:
        maintainer.touched("broken", forgot=False)
        deadline = time.monotonic() + 30
        while maintainer.failures("broken") < 3:
            maintainer.touched("broken", forgot=False)  # writes keep coming: no sooner retry
            assert time.monotonic() < deadline, maintainer.failures("broken")
            await asyncio.sleep(0.02)
    finally:
        await maintainer.stop()
    failed = [r for r in caplog.records if "maintenance failed" in r.getMessage()]
    assert len(failed) == 3
    gaps = [b.created - a.created for a, b in itertools.pairwise(failed)]
    assert gaps[0] >= backoff_s(0.05, 1) == 1.0 and gaps[1] >= backoff_s(0.05, 2) == 2.0
    assert failed[0].exc_info is not None and not any(r.exc_info for r in failed[1:])
    assert "3 times in a row" in failed[2].getMessage()
    await memory.close()


async def test_the_retention_sweep_runs_at_start_then_every_interval(tmp_path: Path) -> None:
    """``Maintenance`` runs the sweep of every partition once at start and then every
    interval, and a partition asked for soon on its own, once however often it is asked."""
    from semmem.scheduling.schedule import Maintenance

    emb = HashingEmbedder()
    store = Store(str(tmp_path / "db"), dim=emb.dim, model_id=emb.model_id)
    await store.open()
    maintenance = Maintenance(store, delay_s=0.05, compact_every=32, follow_s=0)
    calls: list[list[str] | None] = []

    async def sweep(names: list[str] | None) -> None:
        calls.append(names)

    maintenance.sweeping(sweep, 0.2)
    maintenance.start([])
    started = time.monotonic()
    while calls.count(None) < 3:  # at start, then twice more
        assert time.monotonic() - started < 10
        await asyncio.sleep(0.02)
    for _ in range(5):
        maintenance.sweep_soon("p")
    while ["p"] not in calls:
        assert time.monotonic() - started < 10
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.2)
    assert calls.count(["p"]) == 1
    await maintenance.stop()
    await store.close()


def wait_decoded_gone(root: Path, text: str, vector: object, limit: float) -> float:
    """Seconds until no file holds ``text`` or ``vector``, raw or decoded; fails after
    ``limit``."""
    started = time.monotonic()
    while left := decoded_with(root, text, vector):
        assert time.monotonic() - started < limit, f"still on disk: {left}"
        time.sleep(0.5)
    return time.monotonic() - started


@pytest.mark.timeout(180)
def test_a_server_stopped_after_a_forget_hands_its_purge_to_the_other_replica(
        tmp_path: Path) -> None:
    """Two replicas; a forget through A, then A gets SIGTERM at once (a rolling deploy): A
    hands its pending purge to the store, and B, still running, purges the text and its
    vector within the window plus its polling interval. Before, A's schedule died with it and
    B never purged (the text stayed until some restart)."""
    data, m = tmp_path / "db", marker()
    text = f"Secret {m} forgotten just before a deploy"
    env = {"SEMMEM_VERSION_RETENTION_S": str(RETENTION),
           "SEMMEM_MAINTENANCE_DELAY_S": str(DELAY)}
    a = ServerProcess(data, env=env, log=tmp_path / "a.log").start()
    b = ServerProcess(data, env=env, log=tmp_path / "b.log").start()
    try:
        a.wait_ready()
        b.wait_ready()
        with a.client() as c:
            n = remember(c, "p", text)
            remember(c, "p", "an ordinary fact")
            assert send(c, tool("forget", {"n": n}, partition="p")).status_code == 200
        vector = HashingEmbedder().embed_batch([text])[0]
        assert decoded_with(data, text, vector)  # the scan sees the text first
        a.stop()  # SIGTERM: uvicorn's graceful stop (it re-raises the signal after)
        took = wait_decoded_gone(data, text, vector, WINDOW + 30)
        assert took <= WINDOW + 15
        with b.client() as c:
            r = c.get("/admin/stats", params={"partition": "p"}, headers=ADMIN)
            assert r.status_code == 200 and r.json()["count"] == 1
    finally:
        a.stop()
        b.stop()
    assert "Traceback" not in a.output() + b.output()
