"""Stores written by earlier releases (``tests/data/stores/<release>``, each made by that
release's own code) opened by today's: ``semmem check`` clean, the facts, numbers, update,
forget, expiries, retention override and backup as they were, the application's LangGraph
items back as store items (``POST /store`` on a real server), out of the model's reach, their
namespaces listed by listing records (the partition a release listed them in deleted, out of
every file), and its ingested sessions kept: listed, a re-send storing nothing new and
bringing back no forgotten piece (issue 54, item 7). Every folder there is opened: a fixture
added later is covered as it lands."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from semmem.cli.commands import app
from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from semmem.store.formats import FORMAT, format_of
from semmem.store.rows import table_name
from semmem.stored.upgrade import FORMER_LISTING
from tests.support.files import decoded_with
from tests.support.server import ADMIN, AUTH, JSON, REPO, ServerProcess, served
from tests.support.web import recall, result_of, send, tool

STORES = REPO / "tests" / "data" / "stores"
FIXTURES = sorted(p for p in STORES.iterdir() if (p / "expected.json").is_file())
TALKED = [p for p in FIXTURES if "conversation" in json.loads((p / "expected.json").read_text())]
RETENTION, DELAY = 1.0, 0.2
WINDOW = 5.0 + DELAY + RETENTION + 5.0 + DELAY  # the forget window with the fence's 5 s floor
runner = CliRunner()


@pytest.fixture(params=FIXTURES, ids=lambda p: p.name)
def old(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A copy of one release's store and backups (the fixture stays as it is), and what
    that release wrote."""
    folder: Path = request.param
    shutil.copytree(folder / "store", tmp_path / "db")
    shutil.copytree(folder / "backups", tmp_path / "backups")
    return tmp_path, json.loads((folder / "expected.json").read_text())


def store_ops(c: httpx.Client, *ops: dict[str, Any]) -> list[Any]:
    r = send(c, {"ops": list(ops)}, {**AUTH, **JSON}, path="/store")
    assert r.status_code == 200, r.text
    found: list[Any] = r.json()["results"]
    return found


def call(c: httpx.Client, partition: str, name: str, arguments: dict[str, Any]) -> Any:
    return result_of(send(c, tool(name, arguments, partition=partition)))


def test_the_previous_releases_store_reads_as_it_was_written(
        old: tuple[Path, dict[str, Any]]) -> None:
    base, want = old
    part = want["partition"]
    secret = want["forgotten"]["text"]
    # the positive controls: the release left the forgotten text, and its items as facts or
    # its namespaces listed in a partition of their own
    assert decoded_with(base / "db", secret)
    listing = base / "db" / f"{table_name(FORMER_LISTING)}.lance"
    if "json_fact" in want:  # store format 3: the store items' values in the model's tables
        former, where = "vegetarian", base / "db"
    elif "namespaces" in want:
        former, where = "/".join(want["namespaces"][0]), listing
    else:  # (a release without store items: the secret again)
        former, where = ('{"key":"profile"' if "store" in want else secret), base / "db"
    assert model_files(where, former)
    with served(base / "db", {"SEMMEM_TOOL_METADATA": "true",
                              "SEMMEM_VERSION_RETENTION_S": str(RETENTION)}) as server, \
            server.client() as c:
        if "store" in want:
            _items_back(c, want["store"])
        if "namespaces" in want:
            _listed_back(c, want)
            _purged(server, where, former)  # the former listing's names: out of every file
        _read_back(c, part, want)

    # check clean, the format recorded, the forgotten text and the release's item facts off
    # every file after maintenance
    checked = runner.invoke(app, ["check"], env={"SEMMEM_DATA": str(base / "db")})
    assert checked.exit_code == 0, checked.output
    assert all(r["ok"] for r in json.loads(checked.stdout))
    asyncio.run(_maintained(base / "db", [part, want["other"]]))
    assert decoded_with(base / "db", secret) == []
    assert model_files(where, former) == []


def model_files(where: Path, text: str) -> list[Path]:
    """The files under ``where`` holding ``text``, but the application's store's (format 4:
    ``<data>/application``, where the store items' values belong)."""
    return [p for p in decoded_with(where, text)
            if p.relative_to(where).parts[0] != "application"]


def _items_back(c: httpx.Client, stored: dict[str, Any]) -> None:
    """The application's items: get, search, list through ``POST /store``."""
    ns, items = stored["namespace"], stored["items"]
    got = store_ops(c, *({"op": "get", "namespace": ns, "key": key} for key in items),
                    {"op": "search", "prefix": ns[:1], "query": "vegetarian diet"},
                    {"op": "list", "conditions": [{"type": "prefix", "path": ns[:1]}]})
    for found, (key, item) in zip(got, items.items(), strict=False):
        assert found is not None, key
        assert (found["namespace"], found["key"], found["value"]) == (ns, key,
                                                                      item["value"])
    searched = got[len(items)]
    assert {f["key"] for f in searched} == set(items)
    scored = {f["key"] for f in searched if f["score"] is not None}
    assert scored == {k for k, item in items.items() if item["indexed"]}
    assert got[len(items) + 1] == [ns]


