"""A blank-input recall of an indexed partition reads through the B-tree on ``updated`` and
answers exactly what a scan of every live row would: the newest first, ties to the lower
number, rows written since the index was built, changed and forgotten ones included."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from semmem.store import Store
from semmem.store.files import open_dataset
from semmem.store.rows import ItemRow, Lookup, Mutation
from semmem.store.schema import LIVE_ITEMS
from semmem.store.views import IndexedView

DIM = 8
T0 = 1_700_000_000_000


def _vector(n: int) -> np.ndarray:
    v = np.random.default_rng(n).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def _row(n: int, updated: int, revision: int = 1) -> ItemRow:
    return ItemRow(n, f"fact {n}", _vector(n), T0, updated, revision)


async def _write(store: Store, rows: list[ItemRow], hwm: int | None = None) -> None:
    await store.write("p", lambda _v: Mutation(items=rows, hwm=hwm),
                      lookup=Lookup(numbers=[r.n for r in rows]))


def _scanned(store: Store, uri: str, k: int) -> list[int]:
    """The answer of a scan of every live row."""
    rows = open_dataset(uri, {}).to_table(columns=["n", "updated"], filter=LIVE_ITEMS)
    pairs = sorted(zip(rows.column("updated").to_pylist(), rows.column("n").to_pylist(),
                       strict=True), key=lambda p: (-p[0], p[1]))
    return sorted(n for _, n in pairs[:k])


@pytest.mark.parametrize("spacing", [1, 1_000, 3_600_000])
async def test_recent_is_the_scan_of_every_live_row(tmp_path: Path, spacing: int) -> None:
    store = Store(str(tmp_path / "db"), dim=DIM, model_id="m", index_threshold=60)
    await store.open()
    try:
        # 200 rows, a few sharing a time (ties go to the lower number), then the index.
        await _write(store, [_row(n, T0 + (n // 3) * spacing) for n in range(1, 201)], 200)
        assert await store.build_index("p")
        uri = await store.conn.uri_of("p")
        assert uri is not None
        names = {i.name for i in open_dataset(uri, {}).describe_indices()}
        assert "updated_idx" in names
        last = T0 + 67 * spacing
        # Written after the index: new rows, changed old rows (newer now), forgotten rows
        # (one of the newest among them), and an old row changed to an old time.
        await _write(store, [_row(n, last + (n - 200) * spacing) for n in range(201, 211)], 210)
        await _write(store, [_row(5, last + 30 * spacing, 2), _row(17, last + 30 * spacing, 2)])
        await _write(store, [ItemRow(209, None, None, T0, last + 20 * spacing, 2,
                                     forgotten=True),
                             ItemRow(199, None, None, T0, last + 20 * spacing, 2,
                                     forgotten=True)])
        await _write(store, [_row(150, T0 - 10 * spacing, 2)])
        view = await store.read_view("p")
        assert isinstance(view, IndexedView)
        for k in (1, 3, 7, 12, 30, 100, 197, 208, 500):
            got = await store.recent(view, k)
            assert [it.n for it in got.items] == _scanned(store, uri, k), k
        got = await store.recent(view, 4)
        assert {5, 17} <= {it.n for it in got.items} and 209 not in {it.n for it in got.items}
    finally:
        await store.close()


async def test_a_table_indexed_before_the_updated_btree_gets_it_at_its_next_pass(
        tmp_path: Path) -> None:
    store = Store(str(tmp_path / "db"), dim=DIM, model_id="m", index_threshold=60)
    await store.open()
    try:
        await _write(store, [_row(n, T0 + n) for n in range(1, 201)], 200)
        assert await store.build_index("p")
        uri = await store.conn.uri_of("p")
        assert uri is not None
        open_dataset(uri, {}).drop_index("updated_idx")  # as older code built it
        assert "updated_idx" not in {i.name for i in open_dataset(uri, {}).describe_indices()}
        await store.maintain("p", purge=False)
        assert "updated_idx" in {i.name for i in open_dataset(uri, {}).describe_indices()}
        view = await store.read_view("p")
        assert isinstance(view, IndexedView)
        assert [it.n for it in (await store.recent(view, 5)).items] == _scanned(store, uri, 5)
    finally:
        await store.close()
