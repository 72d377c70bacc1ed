"""A token's scope (``scope.<key>=<value>`` in the tokens configuration) on a real ``semmem
serve``: recall, search, writes and edits through the provider endpoint and MCP reach only the
facts whose metadata it covers, whatever the model's arguments say."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.mcp import error, http_client, ok, text
from tests.support.server import ADMIN, TOKEN, ServerProcess, served
from tests.support.web import recall, result_of, send_as, tool

SUPPORT = "support-token-000000"  # a provider token scoped to agent=support
MCP_SUPPORT = "support-mcp-token-00"  # bound to partition "zoe", same scope
TOKENS = (f"{TOKEN},{SUPPORT} scope.agent=support,"
          f"{MCP_SUPPORT} partition=zoe scope.agent=support")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One real server with a plain, a scoped and a scoped MCP token."""
    data = tmp_path_factory.mktemp("token-scope") / "db"
    with served(data, {"SEMMEM_TOOL_METADATA": "1", "SEMMEM_TOKENS": TOKENS,
                       "SEMMEM_MCP": "1"}) as process:
        yield process


def _seed(c: httpx.Client, partition: str) -> None:
    """Facts of another agent and of none, written with the plain token."""
    for text_, meta in (("Likes green tea in the morning", {"agent": "sales"}),
                        ("Likes black tea with milk", None)):
        args: dict[str, Any] = {"text": text_, **({"metadata": meta} if meta else {})}
        result_of(send_as(c, TOKEN, tool("remember", args, partition=partition)))


def test_a_scoped_token_recalls_searches_and_edits_only_its_scope(server: ServerProcess
                                                                   ) -> None:
    with server.client() as c:
        _seed(c, "ann")
        # positive control: the plain token sees both seeded facts
        everything = result_of(send_as(c, TOKEN, recall("tea", partition="ann")))
        assert [s["id"] for s in everything["sources"]] != [] and "1. " in everything["text"] \
            and "2. " in everything["text"]
        # a scoped write is stamped with the scope; the same text outside it is no duplicate
        mine = result_of(send_as(c, SUPPORT, tool(
            "remember", {"text": "Likes green tea in the morning"}, partition="ann")))
        assert mine["n"] == 3 and "existing" not in mine
        assert "similar" not in mine  # the other agent's restatement is not shown
        item = c.get("/admin/item", params={"partition": "ann", "n": 3}, headers=ADMIN).json()
        assert item["item"]["metadata"] == {"agent": "support"}
        for query in ("tea", None, ""):
            got = result_of(send_as(c, SUPPORT, recall(query, partition="ann")))
            assert [s["id"] for s in got["sources"]] == ["3"], query
        found = result_of(send_as(c, SUPPORT, tool("search", {"query": "tea"}, partition="ann")))
        assert [e["n"] for e in found["items"]] == [3] and found["count"] == 1
        # the model's filter narrows within the scope, never out of it
        r = send_as(c, SUPPORT, tool("search", {"query": "tea", "filter": {
            "metadata": {"agent": "sales"}}}, partition="ann"))
        assert r.status_code == 422 and "scope" in r.json()["error"]["message"]
        r = send_as(c, SUPPORT, tool("remember", {"text": "Sells tea", "metadata": {
            "agent": "sales"}}, partition="ann"))
        assert r.status_code == 422
        # facts outside the scope cannot be edited (as if they did not exist)
        for name, args in (("update", {"n": 1, "text": "Hates tea"}), ("forget", {"n": 2})):
            r = send_as(c, SUPPORT, tool(name, args, partition="ann"))
            refused = r.json()["error"]
            assert r.status_code == 404 and refused["code"] == "not_found", name
            # not "expired": the fact exists, outside the scope, which must not show
            assert f"item {args['n']} does not exist" in refused["message"], refused
            assert "expired" not in refused["message"] and refused["details"] == {"n": args["n"]}
        # an update keeps the fact in scope, even when the model gives other metadata
        result_of(send_as(c, SUPPORT, tool("update", {"n": 3, "text": "Likes oolong", "metadata": {
            "mood": "calm"}}, partition="ann")))
        item = c.get("/admin/item", params={"partition": "ann", "n": 3}, headers=ADMIN).json()
        assert item["item"]["metadata"] == {"agent": "support", "mood": "calm"}
        forgot = send_as(c, SUPPORT, tool("forget", {"n": 3}, partition="ann"))
        assert result_of(forgot)["forgotten"]
        texts = [i["text"] for i in c.get("/admin/items", params={"partition": "ann"},
                                          headers=ADMIN).json()["items"]]
        assert texts == ["Likes green tea in the morning", "Likes black tea with milk"]


async def test_a_scoped_mcp_binding_sees_only_its_scope(server: ServerProcess) -> None:
    with server.client() as c:
        _seed(c, "zoe")
    async with http_client(server.url + "/mcp", MCP_SUPPORT) as client:
        stored = ok(await client.call_tool("remember", {"text": "Drinks tea at noon"}))
        got = ok(await client.call_tool("recall", {"text": "tea"}))
        assert [s["id"] for s in got["sources"]] == [str(stored["n"])]
        found = ok(await client.call_tool("search", {"query": "tea"}))
        assert [e["n"] for e in found["items"]] == [stored["n"]] and found["count"] == 1
        assert error(await client.call_tool("forget", {"n": 1}), "not_found")
        listed = (await client.list_resources()).resources
        assert [str(r.uri) for r in listed] == [f"semmem://items/{stored['n']}"]
        with pytest.raises(Exception, match="does not exist"):
            await client.read_resource("semmem://items/1")  # type: ignore[arg-type]
        prompt = await client.get_prompt("memory-context", {"text": "tea"})
        assert "Drinks tea at noon" in text(prompt) and "Likes" not in text(prompt)
