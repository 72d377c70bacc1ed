"""Backups: a full backup while clients write, a restore, an incremental backup.

    .venv/bin/python -m benchmarks backup --partitions 100 --facts 1000 --clients 4

A store of ``--partitions`` × ``--facts`` facts (384-dimensional vectors from the hashing
embedder: the model is beside the point, the bytes are the real model's size) is served by a
real ``semmem serve`` process while ``--clients`` threads remember facts over HTTP; this
process backs the store up meanwhile (its own ``Store`` on the same directory, as
``semmem backup create`` would), then restores it into a new store (no embedder at all: the
stored vectors are written back), then — writers stopped — changes ``--changed`` partitions and
takes an incremental backup, against a full backup of the same quiet store just before.
Before the ``--ledger`` restore, ``--forget`` facts are forgotten in the live store: printed, how
many of them the plain restore holds (all: the control) and how many the ``--ledger`` one
brings back (``resurrected``: none).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import threading
import time
from pathlib import Path

import tests.support.server as harness
from semmem.embedding.fakes import HashingEmbedder
from semmem.lifecycle.backup import create_backup, verify_backup
from semmem.lifecycle.backup_restore import restore_backup
from semmem.memory import Memory
from semmem.store import Store
from semmem.store.copies.objects import Objects
from tests.support.web import send, tool

DIM, MODEL = 384, "hashing-384"
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
         "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
         "sierra", "tango", "uniform", "victor", "whiskey", "yankee"]


def fact(p: int, i: int) -> str:
    """A distinct fact text of a few words."""
    return f"partition {p} fact {i}: " + " ".join(WORDS[(i * k + p) % len(WORDS)]
                                                  for k in (1, 3, 7, 11, 13))


async def populate(root: Path, partitions: int, facts: int) -> float:
    """Write the store; returns the seconds it took."""
    t0 = time.perf_counter()
    memory = await Memory.open(str(root), HashingEmbedder(DIM, MODEL))
    try:
        for p in range(partitions):
            await memory.import_(f"user-{p:04d}", [{"text": fact(p, i)} for i in range(facts)],
                                 batch_size=facts)
    finally:
        await memory.close()
    return time.perf_counter() - t0


def writers(server: harness.ServerProcess, clients: int, partitions: int,
            stop: threading.Event, counts: list[int]) -> list[threading.Thread]:
    """``clients`` threads remembering into random partitions until ``stop``."""

    def run(k: int) -> None:
        with server.client() as c:
            i = 0
            while not stop.is_set():
                name = f"user-{(k * 7919 + i * 31) % partitions:04d}"
                r = send(c, tool("remember", {"text": f"client {k} write {i} kilo"},
                                 partition=name))
                if r.status_code == 200:
                    counts[k] += 1
                i += 1

    threads = [threading.Thread(target=run, args=(k,), daemon=True) for k in range(clients)]
    for t in threads:
        t.start()
    return threads


async def open_store(uri: Path) -> Store:
    """A store over ``uri`` for the benchmark's model."""
    store = Store(str(uri), dim=DIM, model_id=MODEL)
    await store.open()
    return store


async def held(store: Store, facts: list[tuple[str, int]]) -> int:
    """How many of ``facts`` (partition, number) ``store`` holds live."""
    found = 0
    for partition, n in facts:
        found += (await store.snapshot(partition)).get(n) is not None
    return found


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--facts", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--changed", type=int, default=5)
    parser.add_argument("--forget", type=int, default=100,
                        help="facts forgotten after the backup (a --ledger restore withholds)")
    args = parser.parse_args()
    (Path.cwd() / "data").mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="backup-", dir=Path.cwd() / "data"))
    out: dict[str, object] = {"partitions": args.partitions, "facts": args.facts,
                              "clients": args.clients}
    try:
        out["populate_s"] = round(await populate(tmp / "live", args.partitions, args.facts), 1)
        harness.FAKE_LAUNCH = harness.FAKE_LAUNCH.replace(
            "HashingEmbedder()", f"HashingEmbedder({DIM}, {MODEL!r})")
        server = harness.ServerProcess(tmp / "live", env={"SEMMEM_MAX_CONCURRENCY": "64"})
        server.start().wait_ready()
        stop, counts = threading.Event(), [0] * args.clients
        threads = writers(server, args.clients, args.partitions, stop, counts)
        try:
            while sum(counts) < 20:  # the writers are under way
                await asyncio.sleep(0.05)
            store = await open_store(tmp / "live")
            before = sum(counts)
            t0 = time.perf_counter()
            full = await create_backup(store, Objects(str(tmp / "backups")))
            out["full_backup_s"] = round(time.perf_counter() - t0, 2)
            out["writes_during_backup"] = sum(counts) - before
            out["backup_items"] = full.summary()["items"]
            out["backup_mb"] = round(full.summary()["bytes"] / 2**20, 1)
        finally:
            stop.set()
            for t in threads:
                t.join(30)
            server.stop()
        t0 = time.perf_counter()
        checked = verify_backup(Objects(str(tmp / "backups")), full.id)
        out["verify_s"] = round(time.perf_counter() - t0, 2)
        assert not checked.problems, checked.problems
        into = await open_store(tmp / "restored")
        t0 = time.perf_counter()
        report = await restore_backup(Objects(str(tmp / "backups")), full.id, into)
        out["restore_s"] = round(time.perf_counter() - t0, 2)
        out["restore_embedding_calls"] = 0  # restore_backup takes no embedder at all
        out["restored_items"] = report.items
        memory = Memory(store, HashingEmbedder(DIM, MODEL))
        gone = [(f"user-{k % args.partitions:04d}", k // args.partitions + 1)
                for k in range(args.forget)]
        for partition, n in gone:  # forgotten since the backup: its copy still holds them
            await memory.forget(partition, n)
        out["forgotten_since"] = len(gone)
        out["forgotten_in_plain_restore"] = await held(into, gone)  # the control: all of them
        await into.close()
        ledger_into = await open_store(tmp / "restored-ledger")
        t0 = time.perf_counter()
        await restore_backup(Objects(str(tmp / "backups")), full.id, ledger_into, store)
        out["restore_with_ledger_s"] = round(time.perf_counter() - t0, 2)
        out["resurrected"] = await held(ledger_into, gone)
        await ledger_into.close()
        quiet = Objects(str(tmp / "backups-quiet"))
        t0 = time.perf_counter()
        await create_backup(store, quiet)  # full: a new target, writers stopped
        full_quiet = time.perf_counter() - t0
        out["full_quiet_s"] = round(full_quiet, 2)
        for p in range(args.changed):
            await memory.remember(f"user-{p:04d}", "a change since the full backup")
        t0 = time.perf_counter()
        inc = await create_backup(store, quiet)
        incremental = time.perf_counter() - t0
        out["incremental_s"] = round(incremental, 2)
        out["incremental_copied"] = inc.summary()["copied"]
        out["incremental_over_full"] = round(incremental / full_quiet, 3)
        await store.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
