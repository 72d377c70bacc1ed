"""``AsyncClient``: ``Client``'s twin for asyncio, and ``AsyncTurn``."""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Iterable, Mapping
from types import TracebackType
from typing import Any, cast

import httpx

from semmem_client._base import DEFAULT_MAX_BYTES, DEFAULT_PAGE, Base, Call, TurnBase, edit_args
from semmem_client._base import remember_args as _remember_args
from semmem_client._base import search_args as _search_args
from semmem_client._errors import SemmemError
from semmem_client._ingest import IngestResult, SessionSummary
from semmem_client._retry import Attempts, Retry
from semmem_client._tools import ToolDefinition, tool_definitions
from semmem_client._wire import (
    Access,
    Forgotten,
    Item,
    ItemsPage,
    PartitionsPage,
    Recall,
    SearchResult,
    WriteResult,
    transport_error,
)


class AsyncClient(Base):
    """An asyncio semmem client that behaves like the contract's host (as ``Client``: the same
    arguments, ``SEMMEM_*`` defaults, deadlines, retries and errors; every verb awaited)."""

    def __init__(self, url: str | None = None, token: str | None = None, *,
                 admin_token: str | None = None, memory_path: str = "/memory",
                 access: Access = "read-write", deadline_s: float = 10.0,
                 retry: Retry | None = None, http: httpx.AsyncClient | None = None) -> None:
        super().__init__(url, token, admin_token=admin_token, memory_path=memory_path,
                         access=access, deadline_s=deadline_s, retry=retry)
        self._own_http = http is None
        self._http = http or httpx.AsyncClient()

    async def recall(self, partition: str, text: str | None,
                     max_bytes: int = DEFAULT_MAX_BYTES, *, operation_id: str | None = None,
                     timeout: float | None = None) -> Recall:
        """The facts relevant to ``text`` within ``max_bytes`` (newest first for ``None``)."""
        return cast(Recall, await self._send(self._recall_call(partition, text, max_bytes,
                                                               operation_id, timeout)))

    async def search(self, partition: str, query: str, limit: int = 10, *,
                     filter: dict[str, Any] | None = None, cursor: str | None = None,
                     operation_id: str | None = None, timeout: float | None = None
                     ) -> SearchResult:
        """The facts closest to ``query`` with numbers and scores (``items``, ``count``), among
        those ``filter`` covers (see ``Client.search``)."""
        return cast(SearchResult, await self.tool(partition, "search",
                                                  _search_args(query, limit, filter), cursor,
                                                  operation_id=operation_id, timeout=timeout))

    async def remember(self, partition: str, text: str, *,
                       metadata: dict[str, Any] | None = None, cursor: str | None = None,
                       operation_id: str | None = None, timeout: float | None = None
                       ) -> WriteResult:
        """Store a fact (with ``metadata``); the result has its number ``n`` and maybe
        ``similar`` facts."""
        return cast(WriteResult, await self.tool(partition, "remember",
                                                 _remember_args(text, metadata), cursor,
                                                 operation_id=operation_id, timeout=timeout))

    async def update(self, partition: str, n: int, text: str, cursor: str | None = None, *,
                     metadata: dict[str, Any] | None = None, operation_id: str | None = None,
                     timeout: float | None = None) -> WriteResult:
        """Replace fact ``n``'s text (and ``metadata`` whole, when given); ``Conflict`` if it
        changed after ``cursor``'s recall."""
        return cast(WriteResult, await self.tool(partition, "update",
                                                 edit_args(n, text, metadata), cursor,
                                                 operation_id=operation_id, timeout=timeout))

    async def forget(self, partition: str, n: int, cursor: str | None = None, *,
                     operation_id: str | None = None, timeout: float | None = None
                     ) -> WriteResult:
        """Forget fact ``n`` (durably); ``Conflict`` if it changed after ``cursor``'s recall."""
        return cast(WriteResult, await self.tool(partition, "forget", edit_args(n), cursor,
                                                 operation_id=operation_id, timeout=timeout))

    async def tool(self, partition: str, name: str, arguments: dict[str, Any],
                   cursor: str | None = None, *, operation_id: str | None = None,
                   timeout: float | None = None) -> Any:
        """Call any declared tool by name; its ``result`` as the server answered it."""
        return await self._send(self._tool_call(partition, name, arguments, cursor,
                                                operation_id, timeout))

    async def tools(self, *, timeout: float | None = None) -> builtins.list[ToolDefinition]:
        """The server's tools (from ``GET /openapi.json``, which needs no token)."""
        return tool_definitions(await self._send(self._tools_call(timeout)), self.memory_path)

    async def turn(self, partition: str, text: str | None,
                   max_bytes: int = DEFAULT_MAX_BYTES, *, timeout: float | None = None
                   ) -> AsyncTurn:
        """Recall for one model request; the returned turn's tool calls carry its cursor."""
        return AsyncTurn(self, partition, await self.recall(partition, text, max_bytes,
                                                            timeout=timeout))

    # ----- the owner's calls (admin API, admin token) ---------------------------------------
    async def get(self, partition: str, n: int, *, timeout: float | None = None
                  ) -> Item | None:
        """Live fact ``n`` with its record fields, ``None`` if forgotten, expired or never
        assigned."""
        return cast("Item | None", await self._send(self._get_call(partition, n, timeout)))

    async def list(self, partition: str, offset: int = 0, limit: int = DEFAULT_PAGE, *,
                   filter: dict[str, Any] | None = None, timeout: float | None = None
                   ) -> ItemsPage:
        """One page of the live facts (those ``filter`` covers) in number order; ``next`` is
        the next page's offset."""
        return cast(ItemsPage, await self._send(self._list_call(partition, offset, limit,
                                                                timeout, filter)))

    async def items(self, partition: str, page: int = DEFAULT_PAGE, *,
                    filter: dict[str, Any] | None = None) -> AsyncIterator[Item]:
        """Every live fact (that ``filter`` covers) in number order, ``page`` at a time."""
        offset: int | None = 0
        while offset is not None:
            got = await self.list(partition, offset, page, filter=filter)
            for item in got["items"]:
                yield item
            offset = got["next"]

    async def forget_matching(self, partition: str, filter: dict[str, Any], *,
                              timeout: float | None = None) -> Forgotten:
        """Forget every live fact ``filter`` (not empty) covers (see
        ``Client.forget_matching``)."""
        return cast(Forgotten, await self._send(self._forget_matching_call(partition, filter,
                                                                           timeout)))

    async def export(self, partition: str, *, timeout: float | None = None
                     ) -> builtins.list[Item]:
        """Every live fact with its record fields, as ``semmem export`` writes them."""
        return cast("list[Item]", await self._send(self._export_call(partition, timeout)))

    async def partitions(self, offset: int = 0, limit: int = DEFAULT_PAGE, *,
                         timeout: float | None = None) -> PartitionsPage:
        """One page of the partition names, sorted."""
        return cast(PartitionsPage, await self._send(self._partitions_call(offset, limit,
                                                                           timeout)))

    async def edit(self, partition: str, n: int, changes: dict[str, Any], *,
                   timeout: float | None = None) -> dict[str, Any]:
        """Change fact ``n``'s text and record fields, as an owner (see ``Client.edit``)."""
        return cast("dict[str, Any]", await self._send(self._edit_call(partition, n, changes,
                                                                       timeout)))

    async def store(self, ops: builtins.list[dict[str, Any]], *, timeout: float | None = None
              ) -> builtins.list[Any]:
        """Run a batch of store operations (``POST /store``: ``put``/``get``/``search``/``list``
        on the application's store items, which the model's tools never reach), in order; one
        result each. ``timeout`` defaults to 120 s (a put embeds its index texts first)."""
        return cast(builtins.list[Any], await self._send(self._store_call(ops, timeout)))

    async def ingest(self, partition: str, session_id: str,
               messages: Iterable[Mapping[str, Any]], *, operation_id: str | None = None,
               timeout: float | None = None) -> IngestResult:
        """Store a session's messages (``{"role", "content", "at"?}``, ``at`` ISO 8601 or a
        datetime) as pieces through ``POST /ingest``: appended to the session, a message it
        already holds never stored twice; retried with the same operation id, so a lost reply
        replays. ``timeout`` defaults to 120 s (every new piece is embedded first)."""
        return cast(IngestResult, await self._send(self._ingest_call(
            partition, session_id, messages, operation_id, timeout)))

    async def sessions(self, partition: str, *, timeout: float | None = None
                 ) -> builtins.list[SessionSummary]:
        """A partition's sessions, the latest said first (admin API)."""
        return cast(builtins.list[SessionSummary],
                    await self._send(self._sessions_call(partition, timeout)))

    async def session(self, partition: str, session_id: str, *, timeout: float | None = None
                ) -> dict[str, Any]:
        """One session's messages in order, each with its pieces (admin API)."""
        return cast(dict[str, Any], await self._send(self._session_call(
            "GET", partition, session_id, timeout)))

    async def forget_session(self, partition: str, session_id: str, *,
                       timeout: float | None = None) -> Forgotten:
        """Forget a session whole, durably (admin API); ``NotFound`` if it has no pieces."""
        return cast(Forgotten, await self._send(self._session_call(
            "DELETE", partition, session_id, timeout)))

    async def delete_partition(self, partition: str, *, timeout: float | None = None) -> bool:
        """Delete a partition and every file of it; ``False`` if it did not exist."""
        return cast(bool, await self._send(self._delete_partition_call(partition, timeout)))

    async def _send(self, call: Call) -> Any:
        self._open()
        attempts = Attempts(call.deadline_s, self.retry)
        last: SemmemError | None = None
        while True:
            try:
                reply = await self._http.request(call.method, self.url + call.path,
                                                 params=call.params, content=call.content,
                                                 headers=call.headers,
                                                 timeout=attempts.timeout(last))
            except httpx.TransportError as exc:
                last = transport_error(exc)
                last.__cause__ = exc
                delay = attempts.after(last)
            else:
                try:
                    return call.read(reply.status_code, reply.content)
                except SemmemError as exc:
                    last = exc
                    delay = attempts.after(exc, reply.headers.get("Retry-After"))
            await asyncio.sleep(delay)

    async def aclose(self) -> None:
        """Close the connection pool (unless it was passed in); later calls raise
        ``ClientClosed``."""
        self.closed = True
        if self._own_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        self._open()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()


