"""The owners' admin API: its own tokens, paged listings, JSONL export, partition deletion."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from semmem.memory import Memory
from semmem.protocol.jsonio import CHUNK, jsonl_line
from tests.support.server import ADMIN, AUTH
from tests.support.web import Client, app_client, assert_error, recall, remember, send


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    """An app holding partitions a (3 facts), b (1 fact) and c (1 fact)."""
    with app_client(tmp_path_factory.mktemp("admin") / "db") as c:
        for text in ("Ann speaks Greek", "Ann lives in Rome", "Ann runs marathons"):
            remember(c, "a", text)
        remember(c, "b", "Ben has a kayak")
        remember(c, "c", "Cat grows tomatoes")
        yield c


@pytest.mark.parametrize("route", ["/admin/partitions", "/admin/items?partition=a",
                                   "/admin/item?partition=a&n=1",
                                   "/admin/export?partition=a", "/admin/stats?partition=a",
                                   "/admin/similar?partition=a"])
def test_admin_provider_token_forbidden(client: Client, route: str) -> None:
    """A provider token cannot reach the admin API."""
    assert_error(client.get(route, headers=AUTH), 403, "forbidden")


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}])
def test_admin_without_admin_token_unauthorized(client: Client,
                                                headers: dict[str, str]) -> None:
    """No token or an unknown one: 401, checked before the parameters."""
    assert_error(client.get("/admin/items", headers=headers), 401, "unauthorized")
    assert_error(client.delete("/admin/partitions?partition=a", headers=headers), 401,
                 "unauthorized")


def test_admin_off_without_admin_tokens(tmp_path: Path) -> None:
    """With no admin tokens configured the admin API refuses everyone."""
    with app_client(tmp_path / "db", admin_tokens=None) as c:
        error = assert_error(c.get("/admin/partitions", headers=ADMIN), 401, "unauthorized")
    assert "SEMMEM_ADMIN_TOKENS" in error["message"]


def test_list_partitions_paged(client: Client) -> None:
    """Partitions come sorted, a page at a time, with the offset of the next page."""
    first = client.get("/admin/partitions", params={"limit": 2}, headers=ADMIN)
    assert first.json() == {"partitions": ["a", "b"], "total": 3, "next": 2}
    second = client.get("/admin/partitions", params={"offset": 2, "limit": 2}, headers=ADMIN)
    assert second.json() == {"partitions": ["c"], "total": 3, "next": None}


def test_list_items_paged(client: Client) -> None:
    """A partition's items in number order, paged, with record fields."""
    r = client.get("/admin/items", params={"partition": "a", "offset": 1, "limit": 1},
                   headers=ADMIN)
    body = r.json()
    assert r.status_code == 200
    assert body["count"] == 3 and body["next"] == 2
    [item] = body["items"]
    assert (item["n"], item["text"], item["revision"]) == (2, "Ann lives in Rome", 1)
    assert item["ts"].endswith("Z") and item["updated"].endswith("Z")


def test_get_one_item_by_number(client: Client) -> None:
    """One live item by number, as listed; a number not live in the partition is 404."""
    r = client.get("/admin/item", params={"partition": "a", "n": 2}, headers=ADMIN)
    listed = client.get("/admin/items", params={"partition": "a", "offset": 1, "limit": 1},
                        headers=ADMIN).json()["items"]
    assert r.status_code == 200 and r.json() == {"item": listed[0]}
    missing = assert_error(client.get("/admin/item", params={"partition": "a", "n": 9},
                                      headers=ADMIN), 404, "not_found")
    assert missing["details"] == {"n": 9}
    assert_error(client.get("/admin/item", params={"partition": "nobody", "n": 1},
                            headers=ADMIN), 404, "not_found")
    assert_error(client.get("/admin/item", params={"partition": "a", "n": 0}, headers=ADMIN),
                 400, "invalid_request")


def test_export_jsonl(client: Client) -> None:
    """Export streams one JSON record per line, in number order."""
    r = client.get("/admin/export", params={"partition": "a"}, headers=ADMIN)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/x-ndjson")
    records = [json.loads(line) for line in r.text.splitlines()]
    assert [rec["text"] for rec in records] == ["Ann speaks Greek", "Ann lives in Rome",
                                                "Ann runs marathons"]


