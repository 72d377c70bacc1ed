"""Durably gone means every byte: after each way a text leaves (forget, update, merge then
forget, import then forget, reindex then forget, delete-partition), below and above the index
threshold, neither the text nor its vector is in any file of the store once the purge ran —
decoded by Lance's own file reader, index segments included — and the scan first shows it can
see both (a positive control)."""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from semmem.store import Store
from semmem.store.commit.fence import Fence
from semmem.store.rows import dkey_of
from tests.support.files import decoded_with

SECRET = "the secret is MARKER quartz nebula nine"
THRESHOLD = 200


async def _memory(root: Path, emb: HashingEmbedder) -> Memory:
    store = Store(str(root), dim=emb.dim, model_id=emb.model_id, index_threshold=THRESHOLD,
                  fence=Fence(skew=0.05, budget=0.3), version_retention=timedelta(0))
    store.upkeep.fold_rows = 0  # every pass folds the tail in: the vector reaches the index
    await store.open()
    return Memory(store, emb)


async def _forget(m: Memory, n: int) -> None:
    await m.forget("p", n)


async def _update(m: Memory, n: int) -> None:
    await m.update("p", n, "an ordinary replacement text")


async def _merge_forget(m: Memory, n: int) -> None:
    await m.merge("p", n, into=1)
    await m.forget("p", n)


async def _reindex_forget(m: Memory, n: int) -> None:
    await m.reindex("p")
    await m.forget("p", n)


async def _delete(m: Memory, n: int) -> None:
    await m.delete_partition("p")


DROPS: dict[str, Callable[[Memory, int], Awaitable[None]]] = {
    "forget": _forget, "update": _update, "merge-forget": _merge_forget,
    "import-forget": _forget, "reindex-forget": _reindex_forget, "delete-partition": _delete,
}


@pytest.mark.parametrize("indexed", [False, True], ids=["small", "indexed"])
@pytest.mark.parametrize("drop", list(DROPS))
async def test_a_dropped_text_and_its_vector_leave_every_decoded_file(
        tmp_path: Path, drop: str, indexed: bool) -> None:
    emb = HashingEmbedder()
    vector = emb.embed_batch([SECRET])[0]
    root = tmp_path / "db"
    m = await _memory(root, emb)
    if indexed:
        await m.import_("p", [{"text": f"fact {i} about thing{i}"} for i in range(THRESHOLD + 10)])
        assert (await m.store.maintain("p")) is not None  # the index is built
    else:
        for i in range(5):
            await m.remember("p", f"fact {i} about thing{i}")
    if drop == "import-forget":
        await m.import_("p", [{"text": SECRET}])
    else:
        await m.remember("p", SECRET)
    n = (await m.search("p", "MARKER quartz nebula", 1))["items"][0]["n"]
    # A pass while the secret is in the tail: past the threshold it is folded into the index.
    report = await m.store.maintain("p", purge=False)
    assert report is not None
    assert decoded_with(root, text=SECRET)  # the positive controls: the text, the vector,
    found = decoded_with(root, vector=vector)
    assert found
    if indexed:  # and, past the threshold, the vector in an index segment
        assert any("_indices" in str(p) for p in found), found
    await DROPS[drop](m, n)
    for i in range(3):
        if drop != "delete-partition":
            await m.remember("p", f"a later fact {i}")
    for _ in range(2):  # the purge and its follow-up, as the server's purger runs them
        await m.store.maintain("p", retention=timedelta(0))
    assert decoded_with(root, text=SECRET) == []
    assert decoded_with(root, vector=vector) == []
    assert decoded_with(root, text=dkey_of(SECRET)) == []  # nor the hash of its text
    await m.close()


async def test_a_purge_finishes_in_an_indexed_partition_whose_loose_rows_have_no_vector(
        tmp_path: Path) -> None:
    """After an index build, a tail holding only the head and a tombstone (every write sealed
    here): folding it into the index fails in the engine, and the pass used to raise before
    its cleanup, every time, keeping the forgotten text. Now it has nothing to fold."""
    emb = HashingEmbedder()
    store = Store(str(tmp_path / "db"), dim=emb.dim, model_id=emb.model_id,
                  index_threshold=THRESHOLD, tail_rows=1, fence=Fence(skew=0.05, budget=0.3),
                  version_retention=timedelta(0))
    await store.open()
    m = Memory(store, emb)
    await m.import_("p", [{"text": f"fact {i}"} for i in range(THRESHOLD + 5)])
    n = (await m.remember("p", SECRET))["n"]
    assert (await store.maintain("p")) is not None
    assert decoded_with(tmp_path / "db", text=SECRET)
    await m.forget("p", n)
    for _ in range(2):
        report = await store.maintain("p", retention=timedelta(0))  # never raises now
        assert report is not None
    assert decoded_with(tmp_path / "db", text=SECRET) == []
    assert decoded_with(tmp_path / "db", vector=emb.embed_batch([SECRET])[0]) == []
    await m.close()


