"""What both clients share: their settings and the bodies of each verb."""

from __future__ import annotations

from typing import Any

from semmem_client._wire import Access, Recall, envelope

DEFAULT_DEADLINE_S = 10.0
DEFAULT_MAX_BYTES = 8192


class Base:
    """The settings of a client: where the server is, its token, the binding's access."""

    def __init__(self, url: str, token: str | None = None, *, memory_path: str = "/memory",
                 access: Access = "read-write", deadline_s: float = DEFAULT_DEADLINE_S) -> None:
        if not memory_path.startswith("/"):
            raise ValueError("memory_path must start with '/'")
        if deadline_s <= 0:
            raise ValueError("deadline_s must be positive")
        self.url = url.rstrip("/")
        self.memory_path = memory_path
        self.access: Access = access
        self.deadline_s = deadline_s
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if token is not None:
            self.headers["Authorization"] = f"Bearer {token}"

    def _recall_body(self, partition: str, text: str | None, max_bytes: int,
                     op_id: str | None) -> dict[str, Any]:
        return envelope("recall", op_id, partition, self.access, self.deadline_s,
                        input={"text": text}, maxBytes=max_bytes)

    def _tool_body(self, partition: str, tool: str, arguments: dict[str, Any],
                   cursor: str | None, op_id: str | None) -> dict[str, Any]:
        extra = {} if cursor is None else {"cursor": cursor}
        return envelope("tool", op_id, partition, self.access, self.deadline_s,
                        tool=tool, arguments=arguments, **extra)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url + self.memory_path!r}, access={self.access!r})"


def search_args(query: str, limit: int) -> dict[str, Any]:
    """The arguments of ``search``."""
    return {"query": query, "limit": limit}


def edit_args(n: int, text: str | None = None) -> dict[str, Any]:
    """The arguments of ``update`` (with text) and ``forget``."""
    return {"n": n} if text is None else {"n": n, "text": text}


class TurnBase:
    """One model request's recall; the turn's tool calls carry its cursor."""

    def __init__(self, partition: str, recall: Recall) -> None:
        self.partition = partition
        self.recall = recall

    @property
    def text(self) -> str:
        """The recalled text, for the instructions."""
        return self.recall.text

    @property
    def cursor(self) -> str | None:
        """The state the recall read."""
        return self.recall.cursor
