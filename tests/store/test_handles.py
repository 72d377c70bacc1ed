"""A table handle's URI is asked of the engine once per handle, and is the engine's own."""

from __future__ import annotations

import gc
from pathlib import Path

import lancedb
import pyarrow as pa

from semmem.store.handles import table_uri


class _Counted:
    """A handle that counts how often its URI is asked (LanceDB's ``AsyncTable.uri``)."""

    def __init__(self, uri: str) -> None:
        self.asked = 0
        self._uri = uri

    async def uri(self) -> str:
        self.asked += 1
        return self._uri


async def test_table_uri_is_the_engines_uri(tmp_path: Path) -> None:
    db = await lancedb.connect_async(str(tmp_path))
    tbl = await db.create_table("t", pa.table({"a": [1]}))
    assert await table_uri(tbl) == str(await tbl.uri()) == str(tmp_path / "t.lance")


async def test_table_uri_asks_a_handle_once_and_each_handle_on_its_own() -> None:
    first, second = _Counted("/a/t.lance"), _Counted("/b/t.lance")
    assert [await table_uri(first) for _ in range(3)] == ["/a/t.lance"] * 3
    assert await table_uri(second) == "/b/t.lance"
    assert (first.asked, second.asked) == (1, 1)


async def test_table_uri_is_dropped_with_its_handle() -> None:
    from semmem.store import handles

    gone = _Counted("/c/t.lance")
    await table_uri(gone)
    assert "/c/t.lance" in handles._URIS.values()  # held while its handle lives
    del gone
    gc.collect()
    # its entry alone (other tests' handles may be collected meanwhile: no count of them)
    assert "/c/t.lance" not in handles._URIS.values()
