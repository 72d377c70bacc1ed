"""The retention sweep forgets what expired through the forget path, so the purge that follows
takes its text and vector off every file (decoded by Lance's own reader, index segments
included), below and past the index threshold; the scan first shows it can see both."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.items import iso, now_ms
from semmem.lifecycle.retention import Retention
from semmem.lifecycle.sweep import sweep
from semmem.memory import Memory
from semmem.scheduling.observing import QuietObserver
from semmem.store import Store
from semmem.store.commit.fence import Fence
from semmem.store.rows import dkey_of
from tests.support.files import decoded_with
from tests.support.memory import remember_expired

SECRET = "the expiring secret is MARKER quartz nebula nine"
THRESHOLD = 200
MAX_AGE_MS = 3000


class Heard(QuietObserver):
    """Remembers which writes said they dropped a text (what schedules a purge)."""

    def __init__(self) -> None:
        self.dropped: list[str] = []

    def written(self, partition: str, dropped: bool) -> None:
        if dropped:
            self.dropped.append(partition)


async def _memory(root: Path, emb: HashingEmbedder, default_ms: int | None,
                  observer: Heard | None = None) -> Memory:
    store = Store(str(root), dim=emb.dim, model_id=emb.model_id, index_threshold=THRESHOLD,
                  fence=Fence(skew=0.05, budget=0.3), version_retention=timedelta(0))
    store.upkeep.fold_rows = 0  # every pass folds the tail in: the vector reaches the index
    await store.open()
    return Memory(store, emb, observer=observer, retention=Retention(store, default_ms))


@pytest.mark.parametrize("indexed", [False, True], ids=["small", "indexed"])
@pytest.mark.parametrize("how", ["own-expiry", "max-age"])
async def test_an_expired_text_and_its_vector_leave_every_decoded_file(
        tmp_path: Path, how: str, indexed: bool) -> None:
    emb = HashingEmbedder()
    vector = emb.embed_batch([SECRET])[0]
    root = tmp_path / "db"
    heard = Heard()
    m = await _memory(root, emb, MAX_AGE_MS if how == "max-age" else None, heard)
    await m.import_("p", [{"text": f"fact {i} about thing{i}"}
                          for i in range(THRESHOLD + 10 if indexed else 5)])
    if indexed:
        assert (await m.store.maintain("p")) is not None  # the index is built
    fillers = [it.n for it in await m.list("p")]
    ends = now_ms() + 1500
    n = (await m.remember("p", SECRET, expires_at=iso(ends) if how == "own-expiry" else None)
         )["n"]
    expected = [n]
    if how == "max-age":  # the fillers are older: they go too, but for the one written again
        ends = (await m.get("p", n)).updated + MAX_AGE_MS  # type: ignore[union-attr]
        while now_ms() <= ends - MAX_AGE_MS + 1500:  # it outlives the secret by 1.5 s
            time.sleep(0.02)
        await m.update("p", 1, "the first fact, written again")
        expected = sorted([*fillers[1:], n])
    assert (await m.store.maintain("p", purge=False)) is not None  # folded in, past threshold
    assert decoded_with(root, text=SECRET)  # the positive controls
    found = decoded_with(root, vector=vector)
    assert found
    if indexed:
        assert any("_indices" in str(p) for p in found), found
    while now_ms() <= ends:
        time.sleep(0.02)
    assert SECRET not in (await m.recall("p", "MARKER quartz nebula", 4096)).text
    heard.dropped.clear()
    assert await sweep(m) == {"p": expected}
    assert set(heard.dropped) == {"p"}  # the forget path: a purge is scheduled
    stats = await m.stats("p")
    assert stats["forgotten"] == len(expected) and stats["highest"] == n
    for _ in range(2):  # the purge and its follow-up, as the server's purger runs them
        await m.store.maintain("p", retention=timedelta(0))
    assert decoded_with(root, text=SECRET) == []
    assert decoded_with(root, vector=vector) == []
    assert decoded_with(root, text=dkey_of(SECRET)) == []
    later = await m.remember("p", "a fact after the sweep")
    assert later["n"] > n  # its number is never reused
    await m.close()


async def test_a_cli_sweep_asks_the_servers_to_purge(tmp_path: Path) -> None:
    """Without maintenance of its own (the CLI), a sweep that forgot something leaves a purge
    request in the registry, as ``semmem forget`` does."""
    emb = HashingEmbedder()
    m = await _memory(tmp_path / "db", emb, None)
    n = await remember_expired(m, "p", SECRET)
    assert await m.store.purge_requests() == {}
    assert await sweep(m) == {"p": [n]}
    assert set(await m.store.purge_requests()) == {"p"}
    rows = await m.store.conn.registry.rows()
    assert not any(SECRET in json.dumps(v) for v in rows.values())
    await m.close()

