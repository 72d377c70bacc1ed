"""Requests per operation on object storage, counted at a proxy in front of moto's S3 server.

A count is deterministic where a time is not: these bounds fail the build when a change makes
a remember or a cold recall read the partition again (each request is tens of ms on S3).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from datetime import timedelta

import boto3
import pytest
from moto.server import ThreadedMotoServer

from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from semmem.store import Store
from tests.support.s3proxy import S3Proxy

BUCKET = "semmem-requests"
DIM = 384  # the real model's width: the tail's size decides how often it seals


@pytest.fixture(scope="module")
def proxy() -> Iterator[S3Proxy]:
    """moto on loopback with one bucket, and the counting proxy in front of it."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    boto3.client("s3", endpoint_url=f"http://{host}:{port}", aws_access_key_id="test",
                 aws_secret_access_key="test", region_name="us-east-1"
                 ).create_bucket(Bucket=BUCKET)
    counting = S3Proxy(f"http://{host}:{port}").start()
    try:
        yield counting
    finally:
        counting.stop()
        server.stop()


async def _memory(proxy: S3Proxy, prefix: str) -> Memory:
    emb = HashingEmbedder(dim=DIM, model_id=f"hashing-{DIM}")
    options = {"aws_access_key_id": "test", "aws_secret_access_key": "test",
               "aws_region": "us-east-1", "aws_endpoint": proxy.endpoint, "allow_http": "true"}
    store = Store(f"s3://{BUCKET}/{prefix}", dim=DIM, model_id=emb.model_id,
                  storage_options=options, version_retention=timedelta(seconds=1))
    await store.open()
    return Memory(store, emb)


def _requests(proxy: S3Proxy) -> tuple[int, str]:
    return len(proxy.entries()), proxy.line()


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
