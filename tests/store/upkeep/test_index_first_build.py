"""A partition past the index threshold whose facts were all forgotten before its first index
build: maintenance skips the build (nothing has a vector to train on), as a fold does."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.support.memory import small_indexed_memory


async def test_a_partition_forgotten_before_its_first_build_is_skipped_without_an_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    memory = await small_indexed_memory(tmp_path)
    await memory.import_("p", [{"text": f"fact {i} on subject{i % 7}"} for i in range(60)])
    for n in range(1, 61):
        await memory.forget("p", n)
    assert (await memory.stats("p"))["count"] == 0
    with caplog.at_level(logging.WARNING):
        report = await memory.store.maintain("p", purge=False)
        assert report is not None and report.indexed == ""
        assert await memory.store.build_index("p") == ""
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    # positive control: once it holds facts past the threshold again, the build runs
    await memory.import_("p", [{"text": f"new fact {i} on topic{i % 5}"} for i in range(60)])
    report = await memory.store.maintain("p", purge=False)
    assert report is not None and report.indexed == "built"
    assert (await memory.recall("p", "new fact 7 on topic2", 200)).text.startswith(
        "68. new fact 7 on topic2")