def test_export_of_many_items_streams_in_chunks_the_lines_it_always_did(
        tmp_path: Path) -> None:
    """Past one chunk (``jsonio.CHUNK`` records), with store items in the application's store
    too: the stream is byte for byte the records ``Memory.export`` yields, a line each (the
    output before the export streamed in chunks), the model's items first."""
    with app_client(tmp_path / "db") as c:
        memory: Memory = c.app.state.runtime.require_memory()
        assert c.portal is not None
        many = CHUNK * 2 + 7
        report = c.portal.call(partial(memory.import_, "big", [
            {"text": f"fact {i}: line\u2028break and ü", "n": i + 1} for i in range(many)]))
        assert report.imported == many
        stored = c.post("/store", headers={**AUTH, "Content-Type": "application/json"},
                        json={"ops": [{"op": "put", "namespace": ["big"], "key": "k",
                                       "value": {"v": 1}, "index": ["a store item"]}]})
        assert stored.status_code == 200, stored.text

        async def before() -> str:
            return "".join([jsonl_line(rec) async for rec in memory.export("big")])

        expected = c.portal.call(before)
        r = c.get("/admin/export", params={"partition": "big"}, headers=ADMIN)
    assert r.status_code == 200
    assert r.content == expected.encode("utf-8")
    records = [json.loads(line) for line in r.content.decode().split("\n") if line]
    assert len(records) == many + 1 and records[-1].get("store")  # both stores, in order
    assert [rec["n"] for rec in records[:many]] == list(range(1, many + 1))


def test_stats_of_partition(client: Client) -> None:
    """Counters of one partition."""
    body = client.get("/admin/stats", params={"partition": "a"}, headers=ADMIN).json()
    assert (body["partition"], body["count"], body["highest"]) == ("a", 3, 3)


def test_admin_bad_parameters_invalid_request(client: Client) -> None:
    """Missing partition or an out-of-range page: 400 invalid_request envelope."""
    assert_error(client.get("/admin/items", headers=ADMIN), 400, "invalid_request")
    assert_error(client.get("/admin/partitions", params={"limit": 0}, headers=ADMIN), 400,
                 "invalid_request")


def test_delete_partition_removes_only_it(client: Client) -> None:
    """Deleting c empties c; a and b keep their facts; deleting again reports false."""
    r = client.delete("/admin/partitions", params={"partition": "c"}, headers=ADMIN)
    assert r.json() == {"deleted": True, "partition": "c"}
    assert send(client, recall(None, partition="c")).json()["text"] == ""
    assert send(client, recall(None, partition="b")).json()["text"] == "1. Ben has a kayak"
    again = client.delete("/admin/partitions", params={"partition": "c"}, headers=ADMIN)
    assert again.json() == {"deleted": False, "partition": "c"}
    names = client.get("/admin/partitions", headers=ADMIN).json()["partitions"]
    assert names == ["a", "b"]


def test_admin_edit_item_sets_record_fields(client: Client) -> None:
    """PATCH /admin/items sets note/status; recall renders the note and skips inactive items."""
    r = client.patch("/admin/items", params={"partition": "b", "n": 1}, headers=ADMIN,
                     json={"note": "bought 2023"})
    assert r.status_code == 200
    body = r.json()
    assert (body["status"], body["n"], body["item"]["note"]) == ("stored", 1, "bought 2023")
    assert send(client, recall(None, partition="b")).json()["text"] == (
        "1. Ben has a kayak — bought 2023")
    client.patch("/admin/items", params={"partition": "b", "n": 1}, headers=ADMIN,
                 json={"status": "inactive", "note": None})
    assert send(client, recall(None, partition="b")).json()["text"] == ""
    found = send(client, {**recall(None, partition="b"), "operation": "tool", "tool": "search",
                          "arguments": {"query": "kayak"}}).json()["result"]["items"][0]
    assert found["status"] == "inactive" and "note" not in found
    client.patch("/admin/items", params={"partition": "b", "n": 1}, headers=ADMIN,
                 json={"status": None, "text": "Ben has two kayaks"})
    assert send(client, recall(None, partition="b")).json()["text"] == "1. Ben has two kayaks"


