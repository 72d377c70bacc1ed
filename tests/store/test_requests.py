"""Requests per operation on object storage, counted at a proxy in front of moto's S3 server.

A count is deterministic where a time is not: these bounds fail the build when a change makes
a remember or a cold recall read the partition again (each request is tens of ms on S3).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.items.filters import Filter
from semmem.memory import Memory
from semmem.store import Store
from semmem.store.commit.fence import Fence
from tests.support.moto import moto_s3
from tests.support.s3proxy import S3Proxy

BUCKET = "semmem-requests"
DIM = 384  # the real model's width: the tail's size decides how often it seals


@pytest.fixture(scope="module")
def proxy() -> Iterator[S3Proxy]:
    """moto on loopback with one bucket, and the counting proxy in front of it."""
    with moto_s3(BUCKET) as endpoint:
        counting = S3Proxy(endpoint).start()
        try:
            yield counting
        finally:
            counting.stop()


@pytest.fixture
def paused(proxy: S3Proxy) -> Iterator[S3Proxy]:
    """The proxy with no faults and nothing held, released whatever the test does."""
    proxy.faults()
    proxy.state.release.clear()
    proxy.state.held.clear()
    try:
        yield proxy
    finally:
        proxy.release()
        proxy.faults()


async def _memory(proxy: S3Proxy, prefix: str, **store_options: Any) -> Memory:
    emb = HashingEmbedder(dim=DIM, model_id=f"hashing-{DIM}")
    options = {"aws_access_key_id": "test", "aws_secret_access_key": "test",
               "aws_region": "us-east-1", "aws_endpoint": proxy.endpoint, "allow_http": "true"}
    store = Store(f"s3://{BUCKET}/{prefix}", dim=DIM, model_id=emb.model_id,
                  storage_options=options, version_retention=timedelta(seconds=1),
                  **store_options)
    await store.open()
    return Memory(store, emb, index_candidates=40)


def _requests(proxy: S3Proxy) -> tuple[int, str]:
    return len(proxy.entries()), proxy.line()


def _indices(line: str) -> int:
    """How many reads of index files a ``_requests`` line counts."""
    found = re.search(r"GET _indices (\d+)", line)
    return int(found.group(1)) if found else 0


@pytest.mark.timeout(180)
async def test_remember_and_cold_recall_of_a_small_partition_stay_within_ten_requests(
        proxy: S3Proxy) -> None:
    writer = await _memory(proxy, "bounds")
    for i in range(30):  # one at a time: the layout a conversation leaves
        await writer.remember("p", f"fact {i} about topic {i % 7}")
    await writer.recall("p", "topic 3", 2000)
    proxy.reset()
    assert (await writer.remember("p", "one more fact"))["n"] == 31
    count, seen = _requests(proxy)
    assert count <= 10, seen
    proxy.reset()
    await writer.recall("p", "topic 3", 2000)
    count, seen = _requests(proxy)
    assert count == 1, seen  # warm: only the version check
    reader = await _memory(proxy, "bounds")
    proxy.reset()
    got = await reader.recall("p", "one more fact", 2000)
    count, seen = _requests(proxy)
    assert count <= 10, seen
    assert "31. one more fact" in got.text
    await reader.close()
    await writer.close()


@pytest.mark.timeout(180)
async def test_a_write_reads_nothing_it_does_not_change_as_the_partition_grows(
        proxy: S3Proxy) -> None:
    """At 1,000 facts a remember costs what it costs at 30 (+ 2 at most)."""
    memory = await _memory(proxy, "grows")
    await memory.import_("p", [{"text": f"imported fact {i}"} for i in range(1000)],
                         batch_size=500)
    await memory.store.maintain("p", retention=timedelta(0))
    for i in range(30):
        await memory.remember("p", f"fact {i}")
    proxy.reset()
    await memory.remember("p", "one more fact")
    count, seen = _requests(proxy)
    assert count <= 12, seen
    await memory.close()


@pytest.mark.timeout(180)
async def test_a_writer_whose_own_commits_keep_it_current_lists_no_versions_before_commits(
        proxy: S3Proxy) -> None:
    """The fence lists the versions before a commit only for a confirmation older than
    ``Fence.fresh`` (1 s): a writer's own commit confirms the version it made, so writes back
    to back for over two seconds commit after the engine's own listing alone (before: a second
    listing once a second, between the data upload and the commit)."""
    writer = await _memory(proxy, "own-commits")
    await writer.remember("p", "a first fact")  # the partition, its snapshot, a confirmation
    writer.retention.refresh_s = float("inf")  # its registry listings are not the fence's
    started, i, listed = time.monotonic(), 0, []
    while time.monotonic() - started < 2.5:  # past two ``fresh`` intervals of writing
        i += 1
        proxy.reset()
        await writer.remember("p", f"fact {i} about topic {i % 7}")
        kinds = [e.kind for e in proxy.entries()]
        assert "PUT _transactions" in kinds, kinds  # committed, alone
        before = kinds[:kinds.index("PUT _transactions")]
        listed.append(before.count("LIST _versions"))
    assert i > 20
    assert listed == [1] * i, listed  # the engine's conflict check only
    await writer.close()


@pytest.mark.timeout(300)
async def test_unfiltered_calls_cost_what_they_cost_before_filters(proxy: S3Proxy) -> None:
    """An unfiltered call reads nothing more for the filter code (the tags column, the scalar
    indexes on tags, ts, kind and forgotten, the counts kept per view): each bound is what the
    same call cost on the code before metadata and filters (08df87f), on a partition read
    through its index and on a small one (an idle machine gives those figures exactly; the
    bounds allow what a starved one adds). A filtered search costs one request more than an
    unfiltered one at a version read before (the check that its count is still of this
    table), and its count is not read again after this process's own write."""
    # a fence that never renews a confirmation within the test: on a loaded machine a commit
    # past a third of the default budget lists the versions once more (timing, not reading)
    memory = await _memory(proxy, "unfiltered", index_threshold=200,
                           fence=Fence(budget=600))
    await memory.import_("big", [{"text": f"fact {i} about topic {i % 7}",
                                  "metadata": {"user": f"u{i % 3}"}} for i in range(300)])
    await memory.maintain("big")
    for i in range(30):
        await memory.remember("small", f"fact {i} about topic {i % 7}")
    for p in ("big", "small"):  # warm: the views, the index files
        await memory.search(p, "topic 3", 10)
        await memory.recall(p, "topic 3", 2000)
        await memory.recall(p, "", 2000)
    # the retention policies read in the warm-up stand: their refresh (the registry read again
    # every 2 s) falls in whichever call is running then (timing, not what that call reads)
    memory.retention.refresh_s = float("inf")
    costs = {}

    async def cost(name: str, call: Any) -> None:
        proxy.reset()
        await call
        costs[name] = _requests(proxy)

    for p in ("big", "small"):
        await cost(f"{p} search", memory.search(p, "topic 3", 10))
        await cost(f"{p} recall", memory.recall(p, "topic 3", 2000))
        await cost(f"{p} blank recall", memory.recall(p, "", 2000))
        await cost(f"{p} remember", memory.remember(p, f"one more fact in {p}"))
        await cost(f"{p} search after a write", memory.search(p, "topic 4", 10))
        await cost(f"{p} recall after a write", memory.recall(p, "topic 5", 2000))
    # (requests, of them index-file reads) each call made on the code before filters; on a
    # starved CPU a call here now and then makes one or two more listings or data reads than
    # on an idle one (timing, which that code shared), never another index file: a scalar
    # index an unfiltered call loaded would be one
    before = {"big search": (4, 0), "big recall": (4, 0), "big blank recall": (9, 0),
              "big remember": (13, 2), "big search after a write": (10, 0),
              "big recall after a write": (7, 0), "small search": (1, 0),
              "small recall": (1, 0), "small blank recall": (1, 0), "small remember": (4, 0),
              "small search after a write": (1, 0), "small recall after a write": (1, 0)}
    grown = {k: v for k, v in costs.items()
             if v[0] > before[k][0] + 2 or _indices(v[1]) > before[k][1]}
    assert not grown, grown
    user = Filter.parse({"metadata": {"user": "u1"}})
    await memory.search("big", "topic 3", 10, filter=user)  # its count, once per version
    least: dict[str, int] = {}
    for i in range(3):  # the fewest of three: what the calls read, not what timing adds
        for name, flt in (("filtered", user), ("unfiltered", None)):
            await cost(name, memory.search("big", f"topic {i}", 10, filter=flt))
            least[name] = min(least.get(name, 99), costs[name][0])
        await memory.remember("big", f"a fact of u1's, {i}", metadata={"user": "u1"})
        await memory.search("big", "topic 4", 10)  # the view of the new version
        for name, flt in (("filtered after a write", user), ("unfiltered after a write", None)):
            await cost(name, memory.search("big", f"topic {i + 4}", 10, filter=flt))
            least[name] = min(least.get(name, 99), costs[name][0])
    assert least["filtered"] <= least["unfiltered"] + 1, costs
    assert least["filtered after a write"] <= least["unfiltered after a write"] + 1, costs
    await memory.close()


