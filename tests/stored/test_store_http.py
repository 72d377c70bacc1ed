"""``POST /store`` on a real ``semmem serve`` process (fake embedder): a batch of puts, gets,
searches and listings; a 64 KB value; the tokens of ``/ingest`` (read-only ones cannot write,
bound ones reach their partition only, scoped ones are refused); refusals in the envelope; a
put's expiry surviving a kill right after its answer (issue 46 item 4)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.items import now_ms, parse_iso
from semmem.lifecycle.retention import is_live
from semmem.memory import Memory
from tests.support.server import (
    ADMIN,
    JSON,
    READER,
    SCOPED,
    TOKEN,
    WRITER,
    ServerProcess,
    served_with_tokens_file,
)
from tests.support.web import assert_error, send, tool


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One real server with provider, bound and scoped tokens."""
    with served_with_tokens_file(tmp_path_factory.mktemp("store")) as process:
        yield process


@pytest.fixture
def c(server: ServerProcess) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


def store(c: httpx.Client, *ops: dict[str, Any], token: str = TOKEN) -> httpx.Response:
    return send(c, {"ops": list(ops)}, {"Authorization": f"Bearer {token}", **JSON},
                path="/store")


def results(r: httpx.Response) -> list[Any]:
    assert r.status_code == 200, r.text
    found: list[Any] = r.json()["results"]
    return found


def put(ns: list[str], key: str, value: Any, **extra: Any) -> dict[str, Any]:
    return {"op": "put", "namespace": ns, "key": key, "value": value, **extra}


def get(ns: list[str], key: str) -> dict[str, Any]:
    return {"op": "get", "namespace": ns, "key": key}


def test_a_batch_puts_gets_searches_and_lists_in_order(c: httpx.Client) -> None:
    big = {"doc": "x" * 64 * 1024}
    results(store(c, put(["users", "ann"], "profile", {"name": "Ann", "age": 40},
                         index=["Ann likes hiking in the Alps"]),
                  put(["users", "ann"], "blob", big)))
    out = results(store(c, get(["users", "ann"], "profile"), get(["users", "ann"], "blob"),
                        {"op": "search", "prefix": ["users"], "query": "hiking in the Alps",
                         "filter": {"age": {"$gt": 30}}},
                        {"op": "list", "conditions": [{"type": "prefix", "path": ["users"]}]},
                        get(["users", "ann"], "missing")))
    assert out[0]["value"] == {"name": "Ann", "age": 40} and out[0]["namespace"] == [
        "users", "ann"]
    assert out[1]["value"] == big and out[1]["expiresAt"] is None
    assert [(f["key"], f["score"] is not None) for f in out[2]] == [("profile", True)]
    assert out[3] == [["users", "ann"]] and out[4] is None
    # deleted through the forget path: gone from get and from the listing
    out = results(store(c, put(["users", "ann"], "profile", None),
                        put(["users", "ann"], "blob", None)))
    assert out[0]["forgotten"] and out[1]["forgotten"]
    out = results(store(c, get(["users", "ann"], "profile"), {"op": "list"}))
    assert out[0] is None and ["users", "ann"] not in out[1]


def test_the_namespace_listing_is_no_partition_of_the_admin_api(c: httpx.Client) -> None:
    """Issue 54, 2: the listing is a system record: never among the owner's partitions, and
    no delete of a partition reaches it."""
    results(store(c, put(["team", "zed"], "profile", {"v": 1})))
    names = c.get("/admin/partitions", params={"limit": 1000}, headers=ADMIN).json()
    assert "team/zed" in names["partitions"]  # positive control: the listing is read whole
    assert not [p for p in names["partitions"] if p.startswith("%")]
    gone = c.delete("/admin/partitions", params={"partition": "%store-namespaces"},
                    headers=ADMIN)
    assert gone.status_code == 200 and gone.json()["deleted"] is False
    listed = results(store(c, {"op": "list", "conditions": [
        {"type": "prefix", "path": ["team"]}]}))
    assert listed == [[["team", "zed"]]]


