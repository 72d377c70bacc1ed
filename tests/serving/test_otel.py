"""Tracing: off (nothing of the SDK imported, nothing connects) unless OTEL_* configure it;
on, a span per request with the step spans under it, and no text, partition key or token in
any attribute (an in-memory exporter, the app in process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from semmem import tracing
from semmem.errors import InvalidInput
from semmem.serving.otel import exporters, setup
from tests.support.server import REPO, TOKEN
from tests.support.web import app_client, recall, send, tool

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.mark.parametrize(("env", "expected"), [
    ({}, []), ({"OTEL_TRACES_EXPORTER": "none"}, []), ({"OTEL_TRACES_EXPORTER": "console"},
                                                       ["console"]),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, ["otlp"]),
    ({"OTEL_TRACES_EXPORTER": "otlp,console"}, ["otlp", "console"]),
    ({"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"}, []),
])
def test_exporters_follow_the_standard_variables(env: dict[str, str],
                                                 expected: list[str]) -> None:
    assert exporters(env) == expected


def test_setup_refuses_what_it_cannot_export() -> None:
    with pytest.raises(InvalidInput, match="unknown exporter 'zipkin'"):
        setup({"OTEL_TRACES_EXPORTER": "zipkin"})
    with pytest.raises(InvalidInput, match="http/protobuf only"):
        setup({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    assert setup({}) is None and not tracing.enabled()


# A served recall and remember in a fresh process with no OTEL_* set: which modules loaded,
# and every connection attempted (the in-process client opens none of its own).
_UNCONFIGURED = """
import json, socket, sys, tempfile
tried = []
real = socket.socket.connect
def connect(self, address):
    tried.append(repr(address))
    return real(self, address)
socket.socket.connect = connect
socket.create_connection = lambda address, *a, **k: tried.append(repr(address))
from semmem.serving import otel
from tests.support.web import app_client, recall, send, tool
tracer = otel.setup()
with app_client(tempfile.mkdtemp()) as c:
    assert send(c, tool("remember", {"text": "a fact"})).status_code == 200
    assert send(c, recall("a fact")).status_code == 200
if tracer is not None:
    tracer.shutdown()
loaded = [m for m in ("opentelemetry.sdk", "opentelemetry.exporter", "requests")
          if m in sys.modules]
