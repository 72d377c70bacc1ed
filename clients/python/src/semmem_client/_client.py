"""``Client``: the blocking client, and ``Turn``, one model request's recall and tool calls."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any, cast

import httpx

from semmem_client._base import DEFAULT_MAX_BYTES, Base, TurnBase, edit_args, search_args
from semmem_client._errors import SemmemError
from semmem_client._retry import Attempts
from semmem_client._tools import ToolDefinition, tool_definitions
from semmem_client._wire import (
    Access,
    Recall,
    SearchResult,
    WriteResult,
    encode,
    read_answer,
    read_recall,
    read_result,
    transport_error,
)


class Client(Base):
    """A blocking semmem client that behaves like the contract's host.

    Every call has its own operation id and a ``deadlineAt`` ``deadline_s`` ahead (10 s);
    transport failures, 408, 429 and 5xx are retried at most twice with the same body, so a
    write whose reply was lost is replayed, not written twice. Refusals raise ``SemmemError``
    subclasses named by the contract's codes (``Conflict``, ``NotFound``, …).
    """

    def __init__(self, url: str, token: str | None = None, *, memory_path: str = "/memory",
                 access: Access = "read-write", deadline_s: float = 10.0,
                 http: httpx.Client | None = None) -> None:
        super().__init__(url, token, memory_path=memory_path, access=access,
                         deadline_s=deadline_s)
        self._own_http = http is None
        self._http = http or httpx.Client()

    def recall(self, partition: str, text: str | None, max_bytes: int = DEFAULT_MAX_BYTES, *,
               operation_id: str | None = None) -> Recall:
        """The facts relevant to ``text`` within ``max_bytes`` (newest first for ``None``)."""
        return read_recall(self._call(self._recall_body(partition, text, max_bytes,
                                                        operation_id)))

    def search(self, partition: str, query: str, limit: int = 10, *, cursor: str | None = None,
               operation_id: str | None = None) -> SearchResult:
        """The facts closest to ``query`` with numbers and scores (``items``, ``count``)."""
        return cast(SearchResult, self.tool(partition, "search", search_args(query, limit),
                                            cursor, operation_id=operation_id))

    def remember(self, partition: str, text: str, *, cursor: str | None = None,
                 operation_id: str | None = None) -> WriteResult:
        """Store a fact; the result has its number ``n`` and maybe ``similar`` facts."""
        return cast(WriteResult, self.tool(partition, "remember", {"text": text}, cursor,
                                           operation_id=operation_id))

    def update(self, partition: str, n: int, text: str, cursor: str | None = None, *,
               operation_id: str | None = None) -> WriteResult:
        """Replace fact ``n``'s text; ``Conflict`` if it changed after ``cursor``'s recall."""
        return cast(WriteResult, self.tool(partition, "update", edit_args(n, text), cursor,
                                           operation_id=operation_id))

    def forget(self, partition: str, n: int, cursor: str | None = None, *,
               operation_id: str | None = None) -> WriteResult:
        """Forget fact ``n`` (durably); ``Conflict`` if it changed after ``cursor``'s recall."""
        return cast(WriteResult, self.tool(partition, "forget", edit_args(n), cursor,
                                           operation_id=operation_id))

    def tool(self, partition: str, name: str, arguments: dict[str, Any],
             cursor: str | None = None, *, operation_id: str | None = None) -> Any:
        """Call any declared tool by name; its ``result`` as the server answered it."""
        return read_result(self._call(self._tool_body(partition, name, arguments, cursor,
                                                      operation_id)))

    def tools(self) -> list[ToolDefinition]:
        """The server's tools (from ``GET /openapi.json``, which needs no token)."""
        reply = self._http.get(self.url + "/openapi.json", timeout=self.deadline_s)
        return tool_definitions(read_answer(reply.status_code, reply.content, None),
                                self.memory_path)

    def turn(self, partition: str, text: str | None, max_bytes: int = DEFAULT_MAX_BYTES
             ) -> Turn:
        """Recall for one model request; the returned turn's tool calls carry its cursor."""
        return Turn(self, partition, self.recall(partition, text, max_bytes))

    def _call(self, body: dict[str, Any]) -> Any:
        content = encode(body)
        attempts = Attempts(self.deadline_s)
        last: SemmemError | None = None
        while True:
            try:
                reply = self._http.post(self.url + self.memory_path, content=content,
                                        headers=self.headers, timeout=attempts.timeout(last))
            except httpx.TransportError as exc:
                last = transport_error(exc)
                last.__cause__ = exc
                delay = attempts.after(last)
            else:
                try:
                    return read_answer(reply.status_code, reply.content)
                except SemmemError as exc:
                    last = exc
                    delay = attempts.after(exc, reply.headers.get("Retry-After"))
            time.sleep(delay)

    def close(self) -> None:
        """Close the connection pool (unless it was passed in)."""
        if self._own_http:
            self._http.close()

    def __enter__(self) -> Client:
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

    def search(self, query: str, limit: int = 10) -> SearchResult:
        """``Client.search`` in this turn."""
        return self.client.search(self.partition, query, limit, cursor=self.cursor)

    def remember(self, text: str) -> WriteResult:
        """``Client.remember`` in this turn."""
        return self.client.remember(self.partition, text, cursor=self.cursor)

    def update(self, n: int, text: str) -> WriteResult:
        """``Client.update`` under this turn's cursor."""
        return self.client.update(self.partition, n, text, self.cursor)

    def forget(self, n: int) -> WriteResult:
        """``Client.forget`` under this turn's cursor."""
        return self.client.forget(self.partition, n, self.cursor)
