"""The declared tool schemas and the server agree exactly on strings (issue 15, point 4).

A host checks tool arguments against the declared JSON Schema with an ECMA-262 regular
expression engine (JSON Schema's dialect; 2020-12 asks for Unicode mode). Here ``regress``, a
Rust ECMA-262 engine, plays the host: for each generated string the host's verdict is computed
from the declaration, and the server must accept exactly the strings the host accepts. What the
schema cannot say (lone surrogates, which no UTF-8 text holds) the description says, and the
server refuses it, saying why (a lone surrogate is refused wherever it is in the body: 400).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import regress
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from semmem.protocol.declaration import tools_declaration
from tests.support.web import app_client, assert_error, send, tool

# Characters where engines and trimming rules disagree: ECMA-262 whitespace (Zs, BOM, line
# terminators), Python-only whitespace (U+001C–U+001F, U+0085), NUL, and ordinary text.
EDGES = ("\t\n\x0b\x0c\r \x00\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u200a\u200b\u2028\u2029"
         "\u202f\u205f\u3000\ufeff")
CHARS = st.one_of(st.sampled_from(EDGES), st.sampled_from("ab é😀"),
                  st.characters(codec="utf-8"))


@st.composite
def strings(draw: st.DrawFn) -> str:
    """Short strings of edge characters, and strings around the 2,000-character limit with
    whitespace around them."""
    if draw(st.booleans()):
        return draw(st.text(CHARS, max_size=12))
    core = draw(st.integers(1995, 2003))
    pad = draw(st.text(st.sampled_from(EDGES), max_size=4))
    tail = draw(st.text(st.sampled_from(EDGES), max_size=4))
    middle = draw(st.text(CHARS, min_size=1, max_size=3))
    return pad + "x" * (core - len(middle)) + middle + tail


def host_accepts(schema: dict[str, Any], value: str) -> bool:
    """A host's check of one string against a string schema: lengths in code points, the
    pattern with an ECMA-262 engine in Unicode mode (unanchored, as JSON Schema says)."""
    assert schema["type"] == "string"
    if len(value) < schema.get("minLength", 0):
        return False
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        return False
    pattern = schema.get("pattern")
    return pattern is None or regress.Regex(pattern, "u").find(value) is not None


def schema_of(tool_name: str, prop: str) -> dict[str, Any]:
    for spec in tools_declaration():
        if spec["name"] == tool_name:
            schema: dict[str, Any] = spec["input"]["properties"][prop]
            return schema
    raise KeyError(tool_name)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with app_client(tmp_path_factory.mktemp("agree") / "db") as c:
        yield c


SETTINGS = settings(max_examples=250, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


def _agree(r: Any, accepted: bool, value: str) -> None:
    if accepted:
        assert r.status_code == 200, (repr(value[:40]), len(value), r.text)
    else:
        error = assert_error(r, 422, "invalid_arguments")
        assert error["message"], repr(value)


@SETTINGS
@given(value=strings())
def test_remember_text_accepted_exactly_as_declared(client: TestClient, value: str) -> None:
    accepted = host_accepts(schema_of("remember", "text"), value)
    r = send(client, tool("remember", {"text": value}, partition="agree-remember"))
    _agree(r, accepted, value)


@SETTINGS
@given(value=strings())
def test_update_text_accepted_exactly_as_declared(client: TestClient, value: str) -> None:
    send(client, tool("remember", {"text": "the fact to update"}, partition="agree-update"))
    accepted = host_accepts(schema_of("update", "text"), value)
    r = send(client, tool("update", {"n": 1, "text": value}, partition="agree-update"))
    _agree(r, accepted, value)


@SETTINGS
@given(value=strings())
def test_search_query_accepted_exactly_as_declared(client: TestClient, value: str) -> None:
    accepted = host_accepts(schema_of("search", "query"), value)
    r = send(client, tool("search", {"query": value}, partition="agree-search"))
    _agree(r, accepted, value)


def test_lone_surrogates_are_refused_as_the_description_says(client: TestClient) -> None:
    assert "lone surrogate" in schema_of("remember", "text")["description"]
    body = b'{"text": "half \\ud800 a pair"}'
    envelope = tool("remember", {}, partition="agree-surrogate")
    raw = json.dumps(envelope).encode().replace(b'"arguments": {}', b'"arguments": ' + body)
    error = assert_error(send(client, raw), 400, "invalid_request")
    assert "not valid Unicode" in error["message"]
