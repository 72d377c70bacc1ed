"""Operations: health, readiness, metrics, backpressure, deadlines at commit, errors, config."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from semmem.embedding.fakes import HashingEmbedder
from semmem.errors import InvalidInput, Unavailable
from semmem.protocol.tools import tools_for
from semmem.web.app import create_app
from semmem.web.errors import error_response
from semmem.web.openapi import api_openapi
from tests.support.files import files_with
from tests.support.server import ADMIN, TOKEN
from tests.support.web import (
    GatedEmbedder,
    Reply,
    SlowEmbedder,
    app_client,
    assert_error,
    recall,
    remember,
    send,
    settings_for,
    tool,
    wait_ready,
)


def test_healthz_ok(tmp_path: Path) -> None:
    """Liveness answers 200 with a JSON body."""
    with app_client(tmp_path / "db") as c:
        r = c.get("/healthz")
    assert (r.status_code, r.json()) == (200, {"status": "ok"})


def test_readyz_ready_names_model(tmp_path: Path) -> None:
    """Readiness answers 200 once the model and the store are up, naming the model and the
    ranking (no file here: nothing changed from the defaults)."""
    with app_client(tmp_path / "db") as c:
        r = c.get("/readyz")
    assert (r.status_code, r.json()) == (200, {"status": "ready", "model": "hashing-64",
                                               "ranking": {"file": None, "changed": {}}})


def test_readyz_model_missing_unavailable(tmp_path: Path) -> None:
    """A missing model: healthz 200, readyz and every call 503 unavailable with Retry-After."""
    settings = settings_for(tmp_path / "db", model=tmp_path / "no-model")
    with TestClient(create_app(settings)) as c:
        deadline = time.monotonic() + 30
        while "not ready" not in c.get("/readyz").text:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert c.get("/healthz").status_code == 200
        ready = c.get("/readyz")
        call = send(c, recall("x"))
    for r in (ready, call):
        assert_error(r, 503, "unavailable")
        assert r.headers["retry-after"] == "2"
    assert "not ready" in call.json()["error"]["message"]


def test_startup_model_mismatch_unavailable_without_paths(tmp_path: Path) -> None:
    """A store embedded by another model: 503 until reindexed; no path reaches the caller."""
    with app_client(tmp_path / "db") as c:
        remember(c, "mm", "Ula collects stamps")
    other = HashingEmbedder(model_id="hashing-other")
    app = create_app(settings_for(tmp_path / "db"), embedder=other)
    with TestClient(app) as c:
        deadline = time.monotonic() + 30
        while "not ready" not in c.get("/readyz").text:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        r = send(c, recall(None, partition="mm"))
    error = assert_error(r, 503, "unavailable")
    assert str(tmp_path) not in r.text and "details" not in error


def test_server_error_message_hides_internals(caplog: pytest.LogCaptureFixture) -> None:
    """A 5xx from the core answers a generic message; the detail is logged with the op id."""
    exc = Unavailable("write failed: Dataset at path /srv/data/p_abc.lance was not found",
                      {"uri": "/srv/data"})
    with caplog.at_level(logging.WARNING, "semmem.web"):
        response = error_response(exc, "toolcall_9:facts")
    body = json.loads(bytes(response.body))
    assert response.status_code == 503 and response.headers["retry-after"] == "2"
    assert body == {"error": {"code": "unavailable", "message": (
        "memory is unavailable right now; retry shortly (logged with operation id "
        "toolcall_9:facts)")}}
    assert any("/srv/data/p_abc.lance" in rec.getMessage() and "toolcall_9:facts"
               in rec.getMessage() for rec in caplog.records)


def test_metrics_count_requests_latency_and_items(tmp_path: Path) -> None:
    """/metrics exposes request counts by operation/tool/status, latencies and items stored."""
    with app_client(tmp_path / "db") as c:
        remember(c, "m", "Vic likes tennis")
        remember(c, "m", "Vic likes golf")
        send(c, recall("tennis", partition="m"))
        send(c, tool("forget", {"n": 9}, partition="m"))
        send(c, tool("no_such_tool", {}, partition="m"))
        r = c.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert 'semmem_requests_total{operation="tool",status="200",tool="remember"} 2.0' in text
    assert 'semmem_requests_total{operation="recall",status="200",tool=""} 1.0' in text
    assert 'semmem_requests_total{operation="tool",status="404",tool="forget"} 1.0' in text
    # caller-chosen strings never become label values
    assert "no_such_tool" not in text
    assert 'semmem_requests_total{operation="tool",status="400",tool=""} 1.0' in text
    assert 'semmem_request_seconds_count{operation="tool",tool="remember"} 2.0' in text
    assert "semmem_items_stored 2.0" in text


def test_request_over_concurrency_limit_overloaded(tmp_path: Path) -> None:
    """Beyond max_concurrency a request gets 429 overloaded with Retry-After, at once."""
    embedder = GatedEmbedder()
    with app_client(tmp_path / "db", embedder=embedder, max_concurrency=1) as c:
        slow: list[Reply] = []
        worker = threading.Thread(target=lambda: slow.append(
            send(c, tool("remember", {"text": "Wes is slow"}, partition="busy"))))
        worker.start()
        try:
            assert embedder.waiting.wait(10)
            r = send(c, recall(None, partition="busy"))
        finally:
            embedder.gate.set()
            worker.join(30)
        assert_error(r, 429, "overloaded")
        assert r.headers["retry-after"] == "1"
        assert slow[0].status_code == 200
        assert send(c, recall(None, partition="busy")).json()["text"] == "1. Wes is slow"


def test_write_deadline_passing_before_commit_not_committed(tmp_path: Path) -> None:
    """The deadline passes while the write is under way: 400 deadline_exceeded, nothing stored."""
    with app_client(tmp_path / "db", embedder=SlowEmbedder(0.8)) as c:
        r = send(c, tool("remember", {"text": "Xia arrives late"}, partition="late",
                         deadline=0.4))
        assert_error(r, 400, "deadline_exceeded")
        time.sleep(0.5)
        items = c.get("/admin/items", params={"partition": "late"}, headers=ADMIN).json()
    assert items["items"] == [] and items["count"] == 0


def test_unexpected_error_internal_without_trace(tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """An exception nobody expected: 500 internal in the envelope; the trace goes to the log."""
    app = create_app(settings_for(tmp_path / "db"), embedder=HashingEmbedder())

    async def boom() -> None:
        raise RuntimeError("secret internals")

    app.add_api_route("/boom", boom, methods=["GET"])
    with TestClient(app, raise_server_exceptions=False) as c, \
            caplog.at_level(logging.ERROR, "semmem.web"):
        r = c.get("/boom")
    error = assert_error(r, 500, "internal")
    assert "secret internals" not in r.text
    assert error["message"].startswith("internal error")
    assert any("secret internals" in str(rec.exc_info) for rec in caplog.records)


def test_error_logged_with_operation_id(tmp_path: Path,
                                        caplog: pytest.LogCaptureFixture) -> None:
    """Every refused call is logged with its operationId."""
    with app_client(tmp_path / "db") as c, caplog.at_level(logging.INFO, "semmem.web"):
        send(c, tool("forget", {"n": 5}, partition="log", operation_id="toolcall_77:facts"))
    lines = [rec.getMessage() for rec in caplog.records]
    assert any("toolcall_77:facts" in ln and "404 not_found" in ln for ln in lines)


def test_custom_path_serves_there_only(tmp_path: Path) -> None:
    """A configured path is the endpoint; /memory is then unknown."""
    with app_client(tmp_path / "db", path="/oc-memory") as c:
        assert send(c, recall(None), path="/oc-memory").status_code == 200
        assert_error(send(c, recall(None)), 404, "not_found")


def test_openapi_served_without_token_from_the_tool_definitions(tmp_path: Path) -> None:
    """GET /openapi.json needs no token and is the document built from this app's path and
    tools, each tool call carrying the tool's description, access and idempotency."""
    with app_client(tmp_path / "db", path="/oc-memory", read_consistency_ms=500) as c:
        r = c.get("/openapi.json")
        again = c.get("/openapi.json", headers={"Authorization": "Bearer wrong"})
        app = c.app
    assert (r.status_code, r.headers["content-type"]) == (200, "application/json")
    assert again.content == r.content
    assert isinstance(app, FastAPI)
    doc = r.json()
    assert doc == json.loads(json.dumps(api_openapi(app, "/oc-memory", accepted=True)))
    assert "/memory" not in doc["paths"] and "post" in doc["paths"]["/oc-memory"]
    schemas = doc["components"]["schemas"]
    for spec in tools_for(accepted=True):
        call = schemas[f"{spec.name.capitalize()}Call"]
        assert (call["description"], call["x-access"], call["x-idempotent"]) == (
            spec.description, spec.access, spec.idempotent)
    assert "'accepted'" in schemas["RememberCall"]["description"]


