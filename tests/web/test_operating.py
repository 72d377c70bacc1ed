"""Operating a real server: JSON logs with request and trace ids, traces on the console,
partition quotas and per-token rate limits (docs/operating.md)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from semmem.tracing import partition_id
from tests.support.server import ADMIN, JSON, TOKEN, ServerProcess
from tests.support.spans import console_spans, parent_id, span_id, trace_id
from tests.support.web import recall, tool

TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT = "b7ad6b7169203331"
TRACEPARENT = f"00-{TRACE}-{PARENT}-01"


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **JSON}


def _send(c: httpx.Client, body: dict[str, Any], token: str = TOKEN,
          **headers: str) -> httpx.Response:
    return c.post("/memory", content=json.dumps(body), headers={**_bearer(token), **headers})


def _wait_for(check: Any, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)
    return found


@pytest.mark.timeout(120)
def test_json_logs_carry_request_and_trace_ids(tmp_path: Path) -> None:
    """Every line is one JSON object (jq parses them); the access line carries the caller's
    X-Request-Id (echoed) and the incoming trace; a request without an id gets a new one."""
    server = ServerProcess(tmp_path / "db", env={"SEMMEM_LOG_FORMAT": "json",
                                                 "SEMMEM_LOG_LEVEL": "info"})
    server.start().wait_ready()
    try:
        with server.client() as c:
            given = _send(c, recall("anything", partition="logs"),
                          **{"X-Request-Id": "req-42.a", "traceparent": TRACEPARENT})
            made = _send(c, recall("anything", partition="logs"))
            odd = _send(c, recall("x", partition="logs"), **{"X-Request-Id": "a b\tc"})
            refused = _send(c, tool("forget", {"n": 7}, partition="logs"),
                            **{"X-Request-Id": "req-404"})
            listed = c.get("/admin/items", params={"partition": "logs-owner"},
                           headers={**ADMIN, "X-Request-Id": "req-admin"})
            missing = c.get("/nowhere/else", headers={"X-Request-Id": "req-none"})
            page = c.get("/console/signin", headers={"X-Request-Id": "req-console"})
        assert given.status_code == made.status_code == odd.status_code == 200
        assert refused.status_code == 404
        assert given.headers["x-request-id"] == "req-42.a"
        assert re.fullmatch(r"[0-9a-f]{32}", made.headers["x-request-id"])
        assert re.fullmatch(r"[0-9a-f]{32}", odd.headers["x-request-id"])  # not echoed raw
        # Every request's access line is written (after its answer went out): wait for all.
        ids = ("req-42.a", "req-404", "req-admin", "req-none", "req-console")
        lines = _wait_for(lambda: all(any(f'"{rid}"' in ln and "semmem.access" in ln
                                          for ln in server.output().splitlines())
                                      for rid in ids)
                          and server.output().splitlines())
    finally:
        server.stop()
    records = [json.loads(line) for line in lines if line.strip()]  # every line parses
    assert all({"time", "level", "logger", "message", "request_id", "trace_id"} <= r.keys()
               for r in records)
    access = {r["request_id"]: r for r in records if r["logger"] == "semmem.access"}
    assert access["req-42.a"]["trace_id"] == TRACE
    assert access["req-42.a"]["message"].startswith("POST /memory 200")
    # The access line's own fields: the route's template, never the path's query string.
    assert (listed.status_code, missing.status_code, page.status_code) == (200, 404, 200)
    for rid, method, route, status in (("req-42.a", "POST", "/memory", 200),
                                       ("req-404", "POST", "/memory", 404),
                                       ("req-admin", "GET", "/admin/items", 200),
                                       ("req-none", "GET", None, 404),
                                       ("req-console", "GET", "/console/signin", 200)):
        line = access[rid]
        assert (line["method"], line["route"], line["status"]) == (method, route, status)
        assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0
    assert "logs-owner" not in json.dumps(access["req-admin"])
    assert access[made.headers["x-request-id"]]["trace_id"] is None
    # The refusal's own line (operation …: 404) carries the same request id.
    assert any(r["request_id"] == "req-404" and "404 not_found" in r["message"]
               for r in records if r["logger"] == "semmem.web")
    assert any(r["logger"].startswith("uvicorn") for r in records)  # uvicorn's lines too
    if shutil.which("jq"):
        jq = subprocess.run(["jq", "-c", ".request_id"], input="\n".join(lines), text=True,
                            capture_output=True, check=True)
        assert '"req-42.a"' in jq.stdout


@pytest.mark.timeout(120)
def test_console_traces_show_the_recall_span_tree(tmp_path: Path) -> None:
    """With OTEL_TRACES_EXPORTER=console a recall is a search_memory span, child of the
    incoming traceparent, with embed, view read, rank and pack children; a remember is a
    create_memory span with embed and commit (group size) children."""
    server = ServerProcess(tmp_path / "db", env={"OTEL_TRACES_EXPORTER": "console",
                                                 "OTEL_SERVICE_NAME": "semmem-test"})
    server.start().wait_ready()
    try:
        with server.client() as c:
            assert _send(c, tool("remember", {"text": "the cat is called Tom"},
                                 partition="tr")).status_code == 200
            body = _send(c, recall("what is the cat called?", partition="tr"),
                         traceparent=TRACEPARENT)
            assert body.status_code == 200 and body.json()["sources"]
        spans = _wait_for(lambda: (found := console_spans(server.output()))
                          and any(s["name"] == "search_memory" for s in found) and found)
    finally:
        server.stop()
    search = next(s for s in spans if s["name"] == "search_memory")
    assert (trace_id(search), parent_id(search)) == (TRACE, PARENT)
    attrs = search["attributes"]
    assert attrs["gen_ai.operation.name"] == "search_memory"
    assert attrs["gen_ai.memory.record.count"] == 1
    assert attrs["semmem.response.bytes"] == len(body.content)
    assert attrs["gen_ai.memory.store.id"] == partition_id("tr")
    assert search["kind"] == "SpanKind.SERVER"
    assert search["resource"]["attributes"]["service.name"] == "semmem-test"
    children = {s["name"] for s in spans if parent_id(s) == span_id(search)}
    assert children == {"semmem.embed", "semmem.view_read", "semmem.rank", "semmem.pack"}
    create = next(s for s in spans if s["name"] == "create_memory")
    kids = {s["name"]: s for s in spans if parent_id(s) == span_id(create)}
    assert {"semmem.embed", "semmem.commit"} <= kids.keys()
    assert kids["semmem.commit"]["attributes"]["semmem.commit.group_size"] == 1
    assert trace_id(create) != TRACE  # no traceparent: a trace of its own


@pytest.mark.timeout(120)
def test_partition_at_item_quota_refuses_next_remember(tmp_path: Path) -> None:
    """At its item quota a partition refuses a remember with 403 quota_exceeded (a status the
    host does not retry), stores nothing, and shows limit and usage in /admin/stats."""
    server = ServerProcess(tmp_path / "db", env={"SEMMEM_PARTITION_MAX_ITEMS": "2",
                                                 "SEMMEM_PARTITION_MAX_BYTES": "1000"})
    server.start().wait_ready()
    try:
        with server.client() as c:
            for text in ("first fact", "second fact"):
                assert _send(c, tool("remember", {"text": text}, partition="q")).status_code \
                    == 200
            refused = _send(c, tool("remember", {"text": "third fact"}, partition="q"))
            assert refused.status_code == 403 and "retry-after" not in refused.headers
            assert refused.json()["error"]["code"] == "quota_exceeded"
            assert refused.json()["error"]["details"] == {"quota": "items", "limit": 2,
                                                          "usage": 2, "audience": "model"}
            stats = c.get("/admin/stats", params={"partition": "q"}, headers=ADMIN).json()
            assert (stats["count"], stats["max_items"], stats["max_bytes"], stats["bytes"]) \
                == (2, 2, 1000, len("first fact") + len("second fact"))
            texts = [it["text"] for it in c.get("/admin/items", params={"partition": "q"},
                                                  headers=ADMIN).json()["items"]]
            assert sorted(texts) == ["first fact", "second fact"]
            assert _send(c, tool("remember", {"text": "elsewhere"}, partition="r")
                         ).status_code == 200
    finally:
        server.stop()


@pytest.mark.timeout(120)
def test_token_over_its_rate_gets_429_while_another_is_served(tmp_path: Path) -> None:
    """Past its burst one token gets 429 rate_limited with a Retry-After in whole seconds;
    another token is served; /metrics counts the refusal."""
    server = ServerProcess(tmp_path / "db", env={
        "SEMMEM_TOKENS": "tok-a-0000000000,tok-b-0000000000",
                                                 "SEMMEM_RATE_LIMIT": "6/m",
                                                 "SEMMEM_RATE_BURST": "2"})
    server.start().wait_ready()
    try:
        with server.client() as c:
            first = [_send(c, recall("x", partition="rl"), "tok-a-0000000000").status_code
                     for _ in range(2)]
            over = _send(c, recall("x", partition="rl"), "tok-a-0000000000")
            other = _send(c, recall("x", partition="rl"), "tok-b-0000000000")
            metrics = c.get("/metrics").text
    finally:
        server.stop()
    assert first == [200, 200] and other.status_code == 200
    assert over.status_code == 429 and over.json()["error"]["code"] == "rate_limited"
    assert 1 <= int(over.headers["retry-after"]) <= 10
    assert 'semmem_rate_limited_total{surface="provider"} 1.0' in metrics
    assert 'semmem_requests_total{operation="invalid",status="429",tool=""} 1.0' in metrics


@pytest.mark.timeout(120)
def test_insecure_callers_share_one_bucket_whatever_token_they_make_up(tmp_path: Path) -> None:
    """``--insecure`` checks no token, so a made-up one must not name a bucket of its own: 40
    requests, each with a fresh token, against 5/s are mostly refused on /memory and /mcp
    (before, 40 of 40 were served, each leaving a bucket behind)."""
    server = ServerProcess(tmp_path / "db", env={
        "SEMMEM_INSECURE": "true", "SEMMEM_TOKENS": "", "SEMMEM_RATE_LIMIT": "5/s"})
    server.start().wait_ready()
    mcp = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream"}
    try:
        with server.client() as c:
            for surface in ("provider", "mcp"):
                started = time.monotonic()
                codes = []
                for i in range(40):
                    headers = {**_bearer(f"made-up-{surface}-{i}"), **accept}
                    r = (_send(c, recall("x", partition="rl"), f"made-up-{surface}-{i}")
                         if surface == "provider"
                         else c.post("/mcp", content=json.dumps(mcp), headers=headers))
                    limited = r.status_code == 429 and r.json()["error"]["code"] == "rate_limited"
                    codes.append("limited" if limited else r.status_code)
                elapsed = time.monotonic() - started
                served = 40 - codes.count("limited")
                # one shared bucket: its burst (5) plus what 5/s refills while the loop ran
                assert served <= 5 + 5 * elapsed + 1, (surface, elapsed, codes)
                assert surface == "mcp" or codes[0] == 200  # the bucket's burst is served
            metrics = c.get("/metrics").text
    finally:
        server.stop()
    assert re.search(r'semmem_rate_limited_total\{surface="provider"\} [1-9]', metrics)
    assert re.search(r'semmem_rate_limited_total\{surface="mcp"\} [1-9]', metrics)
