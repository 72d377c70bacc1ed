"""Fixtures: one real ``semmem serve`` (fake embedder, on ``/oc-memory`` so every test goes
through ``memory_path``) started from the server's own venv, a recording proxy, clients."""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))  # the repo's real-server harness, tests/support/server.py

from semmem_client import AsyncClient, Client  # noqa: E402

from proxy import Proxy  # noqa: E402
from tests.support.server import ADMIN_TOKEN, TOKEN, ServerProcess  # noqa: E402

PATH = "/oc-memory"
# The server runs in the venv that has semmem (and its engines); this one has only the client.
SERVER_PYTHON = os.environ.get("SEMMEM_SERVER_PYTHON", str(REPO / ".venv" / "bin" / "python"))


@contextlib.contextmanager
def serving(data: Path, **env: str) -> Iterator[ServerProcess]:
    """A real server on ``data`` at ``PATH`` (``env``: more of its settings), ready."""
    proc = ServerProcess(data, python=SERVER_PYTHON, env={"SEMMEM_PATH": PATH, **env})
    proc.start()
    try:
        yield proc.wait_ready()
    finally:
        proc.stop()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A real server for the whole session; tests keep apart by partition."""
    with serving(tmp_path_factory.mktemp("server") / "db") as proc:
        yield proc


@pytest.fixture
def partition() -> str:
    """A partition of this test's own."""
    return f"user-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def client(server: ServerProcess) -> Iterator[Client]:
    """A client straight to the server."""
    with Client(server.url, TOKEN, memory_path=PATH) as c:
        yield c


@pytest.fixture
def proxy(server: ServerProcess) -> Iterator[Proxy]:
    """A recording proxy in front of the server."""
    p = Proxy(server.url).start()
    try:
        yield p
    finally:
        p.stop()


@pytest.fixture
def proxied(proxy: Proxy) -> Iterator[Client]:
    """A client that goes through the proxy."""
    with Client(proxy.url, TOKEN, memory_path=PATH) as c:
        yield c


def async_client(url: str, **options: object) -> AsyncClient:
    """An async client for ``url`` (tests run it inside ``asyncio.run``)."""
    return AsyncClient(url, TOKEN, memory_path=PATH, **options)  # type: ignore[arg-type]


@pytest.fixture
def owner(server: ServerProcess) -> Iterator[Client]:
    """A client holding an admin token too (the owner's calls)."""
    with Client(server.url, TOKEN, admin_token=ADMIN_TOKEN, memory_path=PATH) as c:
        yield c


# ----- LangGraph's store cases (test_lg_*.py): InMemoryStore and SemmemStore side by side ------
@pytest.fixture(scope="session")
def lg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A real server with LangGraph's test embedder, shared by the ported store cases."""
    from lgport import char_server

    with char_server(tmp_path_factory.mktemp("lgstore") / "db") as proc:
        yield proc


def _stores(kind: str, lg_server: ServerProcess, request: pytest.FixtureRequest
            ) -> Iterator[Any]:
    from lgport import Stores, pending, wipe

    pending(request, kind)
    if kind == "semmem":
        wipe(lg_server)
    stores = Stores(kind, lg_server if kind == "semmem" else None)
    try:
        yield stores
    finally:
        stores.close()


@pytest.fixture(params=["memory", "semmem"])
def stores(request: pytest.FixtureRequest, lg_server: ServerProcess) -> Iterator[Any]:
    """Makes a ported case's stores: LangGraph's InMemoryStore, then SemmemStore."""
    yield from _stores(request.param, lg_server, request)


@pytest.fixture
def semmem_stores(request: pytest.FixtureRequest, lg_server: ServerProcess) -> Iterator[Any]:
    """Makes SemmemStores only: the cases of LangGraph's TTL and async-store suites (which
    InMemoryStore has no TTL or event loop for)."""
    yield from _stores("semmem", lg_server, request)
