"""What both clients share: their settings (arguments, else ``SEMMEM_*`` variables) and each
verb's call — method, path, body, deadline and how its answer is read."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from semmem_client._errors import ClientClosed, NotFound, ProtocolError
from semmem_client._ingest import (
    DEFAULT_INGEST_DEADLINE_S,
    INGEST_PATH,
    ingest_body,
    read_ingest,
)
from semmem_client._retry import Retry
from semmem_client._wire import (
    Access,
    Recall,
    encode,
    envelope,
    read_answer,
    read_facts,
    read_recall,
    read_result,
)

STORE_PATH = "/store"
DEFAULT_DEADLINE_S = 10.0
DEFAULT_MAX_BYTES = 8192
DEFAULT_PAGE = 100
ENV_URL, ENV_TOKEN, ENV_ADMIN_TOKEN = "SEMMEM_URL", "SEMMEM_TOKEN", "SEMMEM_ADMIN_TOKEN"


@dataclass(frozen=True)
class Call:
    """One logical call: every attempt sends these same bytes; ``read`` decodes the answer
    (status, body) or raises the error it carries."""

    method: str
    path: str
    read: Callable[[int, bytes], Any]
    deadline_s: float
    content: bytes | None = None
    params: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)


def _json(status: int, content: bytes) -> Any:
    return read_answer(status, content, None)  # the admin API's answers: no 64 KiB rule


class Base:
    """The settings of a client: where the server is, its tokens, the binding's access, the
    default deadline and the retry policy."""

    def __init__(self, url: str | None = None, token: str | None = None, *,
                 admin_token: str | None = None, memory_path: str = "/memory",
                 access: Access = "read-write", deadline_s: float = DEFAULT_DEADLINE_S,
                 retry: Retry | None = None) -> None:
        url = url if url is not None else os.environ.get(ENV_URL)
        if not url:
            raise ValueError(f"no server URL: pass url or set {ENV_URL}")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"url must be absolute, starting http:// or https:// "
                             f"(e.g. http://127.0.0.1:8080), not {url!r}")
        if parts.query or parts.fragment:
            raise ValueError("url must not carry a query or fragment")
        if not memory_path.startswith("/"):
            raise ValueError("memory_path must start with '/'")
        check_deadline(deadline_s)
        token = token if token is not None else os.environ.get(ENV_TOKEN)
        admin_token = admin_token if admin_token is not None else os.environ.get(ENV_ADMIN_TOKEN)
        self.url = url.rstrip("/")
        self.memory_path = memory_path
        self.access: Access = access
        self.deadline_s = deadline_s
        self.retry = retry or Retry()
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self._admin_headers = {"Accept": "application/json"}
        if admin_token:
            self._admin_headers["Authorization"] = f"Bearer {admin_token}"
        self._admin = bool(admin_token)
        self.closed = False

    def _open(self) -> None:
        if self.closed:
            raise ClientClosed(f"this {type(self).__name__} is closed; make a new one")

    def _deadline(self, timeout: float | None) -> float:
        return self.deadline_s if timeout is None else check_deadline(timeout)

    # ----- the provider contract -----------------------------------------------------------
    def _provider(self, body: dict[str, Any], deadline_s: float,
                  read: Callable[[Any], Any]) -> Call:
        return Call("POST", self.memory_path, lambda status, content: read(
            read_answer(status, content)), deadline_s, encode(body), headers=self.headers)

    def _recall_call(self, partition: str, text: str | None, max_bytes: int,
                     op_id: str | None, timeout: float | None) -> Call:
        deadline_s = self._deadline(timeout)
        return self._provider(envelope("recall", op_id, partition, self.access, deadline_s,
                                       input={"text": text}, maxBytes=max_bytes),
                              deadline_s, read_recall)

    def _tool_call(self, partition: str, tool: str, arguments: dict[str, Any],
                   cursor: str | None, op_id: str | None, timeout: float | None) -> Call:
        deadline_s = self._deadline(timeout)
        extra = {} if cursor is None else {"cursor": cursor}
        return self._provider(envelope("tool", op_id, partition, self.access, deadline_s,
                                       tool=tool, arguments=arguments, **extra),
                              deadline_s, read_result)

    def _ingest_call(self, partition: str, session_id: str,
                     messages: Iterable[Mapping[str, Any]], op_id: str | None,
                     timeout: float | None) -> Call:
        deadline_s = check_deadline(DEFAULT_INGEST_DEADLINE_S if timeout is None else timeout)
        body = ingest_body(partition, session_id, messages, op_id, deadline_s)
        return Call("POST", INGEST_PATH, lambda status, content: read_ingest(
            read_answer(status, content, None)), deadline_s, encode(body), headers=self.headers)

    def _store_call(self, ops: list[dict[str, Any]], timeout: float | None) -> Call:
        deadline_s = check_deadline(DEFAULT_INGEST_DEADLINE_S if timeout is None else timeout)
        return Call("POST", STORE_PATH, lambda status, content: _store_results(
            read_answer(status, content, None), len(ops)), deadline_s, encode({"ops": ops}),
            headers=self.headers)

    def _tools_call(self, timeout: float | None) -> Call:
        return Call("GET", "/openapi.json", _json, self._deadline(timeout))

    # ----- the admin API (owners: an admin token) -------------------------------------------
    def _admin_call(self, method: str, path: str, params: dict[str, Any],
                    timeout: float | None, read: Callable[[int, bytes], Any] = _json,
                    body: dict[str, Any] | None = None) -> Call:
        if not self._admin:
            raise ValueError(f"{method} /admin{path} is the admin API: pass admin_token= "
                             f"or set {ENV_ADMIN_TOKEN}")
        headers = dict(self._admin_headers)
        content = None
        if body is not None:
            content = json.dumps(body, ensure_ascii=False).encode()
            headers["Content-Type"] = "application/json"
        return Call(method, "/admin" + path, read, self._deadline(timeout), content,
                    params, headers)

    def _get_call(self, partition: str, n: int, timeout: float | None) -> Call:
        def read(status: int, content: bytes) -> Any:
            try:
                return _json(status, content)["item"]
            except NotFound as exc:
                if exc.details.get("n") == n:  # no such item; not an unknown endpoint
                    return None
                raise

        return self._admin_call("GET", "/item", {"partition": partition, "n": n}, timeout, read)

    def _list_call(self, partition: str, offset: int, limit: int, timeout: float | None,
                   filter: dict[str, Any] | None = None) -> Call:
        params = {"partition": partition, "offset": offset, "limit": limit,
                  **filter_param(filter)}
        return self._admin_call("GET", "/items", params, timeout)

    def _forget_matching_call(self, partition: str, filter: dict[str, Any],
                              timeout: float | None) -> Call:
        if not filter:
            raise ValueError("forget_matching needs a filter; to delete every fact, use "
                             "delete_partition")
        return self._admin_call("DELETE", "/items", {"partition": partition,
                                                     **filter_param(filter)}, timeout)

    def _export_call(self, partition: str, timeout: float | None) -> Call:
        return self._admin_call("GET", "/export", {"partition": partition}, timeout,
                                read_facts)

    def _partitions_call(self, offset: int, limit: int, timeout: float | None) -> Call:
        return self._admin_call("GET", "/partitions", {"offset": offset, "limit": limit},
                                timeout)

    def _edit_call(self, partition: str, n: int, changes: dict[str, Any],
                   timeout: float | None) -> Call:
        return self._admin_call("PATCH", "/items", {"partition": partition, "n": n}, timeout,
                                body=changes)

    def _delete_partition_call(self, partition: str, timeout: float | None) -> Call:
        return self._admin_call("DELETE", "/partitions", {"partition": partition}, timeout,
                                lambda status, content: bool(_json(status, content)["deleted"]))

    def _sessions_call(self, partition: str, timeout: float | None) -> Call:
        return self._admin_call("GET", "/sessions", {"partition": partition}, timeout,
                                lambda status, content: _json(status, content)["sessions"])

    def _session_call(self, method: str, partition: str, session_id: str,
                      timeout: float | None) -> Call:
        def read(status: int, content: bytes) -> Any:
            answer = _json(status, content)
            return answer["session"] if method == "GET" else answer

        return self._admin_call(method, "/session", {"partition": partition,
                                                     "session": session_id}, timeout, read)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url + self.memory_path!r}, access={self.access!r})"


def check_deadline(seconds: float) -> float:
    """A call's deadline in seconds: finite and positive."""
    if isinstance(seconds, bool) or not math.isfinite(seconds) or seconds <= 0:
        raise ValueError("a deadline (deadline_s, timeout) must be a positive number of seconds")
    return seconds


