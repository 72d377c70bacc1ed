"""Metadata and filters on every served surface, on a real ``semmem serve`` process: the
provider's tools (with ``SEMMEM_TOOL_METADATA``), MCP through the SDK's client, the admin API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from semmem.protocol.declaration import tools_declaration
from tests.support.mcp import http_client, ok
from tests.support.server import ADMIN, AUTH, JSON, TOKEN, ServerProcess, served
from tests.support.web import app_client, assert_error, send, tool

MCP_TOKEN = "dora-token-0000000"
TOKENS = f"{TOKEN},{MCP_TOKEN} partition=dora"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One real server with the tools' metadata turned on."""
    data = tmp_path_factory.mktemp("scoped") / "db"
    with served(data, {"SEMMEM_TOOL_METADATA": "1", "SEMMEM_TOKENS": TOKENS}) as process:
        yield process


class _Reply:
    """A provider tool's answer: its status, and the result (or error envelope) as ``json``."""

    def __init__(self, r: httpx.Response) -> None:
        self.status_code, self.text = r.status_code, r.text
        body = r.json()
        self._json = body.get("result", body) if r.status_code == 200 else body

    def json(self) -> Any:
        return self._json


def _tool(c: httpx.Client, partition: str, name: str, args: dict[str, Any]) -> _Reply:
    return _Reply(c.post("/memory", content=json.dumps(tool(name, args, partition=partition)),
                         headers={**AUTH, **JSON}))


def test_the_default_declaration_is_unchanged_and_the_setting_adds_three_properties() -> None:
    plain = tools_declaration()
    assert json.dumps(plain) == json.dumps(tools_declaration(metadata=False))
    on = {t["name"]: t for t in tools_declaration(metadata=True)}
    for t in plain:
        extra = set(on[t["name"]]["input"]["properties"]) - set(t["input"]["properties"])
        assert extra == {"remember": {"metadata"}, "update": {"metadata"},
                         "search": {"filter"}}.get(t["name"], set())
        assert on[t["name"]]["description"] == t["description"]


def test_a_default_server_refuses_metadata_and_filters(tmp_path: Path) -> None:
    with app_client(tmp_path / "db") as c:
        r = send(c, tool("remember", {"text": "Alice likes tea", "metadata": {"u": "a"}}))
        assert_error(r, 422, "invalid_arguments")
        r = send(c, tool("search", {"query": "tea", "filter": {"metadata": {"u": "a"}}}))
        assert_error(r, 422, "invalid_arguments")


def test_provider_tools_take_metadata_and_filter(server: ServerProcess) -> None:
    with server.client() as c:
        r = _tool(c, "prov", "remember", {"text": "Alice likes tea", "metadata": {"user": "alice"}})
        assert r.status_code == 200, r.text
        n = r.json()["n"]
        assert _tool(c, "prov", "remember", {"text": "Bob likes tea", "metadata": {
            "user": "bob"}}).status_code == 200
        r = _tool(c, "prov", "search", {"query": "tea", "filter": {"metadata": {"user": "alice"}}})
        assert r.status_code == 200, r.text
        body = r.json()
        assert [(e["n"], e["metadata"]) for e in body["items"]] == [(n, {"user": "alice"})]
        assert body["count"] == 1
        r = _tool(c, "prov", "update", {"n": n, "text": "Alice likes green tea",
                                        "metadata": {"user": "carol"}})
        assert r.status_code == 200, r.text
        r = _tool(c, "prov", "search", {"query": "tea", "filter": {"metadata": {"user": "carol"},
                                        "updated": {"gte": "2020-01-01T00:00:00Z"}}})
        assert [e["n"] for e in r.json()["items"]] == [n]
        r = _tool(c, "prov", "remember", {"text": "x", "metadata": {"user": {"nested": 1}}})
        assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_arguments"
        r = _tool(c, "prov", "search", {"query": "tea", "filter": {"partition": "other"}})
        assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_arguments"


async def test_mcp_tools_take_metadata_and_filter(server: ServerProcess) -> None:
    async with http_client(server.url + "/mcp", MCP_TOKEN) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert "metadata" in listed["remember"].input_schema["properties"]
        assert "filter" in listed["search"].input_schema["properties"]
        mine = ok(await client.call_tool("remember", {
            "text": "Dora sails on Sundays", "metadata": {"user": "dora", "pinned": True}}))
        found = ok(await client.call_tool("search", {
            "query": "sails", "filter": {"metadata": {"pinned": True}}}))
        assert [e["n"] for e in found["items"]] == [mine["n"]]
        none = ok(await client.call_tool("search", {
            "query": "sails", "filter": {"metadata": {"pinned": 1}}}))  # true is no number
        assert none["items"] == [] and none["count"] == 0


def test_admin_lists_edits_and_forgets_by_filter(server: ServerProcess) -> None:
    with server.client() as c:
        for i, user in enumerate(["eve", "eve", "frank"]):
            r = _tool(c, "adm", "remember", {"text": f"fact {i} of {user}",
                                             "metadata": {"user": user}})
            assert r.status_code == 200, r.text
        eve = json.dumps({"metadata": {"user": "eve"}})
        r = c.get("/admin/items", params={"partition": "adm", "filter": eve}, headers=ADMIN)
        assert r.status_code == 200, r.text
        assert [it["n"] for it in r.json()["items"]] == [1, 2] and r.json()["count"] == 2
        r = c.patch("/admin/items", params={"partition": "adm", "n": 3},
                    json={"metadata": {"user": "eve", "role": "x"}}, headers=ADMIN)
        assert r.status_code == 200 and r.json()["item"]["metadata"] == {"user": "eve",
                                                                         "role": "x"}
        for method, bad in (("DELETE", "{}"), ("GET", "[1"), ("GET", '{"metadata": [1]}')):
            r = c.request(method, "/admin/items", params={"partition": "adm", "filter": bad},
                          headers=ADMIN)
            assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request"
        r = c.delete("/admin/items", params={"partition": "adm", "filter": eve}, headers=ADMIN)
        assert r.status_code == 200, r.text
        assert r.json() == {"status": "stored", "forgotten": [1, 2, 3], "count": 3}
        r = c.get("/admin/items", params={"partition": "adm"}, headers=ADMIN)
        assert r.json()["count"] == 0
        r = _tool(c, "adm", "remember", {"text": "after the delete"})
        assert r.json()["n"] == 4  # numbers never reused
        exported = c.get("/admin/export", params={"partition": "adm"}, headers=ADMIN)
        assert "eve" not in exported.text


def test_admin_refuses_a_repeated_query_parameter(server: ServerProcess) -> None:
    """The fuzzer's case: ``offset=true&offset=0.0`` was answered 200 (the last value taken)."""
    with server.client() as c:
        r = c.get("/admin/items?offset=true&offset=0.0&partition=0", headers=ADMIN)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request"
        r = c.get("/admin/items?partition=a&partition=b", headers=ADMIN)
        assert r.status_code == 400