@pytest.mark.parametrize("path", ["memory", "//memory", "/mem ory", "/memory?x=1", "/m#f",
                                  "/admin/x", "/healthz", "/openapi.json"])
def test_create_app_bad_path_refused(tmp_path: Path, path: str) -> None:
    """The endpoint path follows the contract's rules and does not shadow other endpoints."""
    with pytest.raises(InvalidInput):
        create_app(settings_for(tmp_path / "db", path=path), embedder=HashingEmbedder())


def test_tokens_file_accepted(tmp_path: Path) -> None:
    """Tokens come from SEMMEM_TOKENS_FILE too: one a line, comments and blanks skipped."""
    tokens = tmp_path / "tokens"
    tokens.write_text("# provider tokens\nfile-token-1\n\n  file-token-2  \n")
    with app_client(tmp_path / "db", tokens=None, tokens_file=tokens) as c:
        for token, status in (("file-token-2", 200), ("file-token-1", 200),
                              ("# provider tokens", 401), (TOKEN, 401)):
            r = send(c, recall(None), headers={"Authorization": f"Bearer {token}",
                                               "Content-Type": "application/json"})
            assert r.status_code == status, token


def test_insecure_app_needs_no_token(tmp_path: Path) -> None:
    """With insecure on, provider calls need no token (the admin API still does)."""
    app = create_app(settings_for(tmp_path / "db", tokens=None, insecure=True),
                     embedder=HashingEmbedder())
    # A loopback Host: insecure, anything else is refused (tests/web/test_hardening.py).
    with TestClient(app, base_url="http://127.0.0.1:8080") as c:
        wait_ready(c)
        r = send(c, recall(None), headers={"Content-Type": "application/json"})
        assert r.status_code == 200
        assert_error(c.get("/admin/partitions"), 401, "unauthorized")