@pytest.mark.parametrize("indexed", [False, True], ids=["small", "indexed"])
async def test_a_purge_removes_what_removed_versions_held_whatever_the_files_times(
        tmp_path: Path, indexed: bool) -> None:
    """Files written by a replica whose clock runs ahead of the cleaner's look young to it:
    Lance's cleanup removed the versions that held a forgotten text but kept their files for
    their (future) times, and no later pass looked at them again (the orphan sweep waits
    ``orphan_age``). The pass deletes what the versions it saw go held, once no version
    left references it."""
    emb = HashingEmbedder()
    vector = emb.embed_batch([SECRET])[0]
    root = tmp_path / "db"
    m = await _memory(root, emb)
    count = THRESHOLD + 10 if indexed else 5
    await m.import_("p", [{"text": f"fact {i} about thing{i}"} for i in range(count)])
    if indexed:
        assert (await m.store.maintain("p")) is not None
    n = (await m.remember("p", SECRET))["n"]
    await m.store.maintain("p", purge=False)
    assert decoded_with(root, text=SECRET) and decoded_with(root, vector=vector)
    await m.forget("p", n)
    await m.remember("p", "a later fact")
    ahead = time.time() + 120  # the writer's clock, two minutes ahead of this one
    for f in root.rglob("*"):
        if f.is_file():
            os.utime(f, (ahead, ahead))
    for _ in range(2):
        await m.store.maintain("p", retention=timedelta(0))
    assert decoded_with(root, text=SECRET) == []
    assert decoded_with(root, vector=vector) == []
    assert [it.n for it in (await m.store.snapshot("p")).items][-1] == n + 1
    await m.close()


async def test_idempotency_records_keep_a_keyed_fingerprint(tmp_path: Path) -> None:
    """A record's fingerprint is an HMAC under the store's secret (kept in the registry, out
    of the partition tables): the plain hash of a guessed call is not in any file; a replay
    still matches, and a record written before keying still replays."""
    import hashlib
    import json

    import lance

    from semmem.rules import Operation
    from semmem.store import table_name

    emb = HashingEmbedder()
    m = await _memory(tmp_path / "db", emb)
    op = Operation.of("op-pin", "remember", {"text": "my PIN is 4711"}, None)
    first = await m.remember("p", "my PIN is 4711", op=op)
    assert await m.remember("p", "my PIN is 4711", op=op) == first
    plain = hashlib.sha256(json.dumps(["remember", {"text": "my PIN is 4711"}, None],
                                      sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    assert plain == op.fingerprint
    rows = lance.dataset(str(tmp_path / "db" / f"{table_name('p')}.lance")).to_table()
    stored = [r["op_fp"] for r in rows.to_pylist() if r["op_fp"]]
    assert stored and plain not in stored and all(fp.startswith("k") for fp in stored)
    again = await _memory(tmp_path / "db", emb)  # another process: the same secret
    assert again.store.secret == m.store.secret and len(m.store.secret) == 32
    assert await again.remember("p", "my PIN is 4711", op=op) == first
    legacy = op.keyed(m.store.secret)
    assert legacy.unkeyed == plain
    await again.close()
    await m.close()


def test_the_vector_scan_finds_a_normalised_copy(tmp_path: Path) -> None:
    """The scanner's own control: a vector stored with rounding differences (as an index
    keeps it) is found by cosine, and a different vector is not."""
    import lance
    import pyarrow as pa

    emb = HashingEmbedder()
    v = emb.embed_batch([SECRET])[0].astype(np.float32)
    w = emb.embed_batch(["something else entirely"])[0].astype(np.float32)
    noisy = (v * 1.0000001).astype(np.float32)
    lance.write_dataset(pa.table({"flat": pa.FixedSizeListArray.from_arrays(
        pa.array(np.concatenate([noisy, w])), emb.dim)}), str(tmp_path / "t.lance"))
    assert decoded_with(tmp_path, vector=v)
    assert decoded_with(tmp_path, vector=emb.embed_batch(["nothing like it at all"])[0]) == []