def _listed_back(c: httpx.Client, want: dict[str, Any]) -> None:
    """Every namespace listed (the listing records derived), the item with a TTL as it was,
    out of the model's reach; the release's listing partition is no partition any more."""
    ttl = want["store_ttl"]
    got = store_ops(c, {"op": "list"},
                    {"op": "get", "namespace": ttl["namespace"], "key": ttl["key"],
                     "refreshTtl": False},
                    {"op": "search", "prefix": ttl["namespace"][:1], "query": "glaze"})
    assert got[0] == want["namespaces"]
    assert (got[1]["value"], got[1]["expiresAt"]) == (ttl["value"], ttl["expiresAt"])
    assert [f["key"] for f in got[2]] == [ttl["key"]]
    part = "/".join(ttl["namespace"])
    hits = call(c, part, "search", {"query": "glaze firing Thursday", "limit": 50})["items"]
    assert hits == []
    names = c.get("/admin/partitions", params={"limit": 1000}, headers=ADMIN).json()
    assert part in names["partitions"]  # the positive control: the listing is read whole
    assert FORMER_LISTING not in names["partitions"]


def _purged(server: ServerProcess, where: Path, former: str) -> None:
    """Wait, within the forget window, until no file of ``where`` holds ``former``."""
    deadline = time.monotonic() + WINDOW + 30
    while model_files(where, former):
        assert server.proc is not None and server.proc.poll() is None, server.output()
        assert time.monotonic() < deadline, "the former listing's names are still on disk"
        time.sleep(0.5)


def _read_back(c: httpx.Client, part: str, want: dict[str, Any]) -> None:
    """The model's facts: numbers, texts, metadata, the update, the forget, the expiries,
    the override; the model sees none of the application's items; the next number."""
    listed = c.get("/admin/items", params={"partition": part, "limit": 100},
                   headers=ADMIN).json()["items"]
    facts = {str(f["n"]): f for f in listed if "keyed" not in f}
    assert {n: f["text"] for n, f in facts.items()} == model_facts(want)
    for n, metadata in want["metadata"].items():
        assert facts[n]["metadata"] == metadata
    assert facts[str(want["updated"])]["revision"] == 2
    assert facts[str(want["expires"]["n"])]["expiresAt"] == want["expires"]["at"]
    for n in (want["forgotten"]["n"], want["expired"]):
        gone = c.get("/admin/item", params={"partition": part, "n": n}, headers=ADMIN)
        assert gone.status_code == 404, gone.text
    others = c.get("/admin/items", params={"partition": want["other"]},
                   headers=ADMIN).json()["items"]
    assert {str(f["n"]): f["text"] for f in others} == want["other_facts"]
    shown = c.get("/admin/retention", headers=ADMIN).json()
    assert [o["partition"] for o in shown["overrides"]] == [want["retention"]["partition"]]
    policy = c.get("/admin/retention", params={"partition": want["retention"]["partition"]},
                   headers=ADMIN).json()
    assert policy["maxAgeS"] * 1000 == want["retention"]["maxAgeMs"]

    # the model sees its facts (the positive control) and none of the application's items
    json_text = want.get("json_fact", {}).get("text")
    recalled = result_of(send(c, recall("Alice vegetarian diet profile", partition=part)))
    assert "metric units" in recalled["text"]
    hits = call(c, part, "search", {"query": "metric units", "limit": 50})["items"]
    assert "Alice prefers metric units" in [h["text"] for h in hits]
    for text in ("vegetarian", "kiln", '"key"'):
        assert text not in recalled["text"]
        hits = call(c, part, "search", {"query": text, "limit": 50})["items"]
        assert all(text not in h["text"] for h in hits if h["text"] != json_text)
    # the release's item facts are gone; a fact that merely looks like one is the model's
    assert [f["text"] for f in listed if '"key":"' in f["text"]] == \
        ([json_text] if json_text else [])

    # a new fact takes the next number: none the release handed out
    stored = call(c, part, "remember", {"text": "Alice now lives in Nantes"})
    # one each of the release's item facts, none for its keyed items: the upgrade's numbers
    pieces = want.get("upgrade_numbers", len(want.get("store", {}).get("items", {})))
    assert stored["n"] == want["hwm"] + pieces + 1
    assert call(c, part, "remember", {"text": "Alice has a cello"})["n"] == stored["n"] + 1


def model_facts(want: dict[str, Any]) -> dict[str, str]:
    """The model's facts the release wrote, a JSON-looking one included (a fact still)."""
    extra = want.get("json_fact")
    return {**want["facts"], **({str(extra["n"]): extra["text"]} if extra else {})}