def filter_param(filter: dict[str, Any] | None) -> dict[str, str]:
    """The admin API's ``filter`` query parameter (JSON), if there is a filter."""
    return {} if filter is None else {"filter": json.dumps(filter, ensure_ascii=False)}


def search_args(query: str, limit: int, filter: dict[str, Any] | None = None
                ) -> dict[str, Any]:
    """The arguments of ``search`` (``filter`` needs a server with ``SEMMEM_TOOL_METADATA``)."""
    return {"query": query, "limit": limit, **({} if filter is None else {"filter": filter})}


def remember_args(text: str, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """The arguments of ``remember``."""
    return {"text": text, **({} if metadata is None else {"metadata": metadata})}


def edit_args(n: int, text: str | None = None, metadata: dict[str, Any] | None = None
              ) -> dict[str, Any]:
    """The arguments of ``update`` (with text) and ``forget``."""
    args: dict[str, Any] = {"n": n} if text is None else {"n": n, "text": text}
    return args if metadata is None else {**args, "metadata": metadata}


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


def _store_results(body: Any, count: int) -> list[Any]:
    """A ``POST /store`` answer: one result per operation."""
    results = body.get("results") if isinstance(body, dict) else None
    if not isinstance(results, list) or len(results) != count:
        raise ProtocolError("store answer without one result per operation", status=200)
    return results
