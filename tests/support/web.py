"""Helpers for the web tests: request envelopes, the app in process, and the ``host`` fixture that
runs a module against both the app and a real server."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import httpx
import pytest
from starlette.testclient import TestClient

from semmem.embedding.embedder import Embedder
from semmem.embedding.fakes import HashingEmbedder
from semmem.items import Vectors
from semmem.settings import Settings
from semmem.web.app import create_app
from tests.support.server import ADMIN_TOKEN, AUTH, JSON, TOKEN, ServerProcess, iso_in


class Reply(Protocol):
    """What the tests read of a response (httpx's, or the Starlette test client's)."""

    @property
    def status_code(self) -> int: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def content(self) -> bytes: ...
    @property
    def text(self) -> str: ...
    def json(self, **kwargs: Any) -> Any: ...


class Client(Protocol):
    """What the tests use of a client: httpx against a server, or the in-process test client."""

    def get(self, url: str, *, params: Any = ..., headers: Any = ...) -> Reply: ...
    def post(self, url: str, *, content: Any = ..., json: Any = ..., headers: Any = ...
             ) -> Reply: ...
    def delete(self, url: str, *, params: Any = ..., headers: Any = ...) -> Reply: ...


_counter = iter(range(1, 10**9))


def envelope(operation: str = "recall", /, *, partition: str = "p", access: str = "read-write",
             operation_id: str | None = None, deadline: float = 60.0, **fields: Any
             ) -> dict[str, Any]:
    """A valid v1 request body; ``fields`` add or override fields (``None`` values kept)."""
    body: dict[str, Any] = {
        "version": 1,
        "operation": operation,
        "operationId": operation_id or f"op-{next(_counter)}",
        "partition": partition,
        "access": access,
        "deadlineAt": iso_in(deadline),
    }
    if operation == "recall":
        body.update({"input": {"text": None}, "maxBytes": 8192})
    body.update(fields)
    return body


_ENVELOPE_ARGS = ("partition", "access", "operation_id", "deadline")


def recall(text: str | None, *, max_bytes: int = 8192, **kw: Any) -> dict[str, Any]:
    """A recall body; keyword arguments other than the envelope's override body fields."""
    args = {k: kw.pop(k) for k in _ENVELOPE_ARGS if k in kw}
    return envelope("recall", **args, **{"input": {"text": text}, "maxBytes": max_bytes, **kw})


def tool(name: str, arguments: Any, cursor: str | None = None, **kw: Any) -> dict[str, Any]:
    """A tool-call body; keyword arguments other than the envelope's override body fields."""
    args = {k: kw.pop(k) for k in _ENVELOPE_ARGS if k in kw}
    body = envelope("tool", **args, **{"tool": name, "arguments": arguments, **kw})
    if cursor is not None:
        body["cursor"] = cursor
    return body


def settings_for(data: Path, **overrides: Any) -> Settings:
    """Settings on ``data`` with the test tokens and fast maintenance."""
    values: dict[str, Any] = {"data": str(data), "tokens": TOKEN, "admin_tokens": ADMIN_TOKEN,
                              "maintenance_delay_s": 0.2}
    values.update(overrides)
    return Settings(**values)


def wait_ready(client: Client, timeout: float = 30.0) -> None:
    """Poll ``/readyz`` until it answers 200."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if client.get("/readyz").status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError("server did not become ready")
        time.sleep(0.02)


@contextmanager
def app_client(data: Path, embedder: Embedder | None = None, **overrides: Any
               ) -> Iterator[TestClient]:
    """The app in-process (lifespan running, ready), with the fake embedder by default."""
    app = create_app(settings_for(data, **overrides), embedder=embedder or HashingEmbedder())
    with TestClient(app, raise_server_exceptions=False) as client:
        wait_ready(client)
        yield client


class GatedEmbedder:
    """The fake embedder, but each call waits until the test opens the gate."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder()
        self.model_id = self.inner.model_id
        self.dim = self.inner.dim
        self.gate = threading.Event()
        self.waiting = threading.Event()

    def embed_batch(self, texts: list[str]) -> Vectors:
        """Block until ``gate`` is set, then embed."""
        self.waiting.set()
        if not self.gate.wait(30):
            raise TimeoutError("gate never opened")
        return self.inner.embed_batch(texts)


class SlowEmbedder:
    """The fake embedder taking ``delay`` seconds per call (a model under load)."""

    def __init__(self, delay: float) -> None:
        self.inner = HashingEmbedder()
        self.model_id = self.inner.model_id
        self.dim = self.inner.dim
        self.delay = delay

    def embed_batch(self, texts: list[str]) -> Vectors:
        """Sleep, then embed."""
        time.sleep(self.delay)
        return self.inner.embed_batch(texts)


@pytest.fixture(scope="module", params=["app", "server"])
def host(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[Client]:
    """A client of the app in-process, or of a real uvicorn process on 127.0.0.1.

    Import it into a test module to run that module's tests against both.
    """
    data = tmp_path_factory.mktemp(f"host-{request.param}") / "db"
    if request.param == "app":
        with app_client(data, max_concurrency=64) as client:
            yield client
    else:
        server = ServerProcess(data, env={"SEMMEM_MAX_CONCURRENCY": "64"}).start()
        try:
            server.wait_ready()
            with server.client() as client:
                yield client
        finally:
            server.stop()


def send(client: Client, body: Any, headers: dict[str, str] | None = None,
         path: str = "/memory") -> Reply:
    """POST a body (a JSON value, or raw bytes) to the provider endpoint."""
    hdrs = {**AUTH, **JSON} if headers is None else headers
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.post(path, content=content, headers=hdrs)


def send_as(client: Client, token: str, body: Any) -> Reply:
    """POST a body to the provider endpoint with ``token`` as the bearer."""
    return send(client, body, {"Authorization": f"Bearer {token}", **JSON})


def result_of(r: Reply) -> Any:
    """A 200 answer's ``result`` (a tool call), or its body (a recall)."""
    assert r.status_code == 200, r.text
    body = r.json()
    return body.get("result", body)


def remember(client: Client, partition: str, text: str) -> dict[str, Any]:
    """Store a fact over HTTP; returns the tool result."""
    r = send(client, tool("remember", {"text": text}, partition=partition))
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()["result"]
    return result


def assert_error(r: Reply, status: int, code: str) -> dict[str, Any]:
    """The response is the contract's error envelope with this status and code."""
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"error"}
    error: dict[str, Any] = body["error"]
    assert set(error) <= {"code", "message", "details"}
    assert error["code"] == code
    assert isinstance(error["message"], str) and error["message"]
    assert "Traceback" not in r.text
    if "details" in error:
        assert isinstance(error["details"], dict)
    return error
