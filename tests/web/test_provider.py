"""The provider contract, rule by rule: one table row per rule, run in-process and over HTTP.

Every row sends one request to a fresh partition (after storing the row's facts) and asserts
the status and the body. The same table runs against the app (ASGI) and a real uvicorn process.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.server import ADMIN, AUTH, JSON
from tests.support.web import Client, assert_error, envelope, host, recall, remember, send, tool

__all__ = ["host"]  # the fixture, imported to run every test here in-process and over HTTP

Body = Callable[[str], Any]  # partition -> JSON value, or raw bytes


@dataclass(frozen=True)
class Rule:
    """One rule of the contract: a request and the exact outcome it must get."""

    id: str
    body: Body
    status: int
    code: str | None = None
    headers: dict[str, str] | None = None
    facts: tuple[str, ...] = ()
    expect: Callable[[dict[str, Any]], None] | None = None
    retry_after: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def _without(body: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != key}


def _recall(text: str | None = "tea", **kw: Any) -> Body:
    return lambda p: recall(text, partition=p, **kw)


def _tool(name: str, arguments: Any, **kw: Any) -> Body:
    return lambda p: tool(name, arguments, partition=p, **kw)


def _empty_recall(body: dict[str, Any]) -> None:
    assert body["text"] == "" and body["sources"] == []
    assert isinstance(body["cursor"], str) and 0 < len(body["cursor"].encode()) <= 1024


def _tea_first(body: dict[str, Any]) -> None:
    lines = body["text"].split("\n")
    assert lines[0] == "1. Alice drinks green tea every morning"
    assert [s["id"] for s in body["sources"]] == [ln.split(".", 1)[0] for ln in lines]
    assert body["sources"][0] == {
        "id": "1", "title": "Alice drinks green tea every morning", "revision": "1",
        "updatedAt": body["sources"][0]["updatedAt"],
    }
    assert body["sources"][0]["updatedAt"].endswith("Z")


def _newest_first(body: dict[str, Any]) -> None:
    assert body["text"] == "3. Third fact about lamps\n2. Second fact about doors\n" \
                           "1. First fact about tables"


def _budget(limit: int) -> Callable[[dict[str, Any]], None]:
    def check(body: dict[str, Any]) -> None:
        assert 0 < len(body["text"].encode()) <= limit
        assert len(body["sources"]) == len(body["text"].split("\n"))
    return check


def _stored(n: int, count: int, **more: Any) -> Callable[[dict[str, Any]], None]:
    def check(body: dict[str, Any]) -> None:
        assert body == {"result": {"status": "stored", "n": n, "count": count, **more}}
    return check


def _no_hits(body: dict[str, Any]) -> None:
    assert body == {"result": {"items": [], "count": 0}}


def _search_hits(body: dict[str, Any]) -> None:
    result = body["result"]
    assert result["count"] == 2
    first = result["items"][0]
    assert first["n"] == 1
    assert set(first) >= {"n", "text", "score", "updatedAt"}
    assert first["text"] == "Alice drinks green tea every morning"


TEA = ("Alice drinks green tea every morning", "The office is in Lyon near the river")
THREE = ("First fact about tables", "Second fact about doors", "Third fact about lamps")
SURROGATE = (b'{"version":1,"operation":"recall","operationId":"x","partition":"\\ud800",'
             b'"access":"read","deadlineAt":"2099-01-01T00:00:00Z","input":{"text":null},'
             b'"maxBytes":10}')

RULES: list[Rule] = [
    # --- happy paths -------------------------------------------------------------------------
    Rule("recall_empty_partition", _recall(), 200, expect=_empty_recall),
    Rule("recall_relevant_first", _recall("Alice drinks green tea every morning?"), 200,
         facts=TEA, expect=_tea_first),
    Rule("recall_null_text_newest_first", lambda p: recall(None, partition=p), 200, facts=THREE,
         expect=_newest_first),
    Rule("recall_blank_text_newest_first", lambda p: recall("  ", partition=p), 200,
         facts=THREE, expect=_newest_first),
    Rule("recall_within_max_bytes", lambda p: recall(None, partition=p, max_bytes=60), 200,
         facts=THREE, expect=_budget(60)),
    Rule("recall_max_bytes_bounds_ok", lambda p: recall(None, partition=p, max_bytes=16384),
         200, facts=THREE, expect=_budget(16384)),
    Rule("recall_unknown_fields_ignored",
         lambda p: {**recall("tea", partition=p), "future": {"x": 1}}, 200,
         expect=_empty_recall),
    Rule("recall_read_access", lambda p: recall("tea", partition=p, access="read"), 200,
         expect=_empty_recall),
    Rule("search_read_access", _tool("search", {"query": "green tea"}, access="read"), 200,
         facts=TEA, expect=_search_hits),
    Rule("search_empty_partition", _tool("search", {"query": "x", "limit": 50}), 200,
         expect=_no_hits),
    Rule("remember_stores", _tool("remember", {"text": "Bob likes chess"}), 200,
         expect=_stored(1, 1)),
    Rule("remember_duplicate_existing", _tool("remember", {"text": "  alice DRINKS green tea "
                                                                   "every   morning"}),
         200, facts=TEA, expect=_stored(1, 2, existing=True)),
    Rule("update_stores", _tool("update", {"n": 2, "text": "The office moved to Paris"}), 200,
         facts=TEA, expect=_stored(2, 2)),
    Rule("update_integral_float_number", _tool("update", {"n": 2.0, "text": "Office: Paris"}),
         200, facts=TEA, expect=_stored(2, 2)),
    Rule("forget_stores", _tool("forget", {"n": 1}), 200, facts=TEA,
         expect=_stored(1, 1, forgotten=True)),
    # --- auth ----------------------------------------------------------------------------------
    Rule("auth_missing", _recall(), 401, "unauthorized", headers=JSON),
    Rule("auth_wrong_token", _recall(), 401, "unauthorized",
         headers={**JSON, "Authorization": "Bearer nope"}),
    Rule("auth_wrong_scheme", _recall(), 401, "unauthorized",
         headers={**JSON, "Authorization": "Basic dGVzdC10b2tlbg=="}),
    Rule("auth_admin_token_not_provider", _recall(), 401, "unauthorized",
         headers={**JSON, **ADMIN}),
    # --- body ----------------------------------------------------------------------------------
    Rule("body_content_type_not_json", _recall(), 400, "invalid_request",
         headers={**AUTH, "Content-Type": "text/plain"}),
    Rule("body_not_json", lambda p: b"{not json", 400, "invalid_request"),
    Rule("body_not_object", lambda p: [recall("x", partition=p)], 400, "invalid_request"),
    Rule("body_not_utf8", lambda p: b'{"version":1,"partition":"\xff"}', 400,
         "invalid_request"),
    Rule("body_duplicate_keys", lambda p: json.dumps(recall("x", partition=p))[:-1].encode()
         + b',"partition":"other"}', 400, "invalid_request"),
    Rule("body_nan", lambda p: json.dumps(recall("x", partition=p))[:-1].encode()
         + b',"extra":NaN}', 400, "invalid_request"),
    Rule("body_lone_surrogate", lambda p: SURROGATE, 400, "invalid_request"),
    Rule("body_over_64KiB", lambda p: recall("x" * 70_000, partition=p), 413, "too_large"),
    # --- envelope ------------------------------------------------------------------------------
    Rule("version_2", _recall(version=2), 400, "invalid_request"),
    Rule("version_string", _recall(version="1"), 400, "invalid_request"),
    Rule("version_true", _recall(version=True), 400, "invalid_request"),
    Rule("version_missing", lambda p: _without(recall("x", partition=p), "version"), 400,
         "invalid_request"),
    Rule("operation_unknown", _recall(operation="ingest"), 400, "invalid_request"),
    Rule("operation_id_empty", _recall(operationId=""), 400, "invalid_request"),
    Rule("operation_id_missing", lambda p: _without(recall("x", partition=p), "operationId"),
         400, "invalid_request"),
    Rule("partition_missing", lambda p: _without(recall("x", partition=p), "partition"), 400,
         "invalid_request"),
    Rule("partition_not_string", lambda p: {**recall("x", partition=p), "partition": 7}, 400,
         "invalid_request"),
    Rule("access_unknown", _recall(access="admin"), 400, "invalid_request"),
    Rule("deadline_not_iso", _recall(deadlineAt="tomorrow"), 400, "invalid_request"),
    Rule("deadline_date_only", _recall(deadlineAt="2099-01-01"), 400, "invalid_request"),
    Rule("deadline_missing", lambda p: _without(recall("x", partition=p), "deadlineAt"), 400,
         "invalid_request"),
    Rule("recall_max_bytes_zero", lambda p: recall("x", partition=p, max_bytes=0), 400,
         "invalid_request"),
    Rule("recall_max_bytes_over", lambda p: recall("x", partition=p, max_bytes=16385), 400,
         "invalid_request"),
    Rule("recall_max_bytes_string", _recall(maxBytes="8192"), 400, "invalid_request"),
    Rule("recall_max_bytes_missing", lambda p: _without(recall("x", partition=p), "maxBytes"),
         400, "invalid_request"),
    Rule("recall_input_missing", lambda p: _without(recall("x", partition=p), "input"), 400,
         "invalid_request"),
    Rule("recall_input_text_number", _recall(input={"text": 5}), 400, "invalid_request"),
    Rule("tool_name_missing", lambda p: _without(tool("search", {"query": "x"}, partition=p),
                                                 "tool"), 400, "invalid_request"),
    Rule("tool_unknown", _tool("delete_everything", {}), 400, "invalid_request"),
    Rule("tool_arguments_missing",
         lambda p: _without(tool("search", {"query": "x"}, partition=p), "arguments"), 400,
         "invalid_request"),
    Rule("cursor_over_1024_bytes", _tool("forget", {"n": 1}, cursor="c" * 1025), 400,
         "invalid_request", facts=TEA),
    Rule("cursor_not_semmem", _tool("update", {"n": 1, "text": "x y"}, cursor="snapshot-42"),
         400, "invalid_request", facts=TEA),
    Rule("cursor_of_other_partition",
         _tool("forget", {"n": 1}, cursor="c1.1.0123456789"), 400, "invalid_request", facts=TEA),
    # --- deadline --------------------------------------------------------------------------
    Rule("deadline_passed_recall", _recall(deadline=-1), 400, "deadline_exceeded"),
    Rule("deadline_passed_write", _tool("remember", {"text": "late fact"}, deadline=-0.5), 400,
         "deadline_exceeded"),
    # --- access ----------------------------------------------------------------------------
    Rule("remember_read_access", _tool("remember", {"text": "x"}, access="read"), 403,
         "forbidden"),
    Rule("update_read_access", _tool("update", {"n": 1, "text": "x"}, access="read"), 403,
         "forbidden", facts=TEA),
    Rule("forget_read_access", _tool("forget", {"n": 1}, access="read"), 403, "forbidden",
         facts=TEA),
    # --- arguments -------------------------------------------------------------------------
    Rule("remember_extra_property", _tool("remember", {"text": "x", "tags": ["a"]}), 422,
         "invalid_arguments"),
    Rule("remember_memory_property", _tool("remember", {"text": "x", "memory": "facts"}), 422,
         "invalid_arguments"),
    Rule("remember_text_missing", _tool("remember", {}), 422, "invalid_arguments"),
    Rule("remember_text_empty", _tool("remember", {"text": ""}), 422, "invalid_arguments"),
    Rule("remember_text_blank", _tool("remember", {"text": " \n\t "}), 422, "invalid_arguments"),
    Rule("remember_text_2001", _tool("remember", {"text": "a" * 2001}), 422,
         "invalid_arguments"),
    Rule("remember_text_number", _tool("remember", {"text": 42}), 422, "invalid_arguments"),
    Rule("arguments_not_object", _tool("remember", ["x"]), 422, "invalid_arguments"),
    Rule("arguments_null", _tool("remember", None), 422, "invalid_arguments"),
    Rule("update_n_zero", _tool("update", {"n": 0, "text": "x"}), 422, "invalid_arguments"),
    Rule("update_n_string", _tool("update", {"n": "1", "text": "x"}), 422, "invalid_arguments"),
    Rule("update_n_fraction", _tool("update", {"n": 1.5, "text": "x"}), 422,
         "invalid_arguments"),
    Rule("update_text_missing", _tool("update", {"n": 1}), 422, "invalid_arguments"),
    Rule("forget_n_missing", _tool("forget", {}), 422, "invalid_arguments"),
    Rule("search_limit_51", _tool("search", {"query": "x", "limit": 51}), 422,
         "invalid_arguments"),
    Rule("search_limit_0", _tool("search", {"query": "x", "limit": 0}), 422,
         "invalid_arguments"),
    Rule("search_query_empty", _tool("search", {"query": ""}), 422, "invalid_arguments"),
    Rule("search_query_2001", _tool("search", {"query": "q" * 2001}), 422, "invalid_arguments"),
    Rule("search_extra_property", _tool("search", {"query": "x", "partition": "other"}), 422,
         "invalid_arguments"),
    # --- items -----------------------------------------------------------------------------
    Rule("update_unknown_number", _tool("update", {"n": 99, "text": "x"}), 404, "not_found",
         facts=TEA),
    Rule("forget_unknown_number", _tool("forget", {"n": 99}), 404, "not_found", facts=TEA),
]


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_contract_rule(host: Client, rule: Rule) -> None:
    """Each rule: the request gets exactly this status and body."""
    partition = f"rule:{rule.id}"
    for fact in rule.facts:
        remember(host, partition, fact)
    r = send(host, rule.body(partition), rule.headers)
    if rule.code is None:
        assert r.status_code == rule.status, r.text
        assert r.headers["content-type"].startswith("application/json")
        if rule.expect is not None:
            rule.expect(r.json())
    else:
        assert_error(r, rule.status, rule.code)
    if rule.status == 401:
        assert r.headers["www-authenticate"].startswith("Bearer")


def test_rules_cover_every_error_code() -> None:
    """The table exercises every error code of the contract's envelope that a request can get."""
    codes = {r.code for r in RULES if r.code}
    assert codes >= {"invalid_request", "invalid_arguments", "deadline_exceeded", "unauthorized",
                     "forbidden", "not_found", "too_large"}


