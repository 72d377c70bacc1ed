"""A reindex beside a live server (issue 60, item 4): `semmem reindex` moves the store's
generation before it re-embeds anything, the server serving the store under the old model
refuses every write from then on with one line and stops, and no partition is left holding
vectors of two models."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from semmem.embedding.files import default_model_dir, load_spec
from semmem.store.identity import generation_of
from semmem.store.tables import Store
from tests.support.server import REPO, ServerProcess
from tests.support.web import remember, send, tool


def _reindex(data: Path, model: Path | None = None, *args: str
             ) -> subprocess.CompletedProcess[str]:
    """`semmem <args>` (default: `reindex`) under ``model`` (default: the bundled default
    model), to its end."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
    env.update({"PYTHONPATH": str(REPO), "SEMMEM_DATA": str(data),
                "SEMMEM_MODEL": str(model or default_model_dir())})
    return subprocess.run([sys.executable, "-m", "semmem.cli", *(args or ("reindex",))],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


async def _models_and_generation(data: Path) -> tuple[set[str | None], int, list[str]]:
    store = Store(str(data), dim=384, model_id="any")
    await store.open(check_model=False)
    try:
        snap = await store.snapshot("p")
        return ({it.model for it in snap.items}, generation_of(await store.meta()),
                [it.text for it in snap.items])
    finally:
        await store.close()


def test_a_reindex_beside_a_live_server_stops_it_and_leaves_one_model(tmp_path: Path) -> None:
    data = tmp_path / "db"
    server = ServerProcess(data).start()
    try:
        server.wait_ready()
        with server.client() as c:
            remember(c, "p", "Prefers metric units")
            models, generation, _ = asyncio.run(_models_and_generation(data))
            assert models == {"hashing-64"} and generation == 1  # before: the server's model

            done = _reindex(data)
            assert done.returncode == 0, done.stderr
            try:  # the next write through the old server: refused, never acknowledged
                r = send(c, tool("remember", {"text": "Lives in Lyon"}, partition="p"))
                assert r.status_code == 503, r.text
                assert r.json()["error"]["code"] == "unavailable", r.text
            except httpx.TransportError:
                pass  # it had already read the change and stopped
        assert server.proc is not None
        assert server.proc.wait(60) == 1, server.output()[-2000:]
        # serve()'s own code path raises it (`semmem serve` prints it as `error: …`)
        last = server.output().strip().splitlines()[-1]
        assert f"StoreChanged: store {data} was changed by another process" in last, last
        assert "its model is now" in last, last
    finally:
        server.stop()
    models, generation, texts = asyncio.run(_models_and_generation(data))
    assert models == {load_spec(default_model_dir()).model_id}, models  # one model, the new one
    assert texts == ["Prefers metric units"]  # the refused write stored nothing
    assert generation == 2  # moved once, with the model, before anything was re-embedded


FACTS = ["Prefers metric units", "Has a cat named Tom", "Lives in Lyon", "Works night shifts",
         "Is allergic to peanuts", "Plays the cello on Sundays", "Drives a blue Volvo",
         "Speaks Portuguese at home", "Collects vintage stamps"]


@pytest.mark.timeout(600)
def test_the_issues_reindex_to_e5_beside_a_default_model_server(tmp_path: Path) -> None:
    """The issue's run with both bundled models and `semmem serve` itself: the default-model
    server's next remember after `semmem reindex` to multilingual-e5-small is refused (it was
    acknowledged and embedded by the old model), the server ends with the one line, and under
    the new model every stored sentence is first in its own search."""
    data = tmp_path / "db"
    e5 = REPO / "models" / "multilingual-e5-small"
    server = ServerProcess(data, model=True).start()
    try:
        server.wait_ready(timeout=300)
        with server.client() as c:
            for fact in FACTS:
                remember(c, "p", fact)
            done = _reindex(data, e5)
            assert done.returncode == 0, done.stderr
            try:
                r = send(c, tool("remember", {"text": "Keeps bees in the garden"},
                                 partition="p"))
                assert r.status_code == 503, r.text
            except httpx.TransportError:
                pass
        assert server.proc is not None and server.proc.wait(60) == 1, server.output()[-2000:]
        last = server.output().strip().splitlines()[-1]
        assert last.startswith(f"error: store {data} was changed by another process"), last
    finally:
        server.stop()
    for fact in (*FACTS[:2], FACTS[6]):
        found = _reindex(data, e5, "search", fact, "-p", "p", "--limit", "9")
        assert found.returncode == 0, found.stderr
        texts = [it["text"] for it in json.loads(found.stdout)["items"]]
        assert texts[0] == fact and "Keeps bees in the garden" not in texts, texts