async def _maintained(path: Path, partitions: list[str]) -> None:
    memory = await Memory.open(str(path), HashingEmbedder(), version_retention=timedelta(0))
    try:
        assert format_of(await memory.store.meta()) == FORMAT
        for name in partitions:
            await memory.purge(name)
    finally:
        await memory.close()


def test_the_previous_releases_backup_restores_with_its_store_items(
        old: tuple[Path, dict[str, Any]]) -> None:
    base, want = old
    restored = base / "restored"
    done = runner.invoke(app, ["backup", "restore", want["backup"], "--at",
                               str(base / "backups"), "--into", str(restored)],
                         env={"SEMMEM_DATA": str(base / "db")})
    assert done.exit_code == 0, done.output
    asyncio.run(_restored(restored, want))


async def _restored(path: Path, want: dict[str, Any]) -> None:
    from semmem.stored.items import StoreItems

    memory = await Memory.open(str(path), HashingEmbedder())
    try:
        part = want["partition"]
        listed = await memory.list(part)
        facts = {str(it.n): it.text for it in listed}
        assert facts == model_facts(want)  # the release's store items are not among them
        assert await memory.get(part, want["forgotten"]["n"]) is None
        items = StoreItems(memory)
        stored = want.get("store", {"namespace": ["users"], "items": {}})
        ns = tuple(stored["namespace"])
        for key, item in stored["items"].items():
            record = await items.get(ns, key)
            assert record is not None and record.value == item["value"], key
        assert await items.registry.partitions(ns[:1]) == ([part] if stored["items"] else [])
        assert FORMER_LISTING not in await memory.partitions()
        if "namespaces" in want:
            assert await items.registry.partitions() == ["/".join(ns)
                                                         for ns in want["namespaces"]]
    finally:
        await memory.close()



def ingest(c: httpx.Client, partition: str, session: str, messages: list[dict[str, Any]],
           op: str) -> list[list[int]]:
    r = send(c, {"version": 1, "operationId": op, "partition": partition, "sessionId": session,
                 "messages": messages}, {**AUTH, **JSON}, path="/ingest")
    assert r.status_code == 200, r.text
    numbers: list[list[int]] = r.json()["items"]
    return numbers


def highest(c: httpx.Client, partition: str) -> int:
    found: int = c.get("/admin/stats", params={"partition": partition},
                       headers=ADMIN).json()["highest"]
    return found


@pytest.mark.parametrize("folder", TALKED, ids=lambda p: p.name)
def test_the_previous_releases_sessions_are_kept_and_a_resend_stores_nothing_new(
        folder: Path, tmp_path: Path) -> None:
    want = json.loads((folder / "expected.json").read_text())["conversation"]
    part, kept = want["partition"], "pottery-class"
    shutil.copytree(folder / "store", tmp_path / "db")
    with served(tmp_path / "db", {}) as server, server.client() as c:
        listed = c.get("/admin/sessions", params={"partition": part}, headers=ADMIN).json()
        assert sorted(s["sessionId"] for s in listed["sessions"]) == want["listed"]
        gone = c.get("/admin/session", params={"partition": part,
                                               "session": want["deleted"]["session"]},
                     headers=ADMIN)
        assert gone.status_code == 404, gone.text
        assert highest(c, part) == want["hwm"]
        again = ingest(c, part, kept, want["sessions"][kept], "upgraded:resend")
        assert again == want["numbers"][kept]  # the same numbers: nothing stored again
        assert highest(c, part) == want["hwm"]


@pytest.mark.parametrize("folder", TALKED, ids=lambda p: p.name)
def test_a_previous_releases_piece_forgotten_after_the_upgrade_stays_forgotten_on_a_resend(
        folder: Path, tmp_path: Path) -> None:
    """A piece stored by the earlier release (its digest in that release's form) and forgotten
    after the upgrade is named in its session's ledger: re-sending the session brings it back
    no more than it would a piece stored today. (A piece forgotten *before* the upgrade left
    only a tombstone, which keeps no field to know its message by: docs/operating.md.)"""
    want = json.loads((folder / "expected.json").read_text())["conversation"]
    part, session = want["partition"], "pottery-class"
    n = want["numbers"][session][0][0]
    shutil.copytree(folder / "store", tmp_path / "db")
    with served(tmp_path / "db", {}) as server, server.client() as c:
        opened = c.get("/admin/session", params={"partition": part, "session": session},
                       headers=ADMIN).json()["session"]
        first = want["sessions"][session][0]["content"]
        assert any(first in i["text"] for m in opened["messages"] for i in m["items"])
        forgot = send(c, tool("forget", {"n": n}, partition=part))
        assert forgot.status_code == 200, forgot.text
        again = ingest(c, part, session, want["sessions"][session], "upgraded:resend")
        assert again == [[], *want["numbers"][session][1:]], again
        assert highest(c, part) == want["hwm"]
        opened = c.get("/admin/session", params={"partition": part, "session": session},
                       headers=ADMIN).json()["session"]
        assert not any(first in i["text"] for m in opened["messages"] for i in m["items"])
