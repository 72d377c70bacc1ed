"""The format gate's steps (``semmem/stored/upgrade.py``): from format 1 on the store e601069
wrote (``tests/data/stores/e601069``): interrupted at each of its steps it completes on the
next open; two processes upgrading at once make each item once; a fact forgotten while it runs
stays forgotten; a fact that only looks like an item stays a fact; a store of a later format is
refused. From format 2 on the store 62c1cbc wrote (its namespaces listed in a partition):
interrupted at each step it completes on the next open; two processes at once both end with
every namespace listed and the partition gone (issue 54, item 7)."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.errors import Unavailable
from semmem.lifecycle.upgrading import upgrade
from semmem.memory import Memory
from semmem.store.formats import FIRST, FORMAT, KEY, format_of
from semmem.stored.items import StoreItems
from semmem.stored.upgrade import FORMER_LISTING
from tests.support.memory import open_memory
from tests.support.server import REPO

FIXTURE = REPO / "tests" / "data" / "stores" / "e601069"
WANT: dict[str, Any] = json.loads((FIXTURE / "expected.json").read_text())
NS = tuple(WANT["store"]["namespace"])
PART = WANT["partition"]


class Stop(Exception):
    """The process stops here (a crash, as far as the store is concerned)."""


@pytest.fixture
def db(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE / "store", tmp_path / "db")
    return tmp_path / "db"


async def opened_as_before(db: Path) -> Memory:
    """The store opened without the gate (as the release before it did)."""
    return await open_memory(db, HashingEmbedder())


async def assert_upgraded(memory: Memory) -> None:
    """Each of the release's items a store item once, in the application's store (format 4),
    none a fact, the format recorded."""
    assert format_of(await memory.store.meta()) == FORMAT
    items = await StoreItems(memory).ready()
    for key, item in WANT["store"]["items"].items():
        record = await items.get(NS, key)
        assert record is not None and record.value == item["value"], key
        assert len(record.numbers) == 1  # one piece: made once
    snap = await memory.store.snapshot(PART)
    assert [it.n for it in snap.items] == sorted(
        [*(int(n) for n in WANT["facts"]), WANT["expired"]])  # expired, not yet swept
    pieces = (await (await memory.application()).store.snapshot(PART)).items
    assert len(pieces) == len(WANT["store"]["items"])
    # the numbers the step from format 1 gave stay issued in the model's store, never reused
    assert snap.hwm == WANT["hwm"] + len(pieces)
    assert await items.registry.partitions(NS[:1]) == [PART]


@pytest.mark.parametrize("step", ["listed", "written"])
async def test_an_upgrade_stopped_at_a_step_completes_on_the_next_open(db: Path,
                                                                        step: str) -> None:
    memory = await opened_as_before(db)
    seen: list[str] = []

    async def crash(at: str, partition: str) -> None:
        seen.append(at)
        if at == step:
            raise Stop

    with pytest.raises(Stop):
        await upgrade(memory, hook=crash)
    assert seen[-1] == step
    assert format_of(await memory.store.meta()) == FIRST  # recorded only once all is done
    written = await StoreItems(memory, in_place=True).get(NS, "profile")
    assert (written is not None) == (step == "written")
    await memory.close()

    reopened = await Memory.open(str(db), HashingEmbedder())  # the gate finishes it
    try:
        await assert_upgraded(reopened)
    finally:
        await reopened.close()


async def test_two_processes_upgrading_at_once_make_each_item_once(db: Path) -> None:
    first, second = await opened_as_before(db), await opened_as_before(db)
    held, go = asyncio.Event(), asyncio.Event()

    async def hold(at: str, partition: str) -> None:
        if at == "listed":  # looked at the facts, about to write the items
            held.set()
            await go.wait()

    slow = asyncio.create_task(upgrade(first, hook=hold))
    await held.wait()
    assert await upgrade(second) == FORMAT  # the other process does it all meanwhile
    go.set()
    assert await slow == FORMAT  # and this one finds it done: it writes nothing
    try:
        await assert_upgraded(first)
        await assert_upgraded(second)
    finally:
        await first.close()
        await second.close()


async def test_a_fact_forgotten_while_the_upgrade_runs_stays_forgotten(db: Path) -> None:
    memory = await opened_as_before(db)
    profile = WANT["store"]["numbers"][0]

    async def forget_it(at: str, partition: str) -> None:
        if at == "listed":
            await memory.forget(PART, profile)

    try:
        await upgrade(memory, hook=forget_it)
        items = StoreItems(memory)
        assert await items.get(NS, "profile") is None
        assert await items.get(NS, "notes") is not None  # the positive control
        assert await memory.get(PART, profile) is None
    finally:
        await memory.close()


async def test_a_fact_that_only_looks_like_an_item_stays_a_fact(tmp_path: Path) -> None:
    memory = await opened_as_before(tmp_path / "db")
    texts = ['{"key": "a", "value": {}}', '{"key":"b","value":{},"extra":1}',
             '{"key":"c","value":[]}']
    for text in texts:
        await memory.remember("users/bob", text)
    await memory.remember("users/bob", '{"key":"d","value":{"x":1}}')  # the positive control
    await memory.store.set_meta({**(await memory.store.meta() or {}), KEY: FIRST})
    try:
        assert await upgrade(memory) == FORMAT
        left = [it.text for it in await memory.list("users/bob") if not it.application]
        assert left == texts
        record = await StoreItems(memory).get(("users", "bob"), "d")
        assert record is not None and record.value == {"x": 1}
    finally:
        await memory.close()


async def test_a_store_of_a_later_format_is_refused(db: Path) -> None:
    memory = await opened_as_before(db)
    await memory.store.set_meta({**(await memory.store.meta() or {}), KEY: FORMAT + 1})
    await memory.close()
    with pytest.raises(Unavailable, match="later release"):
        await Memory.open(str(db), HashingEmbedder())


async def test_a_new_store_is_made_in_this_format(tmp_path: Path) -> None:
    memory = await Memory.open(str(tmp_path / "db"), HashingEmbedder())
    try:
        assert (await memory.store.meta() or {}).get(KEY) == FORMAT
    finally:
        await memory.close()


# The step from format 2 on the store 62c1cbc wrote: its namespaces listed in the partition
# ``%store-namespaces``, no listing records.
LISTED = REPO / "tests" / "data" / "stores" / "62c1cbc"
LISTED_WANT: dict[str, Any] = json.loads((LISTED / "expected.json").read_text())
LISTED_PARTS = ["/".join(ns) for ns in LISTED_WANT["namespaces"]]


@pytest.fixture
def listed_db(tmp_path: Path) -> Path:
    shutil.copytree(LISTED / "store", tmp_path / "db")
    return tmp_path / "db"


async def assert_relisted(memory: Memory) -> None:
    """Every namespace listed by its record, the former listing partition gone, the format
    recorded."""
    assert format_of(await memory.store.meta()) == FORMAT
    assert FORMER_LISTING not in await memory.partitions()
    assert await (await StoreItems(memory).ready()).registry.partitions() == LISTED_PARTS
    app = await memory.application()  # the store items moved there (format 4)
    assert sorted(r["partition"] for r in (await app.store.records()).values()) \
        == sorted(LISTED_PARTS)
    assert await memory.store.records() == {}


@pytest.mark.parametrize("step", ["relisted", "deleted"])
async def test_a_relisting_stopped_at_a_step_completes_on_the_next_open(listed_db: Path,
                                                                         step: str) -> None:
    memory = await opened_as_before(listed_db)
    assert FORMER_LISTING in await memory.partitions()  # the positive control
    seen: list[str] = []

    async def crash(at: str, partition: str) -> None:
        seen.append(at)
        if at == step:
            raise Stop

    with pytest.raises(Stop):
        await upgrade(memory, hook=crash)
    assert seen == ["relisted", "deleted"][:seen.index(step) + 1]
    assert format_of(await memory.store.meta()) == 2  # only the steps before
    assert (FORMER_LISTING in await memory.partitions()) == (step == "relisted")
    await memory.close()

    reopened = await Memory.open(str(listed_db), HashingEmbedder())  # the gate finishes it
    try:
        await assert_relisted(reopened)
    finally:
        await reopened.close()


async def test_two_processes_relisting_at_once_both_end_relisted(listed_db: Path) -> None:
    first, second = await opened_as_before(listed_db), await opened_as_before(listed_db)
    held, go = asyncio.Event(), asyncio.Event()

    async def hold(at: str, partition: str) -> None:
        if at == "relisted":  # every record derived, the former listing about to go
            held.set()
            await go.wait()

    slow = asyncio.create_task(upgrade(first, hook=hold))
    await held.wait()
    assert await upgrade(second) == FORMAT  # the other process does it all meanwhile
    # the upgraded one's writes go on: a new namespace listed, one namespace's last item gone
    items = StoreItems(second)
    await items.put(("users", "zoe"), "profile", {"v": 1}, [], None)
    assert await items.delete(tuple(LISTED_WANT["store_ttl"]["namespace"]),
                              LISTED_WANT["store_ttl"]["key"])
    go.set()
    assert await slow == FORMAT  # and this one finds the partition gone
    try:
        want = sorted(["users/zoe", *LISTED_PARTS[1:]])
        for memory in (first, second):
            assert FORMER_LISTING not in await memory.partitions()
            assert await (await StoreItems(memory).ready()).registry.partitions() == want
    finally:
        await first.close()
        await second.close()


# The step from format 3 on the store 902e632 wrote: store items among the model's facts
# (keyed items of its tables), moved to the application's store (format 4, ``stored/apart.py``).
APART = REPO / "tests" / "data" / "stores" / "902e632"
APART_WANT: dict[str, Any] = json.loads((APART / "expected.json").read_text())


@pytest.fixture
def apart_db(tmp_path: Path) -> Path:
    shutil.copytree(APART / "store", tmp_path / "db")
    return tmp_path / "db"


async def assert_apart(memory: Memory) -> None:
    """Every item once in the application's store, none in the model's, the model's facts
    (the JSON-looking one too) where they were, the format recorded."""
    assert format_of(await memory.store.meta()) == FORMAT
    items = await StoreItems(memory).ready()
    ns = tuple(APART_WANT["store"]["namespace"])
    for key, item in APART_WANT["store"]["items"].items():
        record = await items.get(ns, key)
        assert record is not None and record.value == item["value"], key
        assert len(record.numbers) == 1
    ttl = APART_WANT["store_ttl"]
    record = await items.get(tuple(ttl["namespace"]), ttl["key"])
    assert record is not None and record.value == ttl["value"]
    assert await items.registry.partitions() == ["/".join(n) for n in APART_WANT["namespaces"]]
    part = APART_WANT["partition"]
    snap = await memory.store.snapshot(part)
    assert not any(it.application for it in snap.items)  # none left in the model's store
    fact = APART_WANT["json_fact"]
    kept = snap.get(fact["n"])
    assert kept is not None and kept.text == fact["text"]
    assert await memory.store.records() == {}  # no listing record: no store item here
    app = await memory.application()
    pieces = [len((await app.store.snapshot("/".join(n))).items)
              for n in APART_WANT["namespaces"]]
    assert pieces == [1, 2]  # one piece each: moved once


@pytest.mark.parametrize("step", ["moved", "forgotten"])
async def test_a_move_stopped_at_a_step_completes_on_the_next_open(apart_db: Path,
                                                                   step: str) -> None:
    memory = await opened_as_before(apart_db)
    assert any(it.application for it in  # the positive control: items among the facts
               (await memory.store.snapshot(APART_WANT["partition"])).items)

    async def crash(at: str, partition: str) -> None:
        if at == step:
            raise Stop

    with pytest.raises(Stop):
        await upgrade(memory, hook=crash)
    assert format_of(await memory.store.meta()) == 3  # recorded only once all is done
    await memory.close()
    reopened = await Memory.open(str(apart_db), HashingEmbedder())
    try:
        await assert_apart(reopened)
    finally:
        await reopened.close()


async def test_two_processes_moving_at_once_move_each_item_once(apart_db: Path) -> None:
    first, second = await opened_as_before(apart_db), await opened_as_before(apart_db)
    held, go = asyncio.Event(), asyncio.Event()

    async def hold(at: str, partition: str) -> None:
        if at == "moved" and not held.is_set():  # put, about to forget from the model's
            held.set()
            await go.wait()

    slow = asyncio.create_task(upgrade(first, hook=hold))
    await held.wait()
    assert await upgrade(second) == FORMAT
    go.set()
    assert await slow == FORMAT
    try:
        await assert_apart(first)
        await assert_apart(second)
    finally:
        await first.close()
        await second.close()