def test_a_partition_quota_bounds_no_count_of_namespaces(tmp_path: Path) -> None:
    """``SEMMEM_PARTITION_MAX_ITEMS=20``: 21 users' first puts land and are listed (the
    listing is no partition a quota counts); the quota still holds in a namespace."""
    process = ServerProcess(tmp_path / "db", env={"SEMMEM_PARTITION_MAX_ITEMS": "20"})
    process.start().wait_ready()
    try:
        with process.client() as client:
            for i in range(21):
                results(store(client, put(["users", f"u{i:02d}"], "profile", {"i": i})))
            assert results(store(client, {"op": "list", "limit": 100}))[0] == [
                ["users", f"u{i:02d}"] for i in range(21)]
            full = store(client, *[put(["users", "u00"], f"k{i}", {"i": i}) for i in range(20)])
            assert_error(full, 403, "quota_exceeded")  # positive control: quotas still hold
    finally:
        process.stop()


def test_store_items_are_out_of_the_models_reach_over_http(c: httpx.Client) -> None:
    results(store(c, put(["carol"], "profile", {"diet": "vegan"},
                         index=["Carol is vegan"])))
    forged = send(c, tool("remember", {"text": '{"key":"profile","value":{"diet":"meat"}}'},
                          partition="carol"))
    assert forged.status_code == 200, forged.text
    assert results(store(c, get(["carol"], "profile")))[0]["value"] == {"diet": "vegan"}
    found = send(c, tool("search", {"query": "Carol is vegan"}, partition="carol"))
    assert found.status_code == 200, found.text
    texts = [e["text"] for e in found.json()["result"]["items"]]
    assert texts and "Carol is vegan" not in texts  # it sees the forged fact, not the piece


def test_tokens_bound_read_only_and_scoped(c: httpx.Client) -> None:
    assert_error(store(c, put(["bound"], "k", {"v": 1}), token=READER), 403, "forbidden")
    assert results(store(c, put(["bound"], "k", {"v": 1}), token=WRITER)) == [
        {"items": [1]}]
    assert results(store(c, get(["bound"], "k"), token=READER))[0]["value"] == {"v": 1}
    assert_error(store(c, get(["other"], "k"), token=WRITER), 403, "forbidden")
    assert_error(store(c, get(["bound"], "k"), token=SCOPED), 403, "forbidden")
    assert_error(store(c, get(["bound"], "k"), token="wrong"), 401, "unauthorized")


def test_refusals_are_the_contracts_envelope(c: httpx.Client) -> None:
    assert_error(store(c, {"op": "search", "filter": {"a": {"$in": [1]}}}), 422,
                 "invalid_arguments")
    assert_error(store(c, put(["u"], "k", {"v": "x" * 300_000})), 422, "invalid_arguments")
    assert_error(store(c, {"op": "drop"}), 422, "invalid_arguments")
    assert_error(send(c, {"nope": 1}, {"Authorization": f"Bearer {TOKEN}", **JSON},
                      path="/store"), 400, "invalid_request")


def test_a_put_killed_right_after_its_answer_still_expires(tmp_path: Path) -> None:
    """The expiry comes with the put (one write): a server killed right after the answer holds
    the item with the instant its TTL set, which the rule every read applies ends it at. The
    instant is asserted, not waited for: a TTL of an hour outlasts any restart."""
    ttl_ms = 60 * 60_000
    process = ServerProcess(tmp_path / "db").start().wait_ready()
    try:
        with process.client() as client:
            before = now_ms()
            results(store(client, put(["dave"], "note", {"v": 1}, ttl=ttl_ms / 60_000)))
            after = now_ms()
        process.kill9()  # no second call a crash could cut off: the expiry came with the put
        process.start().wait_ready()
        with process.client() as client:
            held = results(store(client, {**get(["dave"], "note"), "refreshTtl": False}))[0]
    finally:
        process.stop()
    assert held is not None and held["expiresAt"] is not None
    at = parse_iso(held["expiresAt"])
    assert before + ttl_ms <= at <= after + ttl_ms
    asyncio.run(_ends_at(tmp_path / "db", "dave", at))


async def _ends_at(data: Path, partition: str, at: int) -> None:
    """Every piece of ``partition`` is live until ``at`` and expired from it on (retention's
    rule, as every read applies it)."""
    opened = await Memory.open(str(data), HashingEmbedder())
    memory = await opened.application()  # the store items' own store
    try:
        max_age = await memory.retention.max_age(partition)
        pieces = await memory.every_item(partition)
        assert pieces  # the positive control
        assert all(is_live(p, max_age, at - 1) and not is_live(p, max_age, at) for p in pieces)
    finally:
        await opened.close()