@pytest.mark.timeout(180)
async def test_a_delete_costs_a_write_and_two_registry_commits_and_writes_pay_nothing_for_it(
        proxy: S3Proxy) -> None:
    """Deleting a partition is one commit on its table (the tombstone) besides the two
    registry commits it always made (27 requests measured, 13 of them listings). That commit
    alone closes the window in which another process served the deleted facts, with no
    registry read per call: after another process's delete a recall costs what a cold recall
    costs (5 measured), the first remember no more than a new partition's first (16 against
    26: the registry append recording its name again), the next one what any remember costs
    (4) and no registry request."""
    a = await _memory(proxy, "deleted", fence=Fence(budget=600))
    b = await _memory(proxy, "deleted", fence=Fence(budget=600))
    for i in range(30):
        await a.remember("p", f"fact {i} about topic {i % 7}")
    assert "fact 3" in (await b.recall("p", "fact 3 topic", 2000)).text  # B holds the view
    b.retention.refresh_s = float("inf")  # B never reads the registry again
    proxy.reset()
    assert await a.store.drop("p") is True  # the delete itself (its purge comes later)
    count, seen = _requests(proxy)
    assert count <= 40, seen
    proxy.reset()
    got = await b.recall("p", "fact 3 topic", 2000)
    count, seen = _requests(proxy)
    assert got.text == "" and count <= 10, seen
    proxy.reset()
    await b.remember("q", "the first fact of a new partition")
    created, created_seen = _requests(proxy)
    proxy.reset()
    assert (await b.remember("p", "a new first fact"))["n"] == 1
    count, seen = _requests(proxy)
    assert count <= created + 2, (seen, created_seen)
    assert await a.partitions() == ["p", "q"]
    proxy.reset()
    await b.remember("p", "a second fact")
    count, seen = _requests(proxy)
    assert count <= 10 and "_semmem" not in seen, seen
    await a.close()
    await b.close()
