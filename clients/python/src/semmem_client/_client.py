"""``Client``: the blocking client, and ``Turn``, one model request's recall and tool calls."""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterable, Iterator, Mapping
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


class Client(Base):
    """A blocking semmem client that behaves like the contract's host.

    ``url`` and ``token`` default to ``SEMMEM_URL`` and ``SEMMEM_TOKEN``; ``admin_token``
    (default ``SEMMEM_ADMIN_TOKEN``) opens the owner's calls (``get``, ``list``, ``export``,
    ``delete_partition``). Every call has its own operation id and a ``deadlineAt``
    ``deadline_s`` ahead (10 s; ``timeout=`` per call); failures without an answer, 408, 429
    and 5xx are retried as ``retry`` says (default: twice, after 250 ms and 1 s) with the same
    body, so a write whose reply was lost is replayed, not written twice. Refusals raise
    ``SemmemError`` subclasses named by the contract's codes (``Conflict``, ``NotFound``, …).
    """

    def __init__(self, url: str | None = None, token: str | None = None, *,
                 admin_token: str | None = None, memory_path: str = "/memory",
                 access: Access = "read-write", deadline_s: float = 10.0,
                 retry: Retry | None = None, http: httpx.Client | None = None) -> None:
        super().__init__(url, token, admin_token=admin_token, memory_path=memory_path,
                         access=access, deadline_s=deadline_s, retry=retry)
        self._own_http = http is None
        self._http = http or httpx.Client()

    def recall(self, partition: str, text: str | None, max_bytes: int = DEFAULT_MAX_BYTES, *,
               operation_id: str | None = None, timeout: float | None = None) -> Recall:
        """The facts relevant to ``text`` within ``max_bytes`` (newest first for ``None``)."""
        return cast(Recall, self._send(self._recall_call(partition, text, max_bytes,
                                                         operation_id, timeout)))

    def search(self, partition: str, query: str, limit: int = 10, *,
               filter: dict[str, Any] | None = None, cursor: str | None = None,
               operation_id: str | None = None, timeout: float | None = None) -> SearchResult:
        """The facts closest to ``query`` with numbers and scores (``items``, ``count``), among
        those ``filter`` covers (a server with ``SEMMEM_TOOL_METADATA``)."""
        return cast(SearchResult, self.tool(partition, "search",
                                            _search_args(query, limit, filter), cursor,
                                            operation_id=operation_id, timeout=timeout))

    def remember(self, partition: str, text: str, *, metadata: dict[str, Any] | None = None,
                 cursor: str | None = None, operation_id: str | None = None,
                 timeout: float | None = None) -> WriteResult:
        """Store a fact (with ``metadata``: ``SEMMEM_TOOL_METADATA``); the result has its
        number ``n`` and maybe ``similar`` facts."""
        return cast(WriteResult, self.tool(partition, "remember",
                                           _remember_args(text, metadata), cursor,
                                           operation_id=operation_id, timeout=timeout))

    def update(self, partition: str, n: int, text: str, cursor: str | None = None, *,
               metadata: dict[str, Any] | None = None, operation_id: str | None = None,
               timeout: float | None = None) -> WriteResult:
        """Replace fact ``n``'s text (and its ``metadata`` whole, when given; ``{}`` clears
        it); ``Conflict`` if it changed after ``cursor``'s recall."""
        return cast(WriteResult, self.tool(partition, "update", edit_args(n, text, metadata),
                                           cursor, operation_id=operation_id, timeout=timeout))

    def forget(self, partition: str, n: int, cursor: str | None = None, *,
               operation_id: str | None = None, timeout: float | None = None) -> WriteResult:
        """Forget fact ``n`` (durably); ``Conflict`` if it changed after ``cursor``'s recall."""
        return cast(WriteResult, self.tool(partition, "forget", edit_args(n), cursor,
                                           operation_id=operation_id, timeout=timeout))

    def tool(self, partition: str, name: str, arguments: dict[str, Any],
             cursor: str | None = None, *, operation_id: str | None = None,
             timeout: float | None = None) -> Any:
        """Call any declared tool by name; its ``result`` as the server answered it."""
        return self._send(self._tool_call(partition, name, arguments, cursor, operation_id,
                                          timeout))

    def tools(self, *, timeout: float | None = None) -> builtins.list[ToolDefinition]:
        """The server's tools (from ``GET /openapi.json``, which needs no token)."""
        return tool_definitions(self._send(self._tools_call(timeout)), self.memory_path)

    def turn(self, partition: str, text: str | None, max_bytes: int = DEFAULT_MAX_BYTES, *,
             timeout: float | None = None) -> Turn:
        """Recall for one model request; the returned turn's tool calls carry its cursor."""
        return Turn(self, partition, self.recall(partition, text, max_bytes, timeout=timeout))

    # ----- the owner's calls (admin API, admin token) ---------------------------------------
    def get(self, partition: str, n: int, *, timeout: float | None = None) -> Item | None:
        """Live fact ``n`` with its record fields, ``None`` if forgotten, expired or never
        assigned."""
        return cast("Item | None", self._send(self._get_call(partition, n, timeout)))

    def list(self, partition: str, offset: int = 0, limit: int = DEFAULT_PAGE, *,
             filter: dict[str, Any] | None = None, timeout: float | None = None) -> ItemsPage:
        """One page of the live facts (those ``filter`` covers) in number order (``limit``
        1–1,000); ``next`` is the next page's offset, ``None`` on the last."""
        return cast(ItemsPage, self._send(self._list_call(partition, offset, limit, timeout,
                                                          filter)))

    def items(self, partition: str, page: int = DEFAULT_PAGE, *,
              filter: dict[str, Any] | None = None) -> Iterator[Item]:
        """Every live fact (that ``filter`` covers) in number order, ``page`` at a time."""
        offset: int | None = 0
        while offset is not None:
            got = self.list(partition, offset, page, filter=filter)
            yield from got["items"]
            offset = got["next"]

    def forget_matching(self, partition: str, filter: dict[str, Any], *,
                        timeout: float | None = None) -> Forgotten:
        """Forget every live fact ``filter`` (not empty) covers, through the forget path:
        numbers never reused, texts off every file within the forget window."""
        return cast(Forgotten, self._send(self._forget_matching_call(partition, filter,
                                                                     timeout)))

    def export(self, partition: str, *, timeout: float | None = None) -> builtins.list[Item]:
        """Every live fact with its record fields, as ``semmem export`` writes them."""
        return cast("list[Item]", self._send(self._export_call(partition, timeout)))

    def partitions(self, offset: int = 0, limit: int = DEFAULT_PAGE, *,
                   timeout: float | None = None) -> PartitionsPage:
        """One page of the partition names, sorted."""
        return cast(PartitionsPage, self._send(self._partitions_call(offset, limit, timeout)))

    def edit(self, partition: str, n: int, changes: dict[str, Any], *,
             timeout: float | None = None) -> dict[str, Any]:
        """Change fact ``n``'s ``text`` and record fields (``note``, ``status``,
        ``surfacing``, ``mergedInto``, ``expiresAt``; ``None`` clears one), as an owner."""
        return cast("dict[str, Any]", self._send(self._edit_call(partition, n, changes,
                                                                 timeout)))

    def store(self, ops: builtins.list[dict[str, Any]], *, timeout: float | None = None
              ) -> builtins.list[Any]:
        """Run a batch of store operations (``POST /store``: ``put``/``get``/``search``/``list``
        on the application's store items, which the model's tools never reach), in order; one
        result each. ``timeout`` defaults to 120 s (a put embeds its index texts first)."""
        return cast(builtins.list[Any], self._send(self._store_call(ops, timeout)))

    def ingest(self, partition: str, session_id: str,
               messages: Iterable[Mapping[str, Any]], *, operation_id: str | None = None,
               timeout: float | None = None) -> IngestResult:
        """Store a session's messages (``{"role", "content", "at"?}``, ``at`` ISO 8601 or a
        datetime) as pieces through ``POST /ingest``: appended to the session, a message it
        already holds never stored twice; retried with the same operation id, so a lost reply
        replays. ``timeout`` defaults to 120 s (every new piece is embedded first)."""
        return cast(IngestResult, self._send(self._ingest_call(
            partition, session_id, messages, operation_id, timeout)))

    def sessions(self, partition: str, *, timeout: float | None = None
                 ) -> builtins.list[SessionSummary]:
        """A partition's sessions, the latest said first (admin API)."""
        return cast(builtins.list[SessionSummary],
                    self._send(self._sessions_call(partition, timeout)))

    def session(self, partition: str, session_id: str, *, timeout: float | None = None
                ) -> dict[str, Any]:
        """One session's messages in order, each with its pieces (admin API)."""
        return cast(dict[str, Any], self._send(self._session_call(
            "GET", partition, session_id, timeout)))

    def forget_session(self, partition: str, session_id: str, *,
                       timeout: float | None = None) -> Forgotten:
        """Forget a session whole, durably (admin API); ``NotFound`` if it has no pieces."""
        return cast(Forgotten, self._send(self._session_call(
            "DELETE", partition, session_id, timeout)))

    def delete_partition(self, partition: str, *, timeout: float | None = None) -> bool:
        """Delete a partition and every file of it (the owner's erasure); ``False`` if it
        did not exist (or a lost reply's retry found it gone)."""
        return cast(bool, self._send(self._delete_partition_call(partition, timeout)))

    def _send(self, call: Call) -> Any:
        self._open()
        attempts = Attempts(call.deadline_s, self.retry)
        last: SemmemError | None = None
        while True:
            try:
                reply = self._http.request(call.method, self.url + call.path,
                                           params=call.params, content=call.content,
                                           headers=call.headers, timeout=attempts.timeout(last))
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
            time.sleep(delay)

    def close(self) -> None:
        """Close the connection pool (unless it was passed in); later calls raise
        ``ClientClosed``."""
        self.closed = True
        if self._own_http:
            self._http.close()

    def __enter__(self) -> Client:
        self._open()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class Turn(TurnBase):
    """One model request: its recall (``text``, ``sources``, ``cursor``) and the tool calls
    that follow it, each carrying that cursor."""

    def __init__(self, client: Client, partition: str, recall: Recall) -> None:
        super().__init__(partition, recall)
        self.client = client

    def search(self, query: str, limit: int = 10, *,
               filter: dict[str, Any] | None = None) -> SearchResult:
        """``Client.search`` in this turn."""
        return self.client.search(self.partition, query, limit, filter=filter,
                                  cursor=self.cursor)

    def remember(self, text: str, *, metadata: dict[str, Any] | None = None) -> WriteResult:
        """``Client.remember`` in this turn."""
        return self.client.remember(self.partition, text, metadata=metadata, cursor=self.cursor)

    def update(self, n: int, text: str, *,
               metadata: dict[str, Any] | None = None) -> WriteResult:
        """``Client.update`` under this turn's cursor."""
        return self.client.update(self.partition, n, text, self.cursor, metadata=metadata)

    def forget(self, n: int) -> WriteResult:
        """``Client.forget`` under this turn's cursor."""
        return self.client.forget(self.partition, n, self.cursor)
