"""Hostile partition keys: each is just a partition, seeing only its own facts."""

from __future__ import annotations

import pytest

from tests.support.server import ADMIN
from tests.support.web import Client, assert_error, host, recall, remember, send, tool

__all__ = ["host"]  # the fixture, imported to run every test here in-process and over HTTP

HOSTILE = [
    "x' OR '1'='1",
    "x",
    "X",
    "x ",
    "../",
    "../../etc/passwd",
    "a/b",
    "%2e%2e%2f",
    "\\",
    "_semmem",
    "p_" + "0" * 40,
    "key = 'head'",
    "日本語のパーティション",
    "emoji 🚀",
    "nul\x00byte",
    "ocmem_v1_" + "z" * 1000,
]


@pytest.fixture(scope="module")
def seeded(host: Client) -> Client:
    """Every hostile partition holds one secret naming its own index."""
    for i, name in enumerate(HOSTILE):
        assert remember(host, name, f"secret{i} belongs here")["n"] == 1
    return host


@pytest.mark.parametrize("i", range(len(HOSTILE)))
def test_recall_hostile_partition_sees_only_its_own(seeded: Client, i: int) -> None:
    """Recall and search in each hostile partition return exactly its one secret."""
    name = HOSTILE[i]
    body = send(seeded, recall(None, partition=name)).json()
    assert body["text"] == f"1. secret{i} belongs here"
    result = send(seeded, tool("search", {"query": "secret belongs", "limit": 50},
                               partition=name)).json()["result"]
    assert [item["text"] for item in result["items"]] == [f"secret{i} belongs here"]
    assert result["count"] == 1


def test_forget_in_hostile_partition_touches_no_other(seeded: Client) -> None:
    """Forgetting item 1 of ``x' OR '1'='1`` leaves every other partition's item 1 alone."""
    assert send(seeded, tool("forget", {"n": 1}, partition=HOSTILE[0])).status_code == 200
    assert send(seeded, recall(None, partition=HOSTILE[0])).json()["text"] == ""
    for i, name in enumerate(HOSTILE[1:], start=1):
        assert send(seeded, recall(None, partition=name)).json()["text"] == \
            f"1. secret{i} belongs here"
    remember(seeded, HOSTILE[0], "secret0 belongs here")  # restore for the other tests


def test_admin_lists_hostile_partitions_exactly(seeded: Client) -> None:
    """The admin API names each partition by its exact string."""
    names: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = seeded.get("/admin/partitions", params={"offset": offset, "limit": 5},
                          headers=ADMIN).json()
        names += page["partitions"]
        offset = page["next"]
    assert set(HOSTILE) <= set(names)
    for i, name in enumerate(HOSTILE):
        items = seeded.get("/admin/items", params={"partition": name}, headers=ADMIN).json()
        assert [it["text"] for it in items["items"]] == [f"secret{i} belongs here"]


def test_empty_partition_refused(seeded: Client) -> None:
    """The empty string is not a partition key."""
    assert_error(send(seeded, recall(None, partition="")), 400, "invalid_request")
