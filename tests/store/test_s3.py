"""Scale-out on object storage: two server processes on one S3 bucket (moto on loopback).

The S3-compatible server is moto's, started in this process on 127.0.0.1; the two semmem
servers are real ``semmem serve`` processes (fake embedder) with ``SEMMEM_DATA=s3://…`` and the
endpoint, keys and ``allow_http`` in ``SEMMEM_STORAGE_OPTIONS``. Nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from semmem.store import Store
from tests.support.moto import client as s3_client
from tests.support.moto import moto_s3, options
from tests.support.server import ServerProcess
from tests.support.web import recall, send, tool

BUCKET = "semmem-test"


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, str]]:
    """A moto S3 server on loopback with one bucket; yields the LanceDB storage options."""
    with moto_s3(BUCKET) as endpoint:
        yield options(endpoint)


def _replica(tmp_path: Path, name: str, uri: str, options: dict[str, str]) -> ServerProcess:
    env = {"SEMMEM_DATA": uri, "SEMMEM_STORAGE_OPTIONS": json.dumps(options),
           "SEMMEM_MAX_CONCURRENCY": "64"}
    return ServerProcess(tmp_path / name, env=env)


@pytest.fixture
def replicas(tmp_path: Path, s3: dict[str, str], request: pytest.FixtureRequest
             ) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    """Two stateless servers on one fresh prefix of the bucket."""
    uri = f"s3://{BUCKET}/{request.node.name}"
    a = _replica(tmp_path, "a", uri, s3).start()
    b = _replica(tmp_path, "b", uri, s3).start()
    try:
        a.wait_ready(120)
        b.wait_ready(120)
        yield a, b
    finally:
        a.stop()
        b.stop()


def _remember(client: Any, partition: str, text: str) -> dict[str, Any]:
    r = send(client, tool("remember", {"text": text}, partition=partition))
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()["result"]
    assert result["status"] == "stored"
    return result


@pytest.mark.timeout(240)
def test_recall_on_one_replica_sees_a_write_through_the_other(
    replicas: tuple[ServerProcess, ServerProcess],
) -> None:
    a, b = replicas
    with a.client() as ca, b.client() as cb:
        first = _remember(ca, "u1", "Alice is allergic to peanuts")
        assert first["n"] == 1 and first["count"] == 1
        # read consistency 0: the very next recall on the other replica checks for new versions
        r = send(cb, recall("is Alice allergic to anything?", partition="u1"))
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["text"] == "1. Alice is allergic to peanuts"
        assert [s["id"] for s in body["sources"]] == ["1"]
        second = _remember(cb, "u1", "Alice moved to Lisbon")
        # the fake embedder finds "Alice … to …" in both: the first fact is listed, across replicas
        assert second == {"status": "stored", "n": 2, "count": 2, "similar": [
            {"n": 1, "text": "Alice is allergic to peanuts", "score": 0.4472}]}
        again = _remember(ca, "u1", "alice is ALLERGIC to peanuts")  # duplicate, seen across
        assert again == {"status": "stored", "n": 1, "count": 2, "existing": True}
        r = send(ca, tool("forget", {"n": 2}, partition="u1"))
        assert r.status_code == 200 and r.json()["result"]["forgotten"] is True
        r = send(cb, recall(None, partition="u1"))
        assert r.status_code == 200 and r.json()["text"] == "1. Alice is allergic to peanuts"


@pytest.mark.timeout(240)
def test_concurrent_writes_through_both_replicas_lose_nothing(
    replicas: tuple[ServerProcess, ServerProcess],
) -> None:
    a, b = replicas
    per_replica = 12
    with a.client() as ca, b.client() as cb:
        _remember(ca, "shared", "seed fact")

        def write(args: tuple[Any, str, int]) -> int:
            client, name, i = args
            result = _remember(client, "shared", f"{name} writes fact number {i}")
            n: int = result["n"]
            return n

        jobs = [(c, name, i) for i in range(per_replica) for c, name in ((ca, "a"), (cb, "b"))]
        with ThreadPoolExecutor(max_workers=8) as pool:
            numbers = list(pool.map(write, jobs))
        assert sorted(numbers) == list(range(2, 2 + 2 * per_replica))  # no duplicate number
        r = send(cb, recall(None, partition="shared", max_bytes=16_384))
        assert r.status_code == 200, r.text
        lines = r.json()["text"].split("\n")
        texts = sorted(line.split(". ", 1)[1] for line in lines)
        expected = sorted([f"{name} writes fact number {i}" for i in range(per_replica)
                           for name in ("a", "b")] + ["seed fact"])
        assert texts == expected  # no lost write
        r = send(ca, tool("search", {"query": "writes fact", "limit": 1}, partition="shared"))
        assert r.status_code == 200 and r.json()["result"]["count"] == 1 + 2 * per_replica


@pytest.mark.timeout(180)
async def test_replicas_opening_a_new_store_on_s3_share_one_secret(s3: dict[str, str]) -> None:
    """The registry is created with the secret in it (one creator wins on object storage
    too): replicas starting together key their idempotency records alike."""
    for run in range(3):
        stores = [Store(f"s3://{BUCKET}/secret-{run}", dim=8, model_id="m",
                        storage_options=s3) for _ in range(6)]
        await asyncio.gather(*(s.open() for s in stores))
        assert len({s.secret for s in stores}) == 1 and len(stores[0].secret) == 32
        for s in stores:
            await s.close()


async def test_maintenance_on_s3_purges_a_forgotten_text(s3: dict[str, str]) -> None:
    from datetime import timedelta

    marker = "s3-forget-marker-5d1f"
    embedder = HashingEmbedder()
    store = Store(f"s3://{BUCKET}/purge", dim=embedder.dim, model_id=embedder.model_id,
                  storage_options=s3, orphan_age=timedelta(0), tail_rows=1)
    await store.open()
    memory = Memory(store, embedder)
    await memory.remember("p", f"the secret is {marker}")
    await memory.remember("p", "an ordinary fact")
    (holder,) = _objects_holding(s3, "purge/", marker)
    # What a write killed before its commit leaves: a data object no version references.
    folder, name = holder.rsplit("/", 1)
    s3_client(s3["aws_endpoint"]).copy_object(Bucket=BUCKET, Key=f"{folder}/0{name}",
                                              CopySource={"Bucket": BUCKET, "Key": holder})
    await memory.forget("p", 1)
    report = await store.maintain("p", retention=timedelta(0))
    assert report is not None and report.compacted and report.orphans_removed == 1
    assert _objects_holding(s3, "purge/", marker) == []
    assert [it.text for it in await memory.list("p")] == ["an ordinary fact"]


def _objects_holding(s3: dict[str, str], prefix: str, marker: str) -> list[str]:
    client = s3_client(s3["aws_endpoint"])
    keys = [o["Key"] for page in client.get_paginator("list_objects_v2").paginate(
        Bucket=BUCKET, Prefix=prefix) for o in page.get("Contents", [])]
    return [k for k in keys
            if marker.encode() in client.get_object(Bucket=BUCKET, Key=k)["Body"].read()]



@pytest.mark.timeout(240)
async def test_replica_snapshot_follows_the_other_replicas_writes(s3: dict[str, str]) -> None:
    """A replica keeps its snapshot current from the other's versions (read as deltas): after
    every kind of write there, and after compaction, it recalls what a fresh read recalls,
    without rebuilding the snapshot."""
    embedder = HashingEmbedder()

    async def replica() -> Memory:
        return await Memory.open(f"s3://{BUCKET}/follow", embedder, storage_options=s3)

    a, b = await replica(), await replica()
    for text in ("Alice lives in Lyon", "Bruno plays the cello", "Chen drinks green tea"):
        await a.remember("p", text)
    await b.recall("p", "green tea", 500)
    built = b.store.snapshots.rebuilds
    steps = [
        lambda: a.update("p", 2, "Bruno plays the banjo now"),
        lambda: a.forget("p", 1),
        lambda: a.remember("p", "Dara keeps a parrot called Pixel"),
        lambda: a.update("p", 3, attrs={"note": "since 2020"}),
        lambda: a.merge("p", 3, 4),
        lambda: a.maintain("p"),
    ]
    for step in steps:
        await step()
        fresh = await replica()
        for query in ("green tea", "cello banjo", "parrot", None):
            got, want = await b.recall("p", query, 500), await fresh.recall("p", query, 500)
            assert (got.text, got.sources, got.cursor) == (want.text, want.sources, want.cursor)
        await fresh.close()
    assert b.store.snapshots.rebuilds == built
    assert b.store.snapshots.forwards >= len(steps) - 1  # maintain may find nothing to do
    await a.close()
    await b.close()


@pytest.mark.timeout(240)
def test_replicas_racing_on_a_partitions_first_write_keep_every_fact(
    replicas: tuple[ServerProcess, ServerProcess],
) -> None:
    """Both replicas write the first facts of many new partitions at once: the table is created
    once, and every acknowledged fact is kept under its own number."""
    a, b = replicas
    partitions = [f"new-{i}" for i in range(12)]
    with a.client() as ca, b.client() as cb:

        def first(job: tuple[Any, str, str]) -> tuple[str, str, int]:
            client, partition, who = job
            text = f"{who} was first in {partition}"
            return partition, text, _remember(client, partition, text)["n"]

        jobs = [(c, p, who) for p in partitions for c, who in ((ca, "a"), (cb, "b"))]
        with ThreadPoolExecutor(max_workers=8) as pool:
            written = list(pool.map(first, jobs))
        for p in partitions:
            mine = sorted((n, text) for q, text, n in written if q == p)
            assert [n for n, _ in mine] == [1, 2]
            r = send(cb if p.endswith(("1", "3", "5", "7", "9")) else ca,
                     recall(None, partition=p, max_bytes=4096))
            assert r.status_code == 200, r.text
            assert sorted(r.json()["text"].split("\n")) == sorted(f"{n}. {t}" for n, t in mine)
