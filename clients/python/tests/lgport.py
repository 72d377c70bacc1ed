"""What the ported LangGraph store cases run on: the same case on LangGraph's ``InMemoryStore``
(the port is faithful when it passes there) and on ``SemmemStore`` over a real ``semmem serve``
whose embedder is LangGraph's test embedder (``charvec``), so rankings and scores are the ones
LangGraph's cases were written for.

``Stores(kind, server)``: ``make()`` a store the way langgraph's fixtures make theirs (``fields``
→ ``index={"fields": …}``; ``memory`` without fields is a plain ``InMemoryStore()``, as in
langgraph's non-vector cases), ``amake()`` the same inside a running loop (``SemmemStore`` over
an ``AsyncClient``). Every semmem case starts on an empty server.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, TTLConfig
from langgraph.store.memory import InMemoryStore

from semmem_client import AsyncClient, Client
from semmem_client.langgraph import SemmemStore

from charvec import DIMS, char_vector
from conftest import PATH, SERVER_PYTHON
from tests.support.server import ADMIN_TOKEN, TOKEN, ServerProcess, iso_in

TESTS = Path(__file__).resolve().parent

# `semmem serve`'s own code path (as the harness's fake launch) with LangGraph's test embedder.
CHAR_LAUNCH = f"""
import sys
import numpy as np
sys.path.insert(0, {str(TESTS)!r})
from charvec import DIMS, char_vector
from semmem.embedding.embedder import normalise
from semmem.settings import Settings
from semmem.web.server import serve

class CharacterEmbedder:
    model_id = "langgraph-character-embeddings-500"
    dim = DIMS

    def embed_batch(self, texts):
        rows = np.array([char_vector(t) for t in texts], dtype=np.float32)
        return normalise(rows.reshape(len(texts), DIMS))

serve(Settings(), embedder=CharacterEmbedder())
"""


class CharServer(ServerProcess):
    """``semmem serve`` with LangGraph's test embedder instead of the hashing one."""

    def start(self) -> ServerProcess:
        """Start as the harness does, with ``CHAR_LAUNCH`` as the program."""
        import tests.support.server as harness

        saved = harness.FAKE_LAUNCH
        harness.FAKE_LAUNCH = CHAR_LAUNCH  # start() reads it when it builds argv
        try:
            return super().start()
        finally:
            harness.FAKE_LAUNCH = saved


@contextlib.contextmanager
def char_server(data: Path) -> Iterator[ServerProcess]:
    """A ready ``CharServer`` on ``data``."""
    proc = CharServer(data, python=SERVER_PYTHON, env={"SEMMEM_PATH": PATH})
    proc.start()
    try:
        yield proc.wait_ready()
    finally:
        proc.stop()


class CharacterEmbeddings(Embeddings):
    """LangGraph's ``CharacterEmbeddings`` (see ``charvec``) for ``InMemoryStore``."""

    def __init__(self, dims: int = DIMS) -> None:
        self.dims = dims

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed a list of documents."""
        return [char_vector(t, self.dims) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query string."""
        return char_vector(text, self.dims)


def cosine(x: list[float], y: list[float]) -> float:
    """langgraph's ``_cosine_similarity`` for one pair."""
    dot = sum(a * b for a, b in zip(x, y, strict=False))
    nx, ny = sum(a * a for a in x) ** 0.5, sum(b * b for b in y) ** 0.5
    return dot / (nx * ny) if nx > 0 and ny > 0 else 0.0


def wipe(server: ServerProcess) -> None:
    """Delete every partition of ``server`` (a ported case starts on an empty store)."""
    with Client(server.url, TOKEN, admin_token=ADMIN_TOKEN, memory_path=PATH) as client:
        while names := client.partitions(limit=1000)["partitions"]:
            for name in names:
                client.delete_partition(name)


