"""An earlier release refuses a store this release upgraded (issue 60, item 6): the release
before format 4 (902e632) checks only the model id in the store's metadata, so this release
records its model where that release does not look (``store/identity.py``: ``fenced``) and
that release, run from its own code, refuses the upgraded store with its mismatch line."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import lancedb
import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from semmem.store.formats import FORMAT, format_of
from semmem.store.identity import model_of
from semmem.store.registry import META, REGISTRY_TABLE
from tests.support.server import REPO, ServerProcess

PREVIOUS = "902e632"  # the last release with store format 3
FIXTURE = REPO / "tests" / "data" / "stores" / PREVIOUS / "store"


@pytest.fixture
def previous(tmp_path: Path) -> Iterator[Path]:
    """The previous release's code (its ``semmem`` package, from git), skipped without git or
    the commit."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the previous release's code comes from git")
    found = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{PREVIOUS}^{{commit}}"],
                           capture_output=True, check=False)
    if found.returncode != 0:
        pytest.skip(f"commit {PREVIOUS} is not in this clone (a shallow one?)")
    code = tmp_path / f"old-{PREVIOUS}"
    code.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", PREVIOUS, "semmem"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(code)], input=archive, check=True)
    yield code


def old_server(code: Path, data: Path) -> ServerProcess:
    """The previous release's ``semmem serve`` (fake embedder) on ``data``."""
    return ServerProcess(data, env={"PYTHONPATH": str(code)}, log=data.parent / "old.log",
                         cwd=code)


def recorded(data: Path) -> dict[str, object]:
    """The store's metadata, read from its registry's files (no release's code)."""
    rows = lancedb.connect(str(data)).open_table(REGISTRY_TABLE).to_arrow().to_pylist()
    found: dict[str, object] = json.loads(next(r["value"] for r in rows if r["key"] == META))
    return found


async def upgraded(data: Path) -> dict[str, object]:
    memory = await Memory.open(str(data), HashingEmbedder())
    try:
        return await memory.store.meta() or {}
    finally:
        await memory.close()


def test_the_previous_release_refuses_a_store_this_one_upgraded(previous: Path,
                                                                  tmp_path: Path) -> None:
    data = tmp_path / "db"
    shutil.copytree(FIXTURE, data)
    # the positive control: that release serves its own store
    server = old_server(previous, data).start()
    try:
        server.wait_ready()
    finally:
        server.stop()
    assert format_of(recorded(data)) == 3  # its own code ran: this release's would upgrade
    meta = asyncio.run(upgraded(data))
    assert format_of(meta) == FORMAT and model_of(meta) == HashingEmbedder().model_id
    server = old_server(previous, data).start()
    try:
        with pytest.raises(RuntimeError, match="server exited"):
            server.wait_ready()
    finally:
        server.stop()
    said = server.output()
    # its one line (the traceback after it is the test's ``-c`` launch, not its CLI's)
    assert "cannot start: store " in said and "upgraded by a later semmem release: serve it " \
        "with that release, never reindex it with this one" in said, said
    # and this release still serves it
    again = ServerProcess(data).start()
    try:
        again.wait_ready()
    finally:
        again.stop()
