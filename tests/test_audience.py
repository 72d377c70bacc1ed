"""``semmem.audience`` at every door, on real ``semmem serve`` processes: the application's
store items never reach the model (MCP resources, counts, number look-ups), a read-only
caller never writes, and the model's facts and the application's items do not share a quota
(issue 54, "Who may see an item")."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from semmem.audience import Audience, Caller, audience_of, counted
from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from tests.support.mcp import http_client
from tests.support.server import (
    AUTH,
    JSON,
    READER,
    TOKEN,
    WRITER,
    ServerProcess,
    served_with_tokens_file,
)
from tests.support.web import assert_error, send, tool

SECRET = {"ssn": "078-05-1120"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One real server with provider, partition-bound reader and writer tokens."""
    with served_with_tokens_file(tmp_path_factory.mktemp("audience")) as process:
        yield process


@pytest.fixture
def c(server: ServerProcess) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


def store(c: httpx.Client, *ops: dict[str, Any], token: str = TOKEN) -> list[Any]:
    """A ``POST /store`` batch's results (200 asserted)."""
    r = send(c, {"ops": list(ops)}, {"Authorization": f"Bearer {token}", **JSON},
             path="/store")
    assert r.status_code == 200, r.text
    found: list[Any] = r.json()["results"]
    return found


def put(ns: list[str], key: str, value: Any, **extra: Any) -> dict[str, Any]:
    return {"op": "put", "namespace": ns, "key": key, "value": value, **extra}


def get(ns: list[str], key: str, **extra: Any) -> dict[str, Any]:
    return {"op": "get", "namespace": ns, "key": key, **extra}


def call(c: httpx.Client, partition: str, name: str, args: dict[str, Any]) -> httpx.Response:
    """A model's tool call through the provider endpoint."""
    return send(c, tool(name, args, partition=partition), {**AUTH, **JSON})


def test_audience_of_pieces_and_facts() -> None:
    assert audience_of({}) is Audience.MODEL
    assert audience_of({"keyed": {"space": "session", "key": "s"}}) is Audience.MODEL
    assert audience_of({"keyed": {"space": "store", "key": "k"}}) is Audience.APPLICATION
    assert audience_of({"keyed": {"space": "store-ns", "key": "k"}}) is Audience.SYSTEM
    assert [counted(c, 10, 3) for c in Caller] == [7, 3, 10]


async def test_mcp_resources_never_serve_store_items(server: ServerProcess,
                                                     c: httpx.Client) -> None:
    """A bound token's MCP host lists and reads the model's facts, never the application's
    store value put in the same partition (it used to read back ``{"ssn": …}``): the value is
    in the application's own store, whose numbers are not the model's."""
    stored = store(c, put(["bound"], "profile", SECRET), token=WRITER)
    pieces = stored[0]["items"]
    # Positive control: the application gets its value back.
    assert store(c, get(["bound"], "profile"), token=WRITER)[0]["value"] == SECRET
    fact = call(c, "bound", "remember", {"text": "Bound prefers green tea."}).json()
    async with http_client(server.url + "/mcp", WRITER) as client:
        listed = await client.list_resources()
        uris = {r.uri for r in listed.resources}
        assert f"semmem://items/{fact['result']['n']}" in uris  # the model's fact is listed
        for uri in uris:
            read = await client.read_resource(uri)
            assert SECRET["ssn"] not in getattr(read.contents[0], "text", "")
        read = await client.read_resource(f"semmem://items/{fact['result']['n']}")
        assert "green tea" in getattr(read.contents[0], "text", "")
        unused = max(pieces) + 1_000
        with pytest.raises(MCPError) as refused:
            await client.read_resource(f"semmem://items/{unused}")
        assert refused.value.error.message == f"item {unused} does not exist in this memory"


def test_model_counts_leave_store_items_out(c: httpx.Client) -> None:
    """``remember``, ``update``, ``forget`` and ``search`` answer the count of the model's
    items only, beside an application's item of two pieces."""
    numbers = store(c, put(["counted"], "k", {"note": "x"},
                           index=["The application's first text", "its second text"]))[0]
    assert len(numbers["items"]) == 2
    r = call(c, "counted", "remember", {"text": "Counted likes oat milk."})
    assert r.status_code == 200, r.text
    assert r.json()["result"]["count"] == 1
    n = r.json()["result"]["n"]
    r = call(c, "counted", "remember", {"text": "Counted walks to work."})
    assert r.json()["result"]["count"] == 2
    r = call(c, "counted", "update", {"n": n, "text": "Counted likes soy milk."})
    assert r.json()["result"]["count"] == 2
    found = call(c, "counted", "search", {"query": "first text"})
    assert found.status_code == 200, found.text
    assert found.json()["result"]["count"] == 2
    assert all("application" not in it["text"] for it in found.json()["result"]["items"])
    assert call(c, "counted", "forget", {"n": n}).json()["result"]["count"] == 1


