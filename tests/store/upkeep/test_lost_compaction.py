"""A compaction that loses its commit to another replica's write leaves no file behind: the
race put there on purpose, not waited for (``Compactor.compact`` deletes the files of a
compaction that did not commit; Lance would keep them for 7 days, copies of live rows, so a
text forgotten afterwards stayed on disk).

The compacting replica reaches the object store through the proxy, which holds its first
upload of a rewritten data file; meanwhile the other replica edits a fact in a fragment the
compaction is rewriting, and the held compaction, let go, cannot commit over that edit.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import timedelta

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from semmem.store import Store, table_name
from tests.store.test_requests import BUCKET, paused, proxy  # noqa: F401 - fixtures
from tests.support.moto import objects, options
from tests.support.s3proxy import Fault, S3Proxy


async def _memory(endpoint: str, prefix: str) -> Memory:
    emb = HashingEmbedder(dim=384, model_id="hashing-384")  # a tail seals every 32 rows
    store = Store(f"s3://{BUCKET}/{prefix}", dim=emb.dim, model_id=emb.model_id,
                  storage_options=options(endpoint))
    await store.open()
    return Memory(store, emb)


def _holding(proxy: S3Proxy, needles: list[str], prefix: str) -> list[str]:  # noqa: F811
    """The needles some object under ``prefix`` holds (its bytes, as stored)."""
    bodies = objects(proxy.upstream_endpoint, BUCKET, prefix).values()
    return [n for n in needles if any(n.encode() in b for b in bodies)]


@pytest.mark.timeout(240)
async def test_a_compaction_that_loses_to_another_replicas_edit_leaves_no_file(
        paused: S3Proxy, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    prefix = f"lost-{uuid.uuid4().hex[:8]}"
    compacting = await _memory(paused.endpoint, prefix)
    other = await _memory(paused.upstream_endpoint, prefix)
    markers = [uuid.uuid4().hex for _ in range(8)]
    for m in markers:
        await other.remember("p", f"Secret {m}")
    for i in range(90):  # sealed fragments behind the tail: small ones, for a compaction
        await other.remember("p", f"Filler fact number {i}")
    await compacting.store.snapshot("p")  # the compacting replica knows the table

    paused.faults(Fault("hold", method="PUT", path=rf"/{table_name('p')}\.lance/data/"))
    caplog.set_level(logging.INFO, logger="semmem.store")
    maintained = asyncio.create_task(compacting.store.maintain("p"))
    assert await asyncio.to_thread(paused.state.held.wait, 120)  # rewriting, not committed
    edited = uuid.uuid4().hex
    await other.update("p", 1, f"Secret {edited}")  # a row of a fragment being rewritten
    paused.release()
    await maintained
    lost = [r.getMessage() for r in caplog.records
            if "compaction did not commit" in r.getMessage()]
    assert lost, "the held compaction committed over the other replica's edit"

    # Positive control: the store holds the texts before they are forgotten.
    assert _holding(paused, [markers[1], edited], prefix) == [markers[1], edited]
    for item in await other.list("p"):
        await other.forget("p", item.n)
    await other.store.maintain("p")  # compact: the forgotten rows leave the live data file
    await other.store.maintain("p", retention=timedelta(0))  # drop the old versions
    assert _holding(paused, [*markers, edited], prefix) == []
    for m in (compacting, other):
        await m.close()