def test_refused_write_stores_nothing(host: Client) -> None:
    """Refused writes (deadline, access, arguments) leave the partition untouched."""
    p = "refused-writes"
    for body in (tool("remember", {"text": "late"}, partition=p, deadline=-1),
                 tool("remember", {"text": "ro"}, partition=p, access="read"),
                 tool("remember", {"text": "x", "extra": 1}, partition=p)):
        assert send(host, body).status_code in (400, 403, 422)
    r = send(host, recall(None, partition=p))
    assert r.json()["text"] == "" and r.json()["sources"] == []


def test_recall_has_no_side_effects(host: Client) -> None:
    """Recall twice: identical bodies (same cursor), and the partition is unchanged."""
    p = "recall-no-side-effects"
    remember(host, p, "Carol is allergic to peanuts")
    first = send(host, recall("peanuts", partition=p))
    second = send(host, recall("peanuts", partition=p))
    assert first.status_code == second.status_code == 200
    assert first.content == second.content
    assert remember(host, p, "A second fact")["n"] == 2


def test_recall_caps_sources_at_100(host: Client) -> None:
    """More than 100 short facts fit the budget: at most 100 lines and sources come back."""
    p = "recall-100"
    for i in range(105):
        remember(host, p, f"f{i}")
    body = send(host, recall(None, partition=p, max_bytes=16384)).json()
    assert len(body["sources"]) == 100
    lines = body["text"].split("\n")
    assert [s["id"] for s in body["sources"]] == [ln.split(". ", 1)[0] for ln in lines]
    assert len(body["text"].encode()) <= 16384


