"""LangGraph's ``BaseStore`` over semmem: ``SemmemStore(Client(url, token, admin_token=…))``
is the ``store=`` of a graph or of ``create_react_agent``/``create_agent``.

    store = SemmemStore(Client("http://127.0.0.1:8080", token, admin_token=admin))
    store.put(("users", "alice"), "units", {"text": "Prefers metric units"})
    store.search(("users", "alice"), query="which units?")   # semmem's own ranking

**Namespaces are partitions**: the labels, each with ``%`` written ``%25`` and ``/`` written
``%2F``, joined by ``/`` — ``("users", "alice")`` is partition ``users/alice`` and
``("alice",)`` is ``alice``, the partition the other adapters use for that user. The mapping
is reversible (``partition_of`` / ``namespace_of``, the one mapping every adapter uses:
``semmem_client._partitions``) and a namespace whose partition would pass
1,024 UTF-8 bytes is refused (``ValueError``).

**Items are facts** whose text is the canonical JSON ``{"key": …, "value": …}`` (sorted keys,
no spaces; ``"ttl"`` and ``"index": false`` when given), so ``search(query=…)`` ranks them with
semmem's model and lexical evidence, and ``recall`` shows them to models like any fact. A text
holds at most 2,000 characters; a larger item is refused by the server (``InvalidArguments``).
semmem stores a text once per partition (compared case-insensitively, whitespace collapsed):
two keys whose JSON differs only that way cannot both be stored (``ValueError``). Facts that
are not store items (remembered by a model, say) are left out of ``get`` and ``search``.

Reads go through the admin API (``export``; the client needs ``admin_token``), writes through
the provider (``remember``) and the admin API (an edit: new text, expiry), deletes through
``forget`` (durably gone, as every forget). ``ttl`` (minutes) becomes the fact's
``expiresAt``; a read with ``refresh_ttl`` moves it forward (an owner's edit: it also moves
``updated_at``). ``index=False`` leaves an item out of query searches (semmem embeds it
anyway); a field list for ``index`` (per put, or ``index={"fields": […]}`` for the store) is
read as ``True``: semmem embeds the whole text.

**Async**: ``SemmemStore(AsyncClient(...))``, made inside the event loop that uses it, is
natively async (an ``AsyncSemmemStore``, LangGraph's ``AsyncBatchedBaseStore``): ``aget``,
``aput``… awaited on the loop, concurrent calls gathered into one ``abatch`` (a key put twice
at once is written once, the last value), the blocking methods refused on the loop itself
(``asyncio.InvalidStateError``, as LangGraph's async stores) and run on it from other threads.
With a ``Client`` the async methods run the blocking batch in a worker thread.
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
from semmem_client._store_plan import (
    SEARCH_LIMIT,
    Batch,
    Entry,
    adrive,
    drive,
    entry_of,
    fact_text,
    matches,
)

__all__ = ["MAX_PARTITION_BYTES", "SEARCH_LIMIT", "AsyncSemmemStore", "Entry", "SemmemStore",
           "entry_of", "fact_text", "matches", "namespace_of", "partition_of"]


def _check_admin(client: Client | AsyncClient) -> None:
    if not client._admin:
        raise ValueError("SemmemStore reads items by key through the admin API: give the "
                         "client an admin_token (or set SEMMEM_ADMIN_TOKEN)")


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
        _check_admin(client)
        unknown = set(index or {}) - {"fields"}
        if unknown:
            raise ValueError(f"SemmemStore's index takes 'fields' only (semmem embeds with the "
                             f"server's model): not {sorted(unknown)}")
        self.client: Any = client
        self.ttl_config = ttl
        self.index_config = dict(index) if index is not None else None

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; a batch reads each partition it touches once."""
        results: list[Result] = drive(Batch().run(list(ops)), self.client)
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
        results: list[Result] = await adrive(Batch().run(list(ops)), self.client)
        return results

    @_check_loop
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """``abatch`` run on the store's loop from another thread (refused on the loop)."""
        return asyncio.run_coroutine_threadsafe(self.abatch(ops), self._loop).result()
