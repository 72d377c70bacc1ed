"""LangGraph's ``BaseStore`` over semmem: ``SemmemStore(Client(url, token))`` is the ``store=``
of a graph or of ``create_react_agent``/``create_agent``.

    store = SemmemStore(Client("http://127.0.0.1:8080", token))
    store.put(("users", "alice"), "units", {"text": "Prefers metric units"})
    store.search(("users", "alice"), query="which units?")   # LangGraph's cosine scores

**Items are the application's store items** (``POST /store``, ``semmem.stored`` on the
server): a JSON value (up to 256 KiB) under a namespace and a key (compared exactly: "Theme"
and "theme" are two items), written in one write with its index texts and expiry. The model's
tools (recall, search, remember, update, forget) never see, create or change them.

**Namespaces are partitions**: the labels, each with ``%`` written ``%25`` and ``/`` written
``%2F``, joined by ``/`` — ``("users", "alice")`` is partition ``users/alice`` and
``("alice",)`` is ``alice``, the partition the other adapters use for that user (so deleting a
user's partition deletes their store items too). The mapping is reversible (``partition_of`` /
``namespace_of``, the one every adapter uses) and a namespace whose partition would pass 1,024
UTF-8 bytes is refused.

**Index and search as LangGraph's stores**: the texts at the indexed paths (``index=[…]`` per
put, else the store's ``index={"fields": […]}``, by default ``["$"]``, the whole value as
JSON; ``index=False``: none) are embedded with the server's model, a long one in pieces;
``search(query=…)`` scores an item by the best cosine of the query with its pieces, after the
filter (containment, ``$eq $ne $gt $gte $lt $lte``; others refused) has chosen the candidates.
Unlike ``InMemoryStore()`` without an index config, a ``SemmemStore`` always embeds (``$`` by
default): semmem always has a model. ``ttl`` (minutes) is the items' ``expiresAt``; a read
with ``refresh_ttl`` moves it forward in one write per batch and leaves ``updated_at`` alone.

**Async**: ``SemmemStore(AsyncClient(...))``, made inside the event loop that uses it, is
natively async (an ``AsyncSemmemStore``, LangGraph's ``AsyncBatchedBaseStore``): ``aget``,
``aput``… awaited on the loop, concurrent calls gathered into one ``abatch``, the blocking
methods refused on the loop itself (``asyncio.InvalidStateError``, as LangGraph's async stores)
and run on it from other threads. With a ``Client`` the async methods run the blocking batch in
a worker thread. Each batch is one HTTP call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from langgraph.store.base import BaseStore, Op, Result, TTLConfig
from langgraph.store.base.batch import AsyncBatchedBaseStore, _check_loop

from semmem_client._async import AsyncClient
from semmem_client._client import Client
from semmem_client._partitions import MAX_PARTITION_BYTES, namespace_of, partition_of
from semmem_client._store_plan import Batch, adrive, drive, index_texts

__all__ = ["MAX_PARTITION_BYTES", "AsyncSemmemStore", "SemmemStore", "index_texts",
           "namespace_of", "partition_of"]


class SemmemStore(BaseStore):
    """LangGraph's store over a semmem server (see the module docstring for the mapping);
    given an ``AsyncClient`` it is an ``AsyncSemmemStore``."""

    supports_ttl = True

    def __new__(cls, client: Client | AsyncClient, *args: Any, **kwargs: Any) -> SemmemStore:
        if cls is SemmemStore and isinstance(client, AsyncClient):
            return super().__new__(AsyncSemmemStore)
        return super().__new__(cls)

    def __init__(self, client: Client | AsyncClient, *, ttl: TTLConfig | None = None,
                 index: dict[str, Any] | None = None) -> None:
        unknown = set(index or {}) - {"fields"}
        if unknown:
            raise ValueError(f"SemmemStore's index takes 'fields' (semmem embeds with the "
                             f"server's model): not {sorted(unknown)}")
        self.client: Any = client
        self.ttl_config = ttl
        self.index_config = dict(index) if index is not None else None

    def _fields(self) -> list[str] | None:
        fields = (self.index_config or {}).get("fields")
        return list(fields) if fields else None

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order, in one call to the server."""
        results: list[Result] = drive(Batch(self._fields()).run(list(ops)), self.client)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread (the client is blocking)."""
        return await asyncio.to_thread(self.batch, list(ops))


class AsyncSemmemStore(SemmemStore, AsyncBatchedBaseStore):
    """``SemmemStore`` over an ``AsyncClient``: every call awaited on the loop it was made in."""

    def __init__(self, client: Client | AsyncClient, *, ttl: TTLConfig | None = None,
                 index: dict[str, Any] | None = None) -> None:
        if not isinstance(client, AsyncClient):
            raise TypeError("AsyncSemmemStore needs an AsyncClient (SemmemStore takes a Client)")
        try:
            AsyncBatchedBaseStore.__init__(self)
        except RuntimeError as exc:  # no running loop
            raise RuntimeError("make SemmemStore(AsyncClient(...)) inside the event loop that "
                               "will use it") from exc
        SemmemStore.__init__(self, client, ttl=ttl, index=index)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order, each client call awaited on this loop."""
        results: list[Result] = await adrive(Batch(self._fields()).run(list(ops)), self.client)
        return results

    @_check_loop
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """``abatch`` run on the store's loop from another thread (refused on the loop)."""
        return asyncio.run_coroutine_threadsafe(self.abatch(ops), self._loop).result()