print(json.dumps({"tracing": tracer is not None, "loaded": loaded, "tried": tried}))
"""


def _served_in_a_fresh_process(**otel: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "SEMMEM_"))}
    out = subprocess.run([sys.executable, "-c", _UNCONFIGURED], capture_output=True, text=True,
                         check=True, cwd=REPO, env={**env, **otel})
    found: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


def test_unconfigured_imports_no_sdk_and_connects_nowhere() -> None:
    """Without OTEL_* the SDK and the exporters stay unimported and no connection is
    attempted; configured, the same check sees them. (OpenTelemetry's API is imported by
    FastAPI and the MCP SDK themselves, so it is not part of the check.)"""
    assert _served_in_a_fresh_process() == {"tracing": False, "loaded": [], "tried": []}
    on = _served_in_a_fresh_process(OTEL_TRACES_EXPORTER="otlp",
                                    OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9")
    assert on["tracing"] is True
    assert on["loaded"] == ["opentelemetry.sdk", "opentelemetry.exporter", "requests"]


def _tree(spans: tuple[ReadableSpan, ...], name: str) -> tuple[ReadableSpan, set[str]]:
    top = next(s for s in spans if s.name == name)
    assert top.context is not None
    children = {s.name for s in spans
                if s.parent is not None and s.parent.span_id == top.context.span_id}
    return top, children


def test_provider_requests_are_memory_spans_with_step_children(
        tmp_path: Path, spans: InMemorySpanExporter) -> None:
    with app_client(tmp_path / "db") as c:
        assert send(c, tool("remember", {"text": "the cat is called Tom"})).status_code == 200
        body = send(c, recall("what is the cat called?"),
                    headers={"traceparent": TRACEPARENT, "Authorization": f"Bearer {TOKEN}",
                             "Content-Type": "application/json"})
        assert send(c, tool("search", {"query": "cat"})).status_code == 200
        assert send(c, tool("forget", {"n": 9})).status_code == 404
    done = spans.get_finished_spans()
    search, children = _tree(done, "search_memory")
    assert children == {"semmem.embed", "semmem.view_read", "semmem.rank", "semmem.pack"}
    assert search.parent is not None and format(search.parent.span_id, "016x") \
        == "b7ad6b7169203331"
    attrs = dict(search.attributes or {})
    assert attrs["gen_ai.memory.record.count"] == 1
    assert attrs["semmem.response.bytes"] == len(body.content)
    assert attrs["gen_ai.memory.store.id"] == tracing.partition_id("p")
    _, kids = _tree(done, "create_memory")
    assert kids == {"semmem.embed", "semmem.hints", "semmem.write_view", "semmem.commit"}
    commit = next(s for s in done if s.name == "semmem.commit")
    assert dict(commit.attributes or {})["semmem.commit.group_size"] == 1
    refused = next(s for s in done if s.name == "delete_memory")
    assert dict(refused.attributes or {})["error.type"] == "not_found"
    assert dict(refused.attributes or {})["http.response.status_code"] == 404


def test_span_attributes_hold_no_texts_partitions_or_tokens(
        tmp_path: Path, spans: InMemorySpanExporter) -> None:
    """Every attribute, name and event of every span, through writes, reads and refusals."""
    secret = f"zz{uuid.uuid4().hex}"
    partition = f"owner-{uuid.uuid4().hex}"
    with app_client(tmp_path / "db") as c:
        n = send(c, tool("remember", {"text": f"My PIN is {secret}"},
                         partition=partition)).json()["result"]["n"]
        send(c, recall(f"what is my PIN {secret}?", partition=partition))
        send(c, tool("search", {"query": f"PIN {secret}"}, partition=partition))
        send(c, tool("update", {"n": n, "text": f"PIN {secret}!"}, partition=partition))
        send(c, tool("remember", {"text": secret, "extra": secret}, partition=partition))
        send(c, tool(secret, {"text": secret}, partition=partition))
        send(c, tool("forget", {"n": n}, partition=partition))
    done = spans.get_finished_spans()
    assert {"create_memory", "search_memory", "update_memory", "delete_memory"} \
        <= {s.name for s in done}
    dumped = "\n".join(s.to_json() for s in done)
    assert tracing.partition_id(partition) in dumped  # the hash is what names it
    for needle in (secret, partition, TOKEN):
        assert needle not in dumped, f"{needle!r} is in a span"


def test_refusals_are_errors_and_spans_name_route_method_record_and_model(
        tmp_path: Path, spans: InMemorySpanExporter) -> None:
    """A refused request's span has status ERROR (docs/operating.md); every request span
    carries ``http.request.method`` and ``http.route``; update and forget name the fact
    (``gen_ai.memory.record.id``), even when refused; ``semmem.embed`` names the model."""
    from opentelemetry.trace import StatusCode

    with app_client(tmp_path / "db") as c:
        assert send(c, tool("remember", {"text": "the cat is called Tom"})).status_code == 200
        assert send(c, tool("update", {"n": 1, "text": "the cat is Tim"})).status_code == 200
        assert send(c, tool("forget", {"n": 7})).status_code == 404
    done = spans.get_finished_spans()
    by_name = {s.name: s for s in done}
    refused, updated = by_name["delete_memory"], by_name["update_memory"]
    assert refused.status.status_code == StatusCode.ERROR
    assert updated.status.status_code == StatusCode.UNSET
    for span in (refused, updated, by_name["create_memory"]):
        attrs = dict(span.attributes or {})
        assert (attrs["http.request.method"], attrs["http.route"]) == ("POST", "/memory")
    assert dict(updated.attributes or {})["gen_ai.memory.record.id"] == "1"
    assert dict(refused.attributes or {})["gen_ai.memory.record.id"] == "7"
    assert "gen_ai.memory.record.id" not in dict(by_name["create_memory"].attributes or {})
    embed = by_name["semmem.embed"]
    assert dict(embed.attributes or {})["gen_ai.request.model"] == "hashing-64"