def test_store_numbers_answer_the_model_as_unused_ones(c: httpx.Client) -> None:
    """``forget``/``update`` of a store piece's number answer as a number never given (404,
    the same wording), not 403 "owner-curated": the model cannot enumerate them."""
    numbers = store(c, put(["numbered"], "k", {"note": "x"},
                           index=["The application's first text", "its second text"]))[0]
    unused = 10_000
    for n in [*numbers["items"], unused]:
        for name, args in (("forget", {"n": n}), ("update", {"n": n, "text": "Changed."})):
            error = assert_error(call(c, "numbered", name, args), 404, "not_found")
            assert error["message"] == f"item {n} does not exist in this memory", error
            assert error.get("details") == {"n": n}
    # The application still holds its item (the refusals changed nothing).
    assert store(c, get(["numbered"], "k"))[0]["value"] == {"note": "x"}


def test_read_only_get_with_refresh_does_not_write(c: httpx.Client) -> None:
    """A bound ``access=read`` token's ``get(refreshTtl=true)`` answers the value and leaves
    its expiry where it was; a writer's refresh moves it (the control)."""
    store(c, put(["bound"], "ttl", {"v": 1}, ttl=60), token=WRITER)
    before = store(c, get(["bound"], "ttl"), token=WRITER)[0]["expiresAt"]
    assert before is not None
    read = store(c, get(["bound"], "ttl", refreshTtl=True), token=READER)[0]
    assert read["value"] == {"v": 1}
    assert store(c, get(["bound"], "ttl"), token=WRITER)[0]["expiresAt"] == before
    store(c, get(["bound"], "ttl", refreshTtl=True), token=WRITER)
    assert store(c, get(["bound"], "ttl"), token=WRITER)[0]["expiresAt"] != before


def test_model_and_application_do_not_share_a_quota(tmp_path: Path) -> None:
    """With ``SEMMEM_PARTITION_MAX_ITEMS=3``, three facts fill the model's quota but not the
    application's, and three store pieces fill the application's but not the model's."""
    from tests.support.server import served  # a server with its own limit

    with served(tmp_path / "db", {"SEMMEM_PARTITION_MAX_ITEMS": "3"}) as process, \
            process.client() as client:
        for i in range(3):
            r = call(client, "full", "remember", {"text": f"Fact number {i} about tea."})
            assert r.status_code == 200, r.text
        assert_error(call(client, "full", "remember", {"text": "One fact too many."}),
                     403, "quota_exceeded")
        assert store(client, put(["full"], "a", {"v": 1}))[0]["items"]
        assert store(client, put(["full"], "b", {"v": 2}, index=["b one", "b two"]))[0]
        r = send(client, {"ops": [put(["full"], "c", {"v": 3})]},
                 {**AUTH, **JSON}, path="/store")
        assert_error(r, 403, "quota_exceeded")
        # the model's quota is its own: forgetting a fact makes room for one more fact
        assert call(client, "full", "forget", {"n": 1}).status_code == 200
        assert call(client, "full", "remember", {"text": "Room again."}).status_code == 200


async def test_owner_listings_show_application_items_never_system_records(
        memory: Memory) -> None:
    """The owner's export (CLI, admin API) shows the model's and the application's items (the
    application's from its own store: an import puts them back there), the owner's listings by
    number the model's store, and none of them a system record (the namespace registry's)."""
    await memory.import_("p", [
        {"text": "A fact of the model's."},
        {"text": "An application's piece.", "keyed": {"space": "store", "key": "a"}},
        {"text": "A registry entry.", "keyed": {"space": "store-ns", "key": "users"}},
    ])
    shown = ["A fact of the model's.", "An application's piece."]
    assert [it.text for it in await memory.list("p")] == shown[:1]
    assert [it.text for it in await (await memory.application()).list("p")] == shown[1:]
    assert [record["text"] async for record in memory.export("p")] == shown
    assert [it.text for it in (await memory.snapshot("p")).items][1] == "A registry entry."


async def test_the_console_shows_application_items_never_system_records(
        tmp_path: Path) -> None:
    """The owner console's partition page and item page follow the owner's rule (by number:
    the model's store; the application's items are in their own)."""
    from tests.support.memory import open_memory
    from tests.web.test_console import console_client, sign_in, wait_ready

    memory = await open_memory(tmp_path / "db", HashingEmbedder())
    await memory.import_("p", [
        {"text": "A fact of the model's."},
        {"text": "An application's piece.", "keyed": {"space": "store", "key": "a"}},
        {"text": "A registry entry.", "keyed": {"space": "store-ns", "key": "users"}},
    ])
    await memory.close()
    with console_client(tmp_path / "db") as client:
        wait_ready(client)
        sign_in(client)
        page = client.get("/console/partition?p=p").text
        assert re.findall(r'id="item-(\d+)"', page) == ["1"]
        assert "A fact of the model" in page and "A registry entry." not in page
        assert "A fact of the model" in client.get("/console/item?p=p&n=1").text
        assert "A registry entry." not in client.get("/console/item?p=p&n=2").text