def test_recall_response_fits_64KiB(host: Client) -> None:
    """Texts that JSON-escape six-fold still give a response within 64 KiB, lines = sources."""
    p = "recall-escaped"
    for i in range(9):
        remember(host, p, f"{i} " + "\x01" * 1990)
    r = send(host, recall(None, partition=p, max_bytes=16384))
    assert r.status_code == 200
    assert len(r.content) <= 64 * 1024
    body = r.json()
    assert 0 < len(body["sources"]) < 9
    assert len(body["text"].split("\n")) == len(body["sources"])


def test_search_cut_to_fit_64KiB(host: Client) -> None:
    """Fifty 2,000-character results cannot fit: the best ones that fit come back, marked."""
    p = "search-cut"
    for i in range(40):
        remember(host, p, f"quote {i} " + '"' * 1980)
    r = send(host, tool("search", {"query": "quote", "limit": 50}, partition=p))
    assert r.status_code == 200
    assert len(r.content) <= 64 * 1024
    result = r.json()["result"]
    assert result["truncated"] is True
    assert 10 < len(result["items"]) < 40
    assert result["count"] == 40


def test_remember_text_stored_exactly(host: Client) -> None:
    """Unicode, quotes and inner whitespace survive; surrounding whitespace is trimmed."""
    p = "exact-text"
    text = "Zoë's café — «naïve» 東京 🚀  two  spaces"
    remember(host, p, f"  {text}\n")
    body = send(host, recall(None, partition=p)).json()
    assert body["text"] == f"1. {text}"
    assert body["sources"][0]["title"] == text[:80]