class Stores:
    """The stores one ported case makes, of one kind (``memory`` or ``semmem``)."""

    def __init__(self, kind: str, server: ServerProcess | None) -> None:
        self.kind = kind
        self.server = server
        self.embeddings = CharacterEmbeddings()
        self._clients: list[Client] = []
        self._aclients: list[AsyncClient] = []

    def _index(self, fields: list[str] | None, vector: bool) -> dict[str, Any] | None:
        if self.kind == "memory":
            if not vector:
                return None
            return {"dims": DIMS, "embed": self.embeddings, "fields": fields}
        return {"fields": fields} if fields is not None else None

    def make(self, *, fields: list[str] | None = None, vector: bool = True,
             ttl: TTLConfig | None = None) -> BaseStore:
        """A store of this kind (``vector``: with LangGraph's index config, for memory)."""
        index = self._index(fields, vector)
        if self.kind == "memory":
            return InMemoryStore(index=index)  # type: ignore[arg-type]
        assert self.server is not None
        client = Client(self.server.url, TOKEN, admin_token=ADMIN_TOKEN, memory_path=PATH)
        self._clients.append(client)
        options: dict[str, Any] = {"ttl": ttl}
        if index is not None:
            options["index"] = index
        return SemmemStore(client, **options)

    def amake(self, *, fields: list[str] | None = None, vector: bool = True,
              ttl: TTLConfig | None = None) -> BaseStore:
        """As ``make``, over an ``AsyncClient`` (call inside the loop that will use it)."""
        if self.kind == "memory":
            return self.make(fields=fields, vector=vector, ttl=ttl)
        assert self.server is not None
        client = AsyncClient(self.server.url, TOKEN, admin_token=ADMIN_TOKEN, memory_path=PATH)
        self._aclients.append(client)
        options: dict[str, Any] = {"ttl": ttl}
        index = self._index(fields, vector)
        if index is not None:
            options["index"] = index
        return SemmemStore(client, **options)

    async def aclose(self) -> None:
        """Close the async clients made in this loop."""
        for client in self._aclients:
            await client.aclose()
        self._aclients.clear()

    def close(self) -> None:
        """Close the clients."""
        for client in self._clients:
            client.close()


def _pieces(store: BaseStore, namespace: tuple[str, ...], key: str
            ) -> tuple[str, list[dict[str, Any]]]:
    """An item's pieces as its owner exports them (the admin API; the store never needs it)."""
    from semmem_client.langgraph import partition_of

    assert isinstance(store, SemmemStore)
    partition = partition_of(namespace)
    with Client(store.client.url, TOKEN, admin_token=ADMIN_TOKEN, memory_path=PATH) as owner:
        pieces = [dict(f) for f in owner.export(partition)
                  if f.get("keyed") == {"space": "store", "key": key}]
    if not pieces:
        raise KeyError(key)
    return partition, pieces


def expire_now(store: BaseStore, namespace: tuple[str, ...], key: str) -> None:
    """Set an item's expiry a minute in the past without deleting it (postgres's
    ``_expire_now``, which backdates the row with SQL), through the owner's API."""
    partition, pieces = _pieces(store, namespace, key)
    assert isinstance(store, SemmemStore)
    past = iso_in(-60)
    with httpx.Client(base_url=store.client.url, timeout=30,
                      headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as owner:
        for piece in pieces:  # a piece of the application's store (its own numbers)
            owner.patch("/admin/items", params={"partition": partition, "n": piece["n"],
                                                "store": "application"},
                        json={"expiresAt": past}).raise_for_status()
    _EXPIRED[(store.client.url, namespace, key)] = past


# What ``expire_now`` set: the export omits an expired item, so its expiry reads as this
# while it stays expired (a refresh that moved it would bring the item back into the export).
_EXPIRED: dict[tuple[str, tuple[str, ...], str], str] = {}


def expires_at(store: BaseStore, namespace: tuple[str, ...], key: str) -> str:
    """An item's stored expiry (postgres's ``_stored_expires_at``), ISO 8601."""
    assert isinstance(store, SemmemStore)
    try:
        pieces = _pieces(store, namespace, key)[1]
    except KeyError:
        return _EXPIRED[(store.client.url, namespace, key)]
    expiry = pieces[0].get("expiresAt")
    assert isinstance(expiry, str)
    return expiry


# The cases SemmemStore cannot pass (listed in the client README with the same reasons).
# Strict: a case that starts passing fails here until its entry goes.
PENDING: dict[str, str] = {}


def pending(request: pytest.FixtureRequest, kind: str) -> None:
    """Mark this case an expected, strict failure on SemmemStore when ``PENDING`` lists it."""
    reason = PENDING.get(request.node.originalname)
    if kind == "semmem" and reason is not None:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