@pytest.mark.parametrize(("params", "body", "status", "code"), [
    ({"partition": "b", "n": 1}, {"colour": "red"}, 422, "invalid_arguments"),
    ({"partition": "b", "n": 1}, {}, 422, "invalid_arguments"),
    ({"partition": "b", "n": 1}, {"note": "x" * 501}, 422, "invalid_arguments"),
    ({"partition": "b", "n": 1}, {"status": 5}, 422, "invalid_arguments"),
    ({"partition": "b", "n": 99}, {"note": "x"}, 404, "not_found"),
    ({"partition": "b", "n": 0}, {"note": "x"}, 400, "invalid_request"),
])
def test_admin_edit_item_refusals(client: Client, params: dict[str, object],
                                  body: dict[str, object], status: int, code: str) -> None:
    """Bad record edits are refused with the contract's envelope and change nothing."""
    before = client.get("/admin/items", params={"partition": "b"}, headers=ADMIN).json()
    r = client.patch("/admin/items", params=params, headers=ADMIN, json=body)
    assert_error(r, status, code)
    assert client.get("/admin/items", params={"partition": "b"}, headers=ADMIN).json() == before


def test_admin_edit_item_needs_admin_token(client: Client) -> None:
    """A provider token cannot edit items."""
    r = client.patch("/admin/items", params={"partition": "b", "n": 1}, headers=AUTH,
                     json={"note": "x"})
    assert_error(r, 403, "forbidden")


def test_admin_similar_groups_likely_restatements(client: Client) -> None:
    remember(client, "d", "Dan drinks green tea")
    remember(client, "d", "Dan owns a red bike")
    remember(client, "d", "Dan drinks green tea daily")
    r = client.get("/admin/similar?partition=d", headers=ADMIN)
    assert r.status_code == 200, r.text
    body = r.json()
    assert [[f["n"] for f in g["facts"]] for g in body["groups"]] == [[3, 1]]
    newest, older = body["groups"][0]["facts"]
    assert newest["text"] == "Dan drinks green tea daily" and newest["to"] == 1
    assert older["text"] == "Dan drinks green tea" and older["to"] == 3
    assert 0 < older["score"] == newest["score"] < 1  # each with its best match in the group
    assert body["threshold"] > 0
    assert client.get("/admin/similar?partition=d&threshold=0.99",
                      headers=ADMIN).json()["groups"] == []
    assert client.get("/admin/similar?partition=nothing-here",
                      headers=ADMIN).json()["groups"] == []
    assert_error(client.get("/admin/similar?partition=d&threshold=2", headers=ADMIN), 400,
                 "invalid_request")


def test_an_item_of_the_applications_store_by_number(client: Client) -> None:
    """``store=application`` reads and edits a store item's piece by its own number (the
    application's store numbers its pieces apart from the model's facts)."""
    put = {"ops": [{"op": "put", "namespace": ["a"], "key": "k", "value": {"v": 1},
                    "index": ["Ann's kayak club"]}]}
    n = send(client, put, path="/store").json()["results"][0]["items"][0]
    assert n == 1  # the model's fact 1 of partition a is another item
    model = client.get("/admin/item", params={"partition": "a", "n": n}, headers=ADMIN)
    assert model.json()["item"]["text"] == "Ann speaks Greek"
    theirs = client.get("/admin/item", params={"partition": "a", "n": n,
                                               "store": "application"}, headers=ADMIN)
    assert theirs.json()["item"]["text"] == "Ann's kayak club"
    edited = client.patch("/admin/items", params={"partition": "a", "n": n,
                                                  "store": "application"},
                          json={"expiresAt": "2099-01-01T00:00:00Z"}, headers=ADMIN)
    assert edited.status_code == 200, edited.text
    got = send(client, {"ops": [{"op": "get", "namespace": ["a"], "key": "k",
                                 "refreshTtl": False}]}, path="/store").json()["results"][0]
    assert got["expiresAt"].startswith("2099-01-01")
    other = client.get("/admin/item", params={"partition": "a", "n": 1, "store": "nope"},
                       headers=ADMIN)
    assert other.status_code == 400, other.text
