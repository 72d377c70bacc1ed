"""Fences on object storage, with a proxy in front of moto that holds or drops one replica's
requests: a writer paused after uploading its files while the other replica writes, forgets,
cleans up and sweeps; a commit that landed but whose reply was lost past the deadline."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.errors import Unavailable
from semmem.items import now_ms
from semmem.memory import Memory
from semmem.rules import Operation
from semmem.store import Store
from semmem.store.commit.fence import Fence
from semmem.store.upkeep.check import check_partition
from tests.store.test_requests import BUCKET, proxy  # noqa: F401 - the fixture
from tests.support.moto import client as s3_client
from tests.support.moto import objects, options
from tests.support.s3proxy import Fault, S3Proxy

FENCE = Fence(skew=0.05, budget=0.3)
SECRET = "s3-fence-secret-91ce"


async def _memory(endpoint: str, prefix: str, **kw: object) -> Memory:
    emb = HashingEmbedder()
    store = Store(f"s3://{BUCKET}/{prefix}", dim=emb.dim, model_id=emb.model_id,
                  storage_options=options(endpoint), fence=FENCE,
                  version_retention=timedelta(0), **kw)  # type: ignore[arg-type]
    await store.open()
    return Memory(store, emb)


def _objects_holding(endpoint: str, prefix: str, needle: str) -> list[str]:
    return [k for k, body in objects(endpoint, BUCKET, prefix).items()
            if needle.encode() in body]


@pytest.mark.timeout(180)
async def test_a_writer_paused_after_its_upload_decides_again_after_the_others_cleanup(
        proxy: S3Proxy) -> None:  # noqa: F811
    proxy.faults()
    proxy.state.release.clear()
    proxy.state.held.clear()
    paused = await _memory(proxy.endpoint, "paused")
    other = await _memory(proxy.upstream_endpoint, "paused", orphan_age=timedelta(0))
    try:
        await paused.remember("p", "fact one")
        proxy.faults(Fault("hold", method="PUT", path=r"/data/.*\.lance"))
        write = asyncio.create_task(paused.remember("p", "fact from the paused writer"))
        assert await asyncio.to_thread(proxy.state.held.wait, 60)  # its tail is uploaded
        assert (await other.remember("p", SECRET))["n"] == 2
        assert (await other.remember("p", "fact three"))["n"] == 3
        await other.forget("p", 2)
        for _ in range(20):  # cleanup and the sweep (orphan age 0: the paused upload too)
            report = await other.store.maintain("p", retention=timedelta(0))
            assert report is not None
            if report.orphans_removed:
                break
        else:
            pytest.fail("the sweep never took the paused writer's upload")
        proxy.release()
        assert (await write)["n"] == 4
    finally:
        proxy.release()
        proxy.faults()
    fresh = await _memory(proxy.upstream_endpoint, "paused")
    assert [(it.n, it.text) for it in await fresh.list("p")] == [
        (1, "fact one"), (3, "fact three"), (4, "fact from the paused writer")]
    assert not (await check_partition(fresh.store, "p")).problems
    await other.store.maintain("p", retention=timedelta(0))
    assert _objects_holding(proxy.upstream_endpoint, "paused/", SECRET) == []
    for m in (paused, other, fresh):
        await m.close()


@pytest.mark.timeout(180)
async def test_a_commit_whose_reply_is_lost_past_the_deadline_answers_503_and_replays(
        proxy: S3Proxy) -> None:  # noqa: F811
    """The manifest lands, its reply never comes, the deadline passes meanwhile: the write is
    refused as uncertain (503: the host retries), not as 400, and the retry replays it."""
    proxy.faults()
    proxy.state.release.clear()
    proxy.state.held.clear()
    memory = await _memory(proxy.endpoint, "ambiguous")
    try:
        await memory.remember("p", "fact one")
        deadline = now_ms() + 1500
        op = Operation.of("op-1", "remember", {"text": "fact two"}, None, deadline)
        # The manifest PUT lands and loses its reply (until past the deadline); the engine's
        # read-back of it then fails: the outcome is unknown to the writer.
        manifest = r"/_versions/.*\.manifest"
        proxy.faults(Fault("hold_drop", method="PUT", path=manifest),
                     Fault("status", method="HEAD", path=manifest, times=100, status=500),
                     Fault("status", method="GET", path=manifest, times=100, status=500))
        write = asyncio.create_task(memory.remember("p", "fact two", op=op))
        assert await asyncio.to_thread(proxy.state.held.wait, 60)
        while now_ms() <= deadline:  # the condition: the deadline has passed
            await asyncio.sleep(0.05)
        proxy.release()
        with pytest.raises(Unavailable):
            await write
    finally:
        proxy.release()
        proxy.faults()
    retry = Operation.of("op-1", "remember", {"text": "fact two"}, None, now_ms() + 10_000)
    assert (await memory.remember("p", "fact two", op=retry))["n"] == 2
    assert [it.text for it in await memory.list("p")] == ["fact one", "fact two"]
    assert not (await check_partition(memory.store, "p")).problems
    await memory.close()


@pytest.mark.timeout(180)
async def test_a_failed_commits_files_leave_with_a_later_forget(
        proxy: S3Proxy) -> None:  # noqa: F811
    """A commit that fails otherwise than by a conflict (the store answers 5xx on the
    transaction) leaves its uploaded tail, a copy of the live rows: it is removed once no
    version references it, so a text forgotten later is in no object after the purge (the
    orphan sweep alone would keep it for the orphan age)."""
    proxy.faults()
    memory = await _memory(proxy.endpoint, "failed")
    try:
        await memory.remember("p", SECRET)
        proxy.faults(Fault("status", method="PUT", path=r"/_transactions/", times=100,
                           status=500, code="InternalError"))
        with pytest.raises(Unavailable):
            await memory.remember("p", "a write whose commit fails")
    finally:
        proxy.faults()
    holding = _objects_holding(proxy.upstream_endpoint, "failed/", SECRET)
    assert holding  # the committed tail holds it (and the failed one, unless removed at once)
    await memory.forget("p", 1)
    await memory.store.maintain("p", retention=timedelta(0))
    assert _objects_holding(proxy.upstream_endpoint, "failed/", SECRET) == []
    assert [it.text for it in await memory.list("p")] == []
    await memory.close()


@pytest.mark.timeout(180)
async def test_unfinished_uploads_holding_rows_are_aborted_by_the_sweep_and_on_drop(
        proxy: S3Proxy) -> None:  # noqa: F811
    """What a process killed in a compaction's multipart upload leaves: an unfinished upload
    under the table holding rows (completing it would bring them back). The sweep aborts it
    once the orphan age old, and deleting the partition aborts every one begun before it."""
    from semmem.store import table_name
    from semmem.store.upkeep.uploads import unfinished

    endpoint = proxy.upstream_endpoint
    client = s3_client(endpoint)
    memory = await _memory(endpoint, "uploads", orphan_age=timedelta(hours=1))
    await memory.remember("p", "an ordinary fact")
    await memory.remember("q", "another partition's fact")
    table = f"uploads/{table_name('p')}.lance"
    started = client.create_multipart_upload(Bucket=BUCKET, Key=f"{table}/data/killed.lance")
    client.upload_part(Bucket=BUCKET, Key=f"{table}/data/killed.lance", PartNumber=1,
                       UploadId=started["UploadId"], Body=(SECRET + " ").encode() * 1000)
    uri = f"s3://{BUCKET}/{table}"
    opts = options(endpoint)
    assert [k for k, _, _ in unfinished(uri, opts) or []] == [f"{table}/data/killed.lance"]
    # moto dates every upload in 2010, so the orphan age (which keeps an upload in progress)
    # cannot be shown here: the sweep takes it as old.
    await memory.store.maintain("p")
    assert unfinished(uri, opts) == []
    again = client.create_multipart_upload(Bucket=BUCKET, Key=f"{table}/data/killed2.lance")
    client.upload_part(Bucket=BUCKET, Key=f"{table}/data/killed2.lance", PartNumber=1,
                       UploadId=again["UploadId"], Body=SECRET.encode())
    assert await memory.delete_partition("p")
    assert unfinished(uri, opts) == []
    assert [it.text for it in await memory.list("q")] == ["another partition's fact"]
    await memory.close()


def _download(endpoint: str, prefix: str, into: Path) -> Path:
    """Every object under ``prefix``, as files (for the decoding scan)."""
    client = s3_client(endpoint)
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        for o in page.get("Contents", []):
            path = into / o["Key"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(client.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read())
    return into


@pytest.mark.timeout(180)
async def test_on_s3_a_forgotten_text_and_vector_leave_every_object_past_the_threshold(
        proxy: S3Proxy, tmp_path: Path) -> None:  # noqa: F811
    from tests.support.files import decoded_with

    endpoint = proxy.upstream_endpoint
    emb = HashingEmbedder()
    vector = emb.embed_batch([SECRET])[0]
    memory = await _memory(endpoint, "gone", index_threshold=200)
    memory.store.upkeep.fold_rows = 0  # every pass folds the tail in: the vector reaches the index
    await memory.import_("p", [{"text": f"fact {i} about thing{i}"} for i in range(210)])
    await memory.store.maintain("p")
    n = (await memory.remember("p", SECRET))["n"]
    await memory.store.maintain("p", purge=False)  # folds the tail into the index
    seen = _download(endpoint, "gone/", tmp_path / "before")
    assert decoded_with(seen, text=SECRET)
    assert any("_indices" in str(p) for p in decoded_with(seen, vector=vector))
    await memory.forget("p", n)
    await memory.remember("p", "a later fact")
    for _ in range(2):
        await memory.store.maintain("p", retention=timedelta(0))
    after = _download(endpoint, "gone/", tmp_path / "after")
    assert decoded_with(after, text=SECRET) == []
    assert decoded_with(after, vector=vector) == []
    await memory.close()
