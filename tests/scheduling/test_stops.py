"""A server that stops with work under way: its maintenance pass finishes before the process
exits, and what a stopped process may have left half written is swept by the server that
follows its purge request once the orphan sweep may take it."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import lance
import pyarrow as pa
import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from semmem.store import Store
from semmem.store.rows import table_name
from tests.scheduling.test_schedule import (
    DELAY,
    RETENTION,
    WINDOW,
    marker,
    referenced,
    remember,
    wait_decoded_gone,
)
from tests.support.files import decoded_with
from tests.support.server import ServerProcess

FAST_ENV = {"SEMMEM_VERSION_RETENTION_S": str(RETENTION),
            "SEMMEM_MAINTENANCE_DELAY_S": str(DELAY)}


@pytest.mark.timeout(180)
async def test_a_stop_during_a_pass_returns_once_the_pass_is_done(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A forget in a partition past the index threshold, and the stop while the purge pass it
    scheduled is under way (in its thread, building the index): the stop returns once the
    pass is done. Before, the stop returned at once and the thread went on; in a server,
    uvicorn's exit (it re-raises the signal) then cut it mid-write, leaving files that hold
    rows and that no version references."""
    from semmem.scheduling.schedule import Maintenance

    caplog.set_level(logging.DEBUG, logger="semmem.maintenance")
    embedder = HashingEmbedder()
    store = Store(str(tmp_path / "db"), dim=embedder.dim, model_id=embedder.model_id,
                  index_threshold=2_000)
    await store.open()
    maintenance = Maintenance(store, delay_s=DELAY, compact_every=10_000, follow_s=0)
    memory = Memory(store, embedder, observer=maintenance)
    await memory.start()
    try:
        await memory.import_("p", [{"text": f"fact {i} {marker()}"} for i in range(6_000)])
        await memory.forget("p", 1)
        table = table_name("p")
        deadline = time.monotonic() + 60
        while not any(r.getMessage() == f"maintaining partition table {table} (purge)"
                      for r in caplog.records):  # the forget's pass is under way
            assert time.monotonic() < deadline, "no purge pass started"
            await asyncio.sleep(0.005)
        assert not any(r.getMessage().startswith(f"maintained partition table {table}")
                       for r in caplog.records)  # not done yet
        await maintenance.stop()
        assert any(r.getMessage().startswith(f"maintained partition table {table}")
                   for r in caplog.records)
    finally:
        await memory.close()


@pytest.mark.timeout(150)
def test_files_a_stopped_process_left_are_swept_once_old_enough(tmp_path: Path) -> None:
    """A process that asks for a purge may have stopped with a file half written (a pass cut
    short, a commit that never came): an unreferenced data file holding a text it then
    forgot. The server that follows the request purges at once, when the file is too young for
    the orphan sweep, and again once it is old enough: the text leaves it. Before, nothing
    swept the file until some later write to the partition or a restart."""
    data, m = tmp_path / "db", marker()
    text = f"Secret {m} in a file a stopped process left"
    orphan_age = 15.0
    server = ServerProcess(data, env={**FAST_ENV, "SEMMEM_ORPHAN_AGE_S": str(orphan_age)},
                           log=tmp_path / "server.log").start()
    try:
        server.wait_ready()
        with server.client() as c:
            n = remember(c, "p", text)
            remember(c, "p", "an ordinary fact")
        table = data / f"{table_name('p')}.lance"
        rows = lance.dataset(str(table)).to_table(filter=f"n = {n}")
        assert rows.num_rows >= 1
        # The other process's half-done work: the row written again, never committed.
        lance.fragment.write_fragments(pa.Table.from_batches(rows.to_batches(), rows.schema),
                                       str(table), schema=rows.schema)
        orphans = [p for p in decoded_with(data, text) if not referenced(p)]
        assert orphans  # the scan sees the text in a file no version references

        async def forget_elsewhere() -> None:  # runs no maintenance: it leaves a request
            memory = await Memory.open(str(data), HashingEmbedder())
            try:
                await memory.forget("p", n)
            finally:
                await memory.close()

        asyncio.run(forget_elsewhere())
        took = wait_decoded_gone(data, text, HashingEmbedder().embed_batch([text])[0],
                                 orphan_age + 1 + WINDOW + 30)
        assert took <= orphan_age + 1 + WINDOW + 15
    finally:
        server.stop()
    assert "Traceback" not in server.output()


async def test_a_purge_asked_for_again_later_still_comes_when_first_due() -> None:
    """Purge requests every few minutes must not keep pushing back the purge an older one
    asked for (each used to cancel the waiting timer and start a new one): the first fires
    when due, and the later one is still to come."""
    from semmem.scheduling.purges import Later

    fired: list[str | None] = []
    later = Later(fired.append)
    later.ask("p", 0.05)
    later.ask("p", 3600.0)
    deadline = time.monotonic() + 30
    while not fired:
        assert time.monotonic() < deadline, "the first purge never came"
        await asyncio.sleep(0.01)
    assert fired == ["p"] and later.pending() == {"p"}
    when = later.when("p")
    assert when is not None and when > time.monotonic() + 3000
    later.cancel()
    assert later.pending() == set()