class AsyncTurn(TurnBase):
    """One model request: its recall (``text``, ``sources``, ``cursor``) and the tool calls
    that follow it, each carrying that cursor."""

    def __init__(self, client: AsyncClient, partition: str, recall: Recall) -> None:
        super().__init__(partition, recall)
        self.client = client

    async def search(self, query: str, limit: int = 10, *,
                     filter: dict[str, Any] | None = None) -> SearchResult:
        """``AsyncClient.search`` in this turn."""
        return await self.client.search(self.partition, query, limit, filter=filter,
                                        cursor=self.cursor)

    async def remember(self, text: str, *,
                       metadata: dict[str, Any] | None = None) -> WriteResult:
        """``AsyncClient.remember`` in this turn."""
        return await self.client.remember(self.partition, text, metadata=metadata,
                                          cursor=self.cursor)

    async def update(self, n: int, text: str, *,
                     metadata: dict[str, Any] | None = None) -> WriteResult:
        """``AsyncClient.update`` under this turn's cursor."""
        return await self.client.update(self.partition, n, text, self.cursor,
                                        metadata=metadata)

    async def forget(self, n: int) -> WriteResult:
        """``AsyncClient.forget`` under this turn's cursor."""
        return await self.client.forget(self.partition, n, self.cursor)