def test_recall_newlines_become_one_line(host: Client) -> None:
    """An item with newlines renders as one line, so lines and sources stay aligned."""
    p = "multiline"
    remember(host, p, "line one\nline two\r\nline three")
    body = send(host, recall(None, partition=p)).json()
    assert body["text"] == "1. line one line two line three"
    assert len(body["sources"]) == 1


def test_numbers_never_reused(host: Client) -> None:
    """Forgetting the newest item does not free its number."""
    p = "numbers"
    remember(host, p, "one")
    remember(host, p, "two")
    assert send(host, tool("forget", {"n": 2}, partition=p)).status_code == 200
    assert remember(host, p, "three") == {"status": "stored", "n": 3, "count": 2}
    r = send(host, tool("update", {"n": 2, "text": "again"}, partition=p))
    assert_error(r, 404, "not_found")


def test_partition_only_from_envelope(host: Client) -> None:
    """Arguments cannot name a partition: an extra property is refused, not obeyed."""
    remember(host, "owner-a", "secret of A")
    r = send(host, tool("search", {"query": "secret", "partition": "owner-a"},
                        partition="owner-b"))
    assert_error(r, 422, "invalid_arguments")
    r = send(host, tool("search", {"query": "secret"}, partition="owner-b"))
    assert r.json() == {"result": {"items": [], "count": 0}}


def test_error_envelope_on_unknown_route_and_method(host: Client) -> None:
    """Starlette's own 404 and 405 use the contract's envelope too."""
    assert_error(host.get("/nowhere"), 404, "not_found")
    r = host.get("/memory", headers=AUTH)
    said = assert_error(r, 405, "invalid_request")["message"]
    assert r.headers["allow"] == "POST"
    assert said == "method GET is not allowed on /memory; it takes POST"


def test_envelope_reports_every_field_problem(host: Client) -> None:
    """An invalid envelope names the fields at fault in ``details``."""
    body = envelope("recall", version=1, maxBytes=0, access="nope", input={"text": None})
    error = assert_error(send(host, body), 400, "invalid_request")
    fields = {p["field"] for p in error["details"]["problems"]}
    assert {"access", "maxBytes"} <= fields


def test_declared_schema_is_enforced_exactly(host: Client, tmp_path: Path) -> None:
    """Arguments accepted by the declared schema are accepted; the 422 lists schema problems."""
    error = assert_error(send(host, tool("update", {"n": 0, "text": "", "x": 1})), 422,
                         "invalid_arguments")
    paths = {p["path"] for p in error["details"]["problems"]}
    assert {"/n", "/text", "/"} <= paths
