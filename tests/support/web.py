"""Helpers for the web tests: request envelopes, an in-process app, a real server process."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import httpx
import pytest
from starlette.testclient import TestClient

from semmem.embedder import Embedder, HashingEmbedder, Vectors
from semmem.settings import Settings
from semmem.web.app import create_app


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


TOKEN = "test-token"
ADMIN_TOKEN = "admin-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
REPO = Path(__file__).resolve().parents[2]


def iso_in(seconds: float) -> str:
    """An ISO 8601 instant ``seconds`` from now (negative: in the past)."""
    at = datetime.now(UTC) + timedelta(seconds=seconds)
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


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


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


# `semmem serve`'s own code path, with the fake embedder instead of the bundled model.
_LAUNCH = (
    "from semmem.embedder import HashingEmbedder; from semmem.settings import Settings; "
    "from semmem.web.server import serve; serve(Settings(), embedder=HashingEmbedder())"
)


class ServerProcess:
    """A real uvicorn process serving semmem on 127.0.0.1."""

    def __init__(self, data: Path, *, env: dict[str, str] | None = None,
                 argv: list[str] | None = None) -> None:
        self.data = data
        self.port = free_port()
        self.extra_env = env or {}
        self.argv = argv
        self.proc: subprocess.Popen[str] | None = None
        self.log = data.parent / f"server-{self.port}.log"

    @property
    def url(self) -> str:
        """Base URL."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerProcess:
        """Start the process (does not wait for readiness)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
        env.update({
            "SEMMEM_DATA": str(self.data), "SEMMEM_HOST": "127.0.0.1",
            "SEMMEM_PORT": str(self.port), "SEMMEM_TOKENS": TOKEN,
            "SEMMEM_ADMIN_TOKENS": ADMIN_TOKEN, "SEMMEM_LOG_LEVEL": "warning",
            "SEMMEM_MAINTENANCE_DELAY_S": "0.2",
            "PYTHONUNBUFFERED": "1",
        })
        env.update(self.extra_env)
        argv = self.argv or [sys.executable, "-c", _LAUNCH]
        # A file, not a pipe: nobody reads a pipe while the server runs, and a full one blocks it.
        with self.log.open("a") as sink:
            self.proc = subprocess.Popen(argv, env=env, cwd=REPO, stdout=sink,
                                         stderr=subprocess.STDOUT, text=True)
        return self

    def client(self) -> httpx.Client:
        """A client for this server (timeouts generous: the machine is shared)."""
        return httpx.Client(base_url=self.url, timeout=30.0)

    def wait_ready(self, timeout: float = 60.0) -> ServerProcess:
        """Block until ``/readyz`` answers 200."""
        with self.client() as c:
            deadline = time.monotonic() + timeout
            while True:
                assert self.proc is not None and self.proc.poll() is None, self.output()
                try:
                    if c.get("/readyz").status_code == 200:
                        return self
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise TimeoutError(f"server not ready: {self.output()}")
                time.sleep(0.05)

    def kill9(self) -> None:
        """SIGKILL: no shutdown code runs."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        """Terminate (gracefully, then forcibly)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def output(self) -> str:
        """What the process printed so far."""
        return self.log.read_text() if self.log.exists() else ""


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


JSON = {"Content-Type": "application/json"}


def send(client: Client, body: Any, headers: dict[str, str] | None = None,
         path: str = "/memory") -> Reply:
    """POST a body (a JSON value, or raw bytes) to the provider endpoint."""
    hdrs = {**AUTH, **JSON} if headers is None else headers
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.post(path, content=content, headers=hdrs)


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
