"""The write path purges what a write drops (``semmem/writes.py``): a record field an edit
replaced or cleared leaves every file — data files and, past the index threshold, the
``LABEL_LIST`` index over the metadata tags — through the server's own schedule."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from pathlib import Path

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.items import Item
from semmem.items.metadata import tag
from semmem.memory import Memory
from semmem.scheduling.schedule import Maintenance
from semmem.store import Store
from semmem.store.commit.fence import Fence
from semmem.store.rows import ItemRow
from semmem.writes import drops
from tests.support.files import decoded_hits, decoded_texts, read_if_there

THRESHOLD = 60
DEADLINE_S = 60.0  # the window here is about 2 s: the deadline only bounds a stuck test


def _item(text: str, **attrs: object) -> Item:
    return Item(1, text, 0, 0, 1, 1, "m", dict(attrs))


def _row(text: str | None, **attrs: object) -> ItemRow:
    return ItemRow(1, text, None, 0, 1, 2, attrs=dict(attrs))


@pytest.mark.parametrize(("old", "row", "dropped"), [
    (None, _row("new"), False),  # a new fact
    (_item("a"), _row("a", note="n"), False),  # a field added
    (_item("a", note="n"), _row("a", note="n", status="active"), False),
    (_item("a"), _row("b"), True),  # the text replaced
    (_item("a"), _row(None), True),  # forgotten
    (_item("a", note="n"), _row("a"), True),  # the note cleared
    (_item("a", note="n"), _row("a", note="m"), True),  # the note replaced
    (_item("a", metadata={"ssn": "1"}), _row("a", metadata={"ssn": "x"}), True),
    (_item("a", metadata={"ssn": "1", "k": 2}), _row("a", metadata={"k": 2, "ssn": "1"}),
     False),  # the same object
])
def test_drops_is_any_value_of_the_old_row_the_new_one_does_not_keep(
        old: Item | None, row: ItemRow, dropped: bool) -> None:
    assert drops(old, row) is dropped


async def _wait(condition: object, what: str) -> None:
    started = time.monotonic()
    while not await asyncio.to_thread(condition):  # type: ignore[operator]
        assert time.monotonic() - started < DEADLINE_S, what
        await asyncio.sleep(0.1)  # the scan's pace; the deadline decides


@pytest.mark.parametrize("indexed", [False, True], ids=["small", "indexed"])
async def test_a_replaced_metadata_value_and_its_tag_leave_every_file_on_schedule(
        tmp_path: Path, indexed: bool) -> None:
    """A server's maintenance, a metadata-only edit: the old value and its tag go from the
    data files and the tags' index (before: no purge was scheduled, they stayed)."""
    emb = HashingEmbedder()
    root = tmp_path / "db"
    store = Store(str(root), dim=emb.dim, model_id=emb.model_id, index_threshold=THRESHOLD,
                  fence=Fence(skew=0.05, budget=0.3), version_retention=timedelta(0))
    store.upkeep.fold_rows = 0
    await store.open()
    maintenance = Maintenance(store, 0.05, 32, follow_s=0)
    memory = Memory(store, emb, observer=maintenance)
    pin = "5521-replaced-pin"
    needles = [pin, tag("pin", pin)]
    try:
        count = THRESHOLD + 10 if indexed else 5
        await memory.import_("p", [{"text": f"fact {i} about thing{i}"} for i in range(count)])
        await memory.update("p", 1, metadata={"pin": pin})
        await memory.start()
        # the start's purges (a pass at once and its follow-up) done first: none of them
        # may be what removes the value below
        await _wait(lambda: not maintenance.purger.pending(), "the start's purges")
        assert decoded_hits(root, needles) == {0, 1}  # the positive control
        if indexed:  # and the tag in an index file (the LABEL_LIST over the tags)
            indexes = [p for p in root.rglob("*") if p.is_file() and "_indices" in p.parts]
            assert any(needles[1].encode() in read_if_there(p) or any(
                needles[1].encode() in blob for blob in decoded_texts(p)) for p in indexes)
        await memory.update("p", 1, metadata={"pin": "redacted"})
        await _wait(lambda: not decoded_hits(root, needles), "the value and its tag gone")
        assert (await memory.get("p", 1)).metadata == {"pin": "redacted"}  # type: ignore[union-attr]
    finally:
        await memory.close()