def test_no_tokens_configured_refuses_all(tmp_path: Path) -> None:
    """Without tokens and without insecure, the app accepts no one (fails closed)."""
    with app_client(tmp_path / "db", tokens=None) as c:
        assert_error(send(c, recall(None)), 401, "unauthorized")
        assert_error(send(c, recall(None), headers={
            "Authorization": "Bearer ", "Content-Type": "application/json"}), 401,
            "unauthorized")


def test_maintenance_wired_forget_purges(tmp_path: Path) -> None:
    """The lifespan runs the maintainer: a forget is followed by a maintenance pass."""
    with app_client(tmp_path / "db", version_retention_s=0.0, maintenance_delay_s=0.05) as c:
        remember(c, "purge", "Yan's PIN is 4711")
        assert files_with(tmp_path / "db", b"PIN is 4711")  # the check below can see the text
        assert send(c, tool("forget", {"n": 1}, partition="purge")).status_code == 200
        runtime = c.app.state.runtime  # type: ignore[attr-defined]
        deadline = time.monotonic() + 20
        while runtime.maintainer.passes == 0:
            assert time.monotonic() < deadline, "no maintenance pass after forget"
            time.sleep(0.05)
    assert files_with(tmp_path / "db", b"PIN is 4711") == []


def test_lifespan_closes_and_reopens_same_store(tmp_path: Path) -> None:
    """Stopping the app and creating a new one on the same data keeps every fact."""
    with app_client(tmp_path / "db") as c:
        remember(c, "keep", "Zed keeps bees")
    with app_client(tmp_path / "db") as c:
        assert send(c, recall(None, partition="keep")).json()["text"] == "1. Zed keeps bees"
