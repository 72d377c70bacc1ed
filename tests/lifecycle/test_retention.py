"""Retention on a real store: what expired is absent from every read at once, under the
default, a partition's override or its own ``expiresAt``; age counts from the last write;
a policy change applies to stored facts, previewed first; numbers are never reused."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.errors import InvalidArguments, NotFound
from semmem.items import iso, now_ms, parse_iso
from semmem.lifecycle import policies
from semmem.lifecycle.retention import (
    Retention,
    expires_at,
    format_duration,
    is_live,
    parse_duration,
)
from semmem.lifecycle.sweep import sweep
from semmem.mcp import resources
from semmem.memory import Memory
from semmem.store import Store
from tests.support.memory import remember_expired

GONE = "in Paris until Friday with the blue umbrella"


async def _memory(root: Path, default_ms: int | None = None, threshold: int = 50_000) -> Memory:
    emb = HashingEmbedder()
    store = Store(str(root), dim=emb.dim, model_id=emb.model_id, index_threshold=threshold)
    await store.open()
    return Memory(store, emb, retention=Retention(store, default_ms))


def wait_for(condition: Callable[[], bool], limit: float = 10.0) -> None:
    """Until ``condition`` holds (fails after ``limit`` seconds)."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < limit, "condition never held"
        time.sleep(0.02)


async def _reads(m: Memory, partition: str = "p") -> dict[str, object]:
    """What every read path shows of the partition."""
    listed = await resources.list_page(m, partition, None)
    found = await m.search(partition, "Paris", 50)
    return {
        "recall": (await m.recall(partition, "Paris umbrella", 4096)).text,
        "recent": (await m.recall(partition, None, 4096)).text,
        "search": [(it["n"], it["text"]) for it in found["items"]],
        "search_count": found["count"],
        "list": [it.n for it in await m.list(partition)],
        "export": [r["text"] async for r in m.export(partition)],
        "count": (await m.stats(partition))["count"],
        "resources": [r.uri for r in listed.resources],
        "similar": [[near.item.n for near in g.members] for g in await m.similar(partition, 0.1)],
    }


def test_durations_parse_and_print() -> None:
    assert [parse_duration(v) for v in ("45s", "30m", "12h", "90d")] == [
        45_000, 1_800_000, 43_200_000, 7_776_000_000]
    assert [format_duration(v) for v in (45_000, 1_800_000, 7_776_000_000, None)] == [
        "45s", "30m", "90d", "never"]
    for bad in ("", "0s", "5w", "1.5h", "-3d", "forever"):
        with pytest.raises(InvalidArguments):
            parse_duration(bad)


@pytest.mark.parametrize("indexed", [False, True], ids=["small", "indexed"])
async def test_an_expired_fact_is_absent_from_every_read_at_once(
        tmp_path: Path, indexed: bool) -> None:
    """A fact whose own expiresAt passed is left out by recall (relevant and recent), search
    (items and count), listing, export, counts, MCP resources and similar groups, below and
    past the index threshold; the same reads showed it just before (the positive control)."""
    m = await _memory(tmp_path / "db", threshold=20 if indexed else 50_000)
    if indexed:
        await m.import_("p", [{"text": f"filler fact {i} about thing{i}"} for i in range(25)])
        assert await m.store.maintain("p") is not None
    await m.remember("p", "in Paris until Friday with the red umbrella")
    ends = now_ms() + 1500
    n = (await m.remember("p", GONE, expires_at=iso(ends)))["n"]
    before = await _reads(m)
    assert GONE in str(before["recall"]) and GONE in str(before["recent"])
    assert (n, GONE) in before["search"] and GONE in before["export"]  # type: ignore[operator]
    assert n in before["list"] and f"semmem://items/{n}" in before["resources"]  # type: ignore[operator]
    assert any(n in g for g in before["similar"])  # type: ignore[attr-defined]
    counted = before["count"]
    wait_for(lambda: now_ms() > ends)
    after = await _reads(m)
    assert GONE not in str(after["recall"]) and GONE not in str(after["recent"])
    assert all(n != k for k, _ in after["search"])  # type: ignore[attr-defined]
    assert GONE not in after["export"] and n not in after["list"]  # type: ignore[operator]
    assert after["count"] == after["search_count"] == counted - 1  # type: ignore[operator]
    assert f"semmem://items/{n}" not in after["resources"]  # type: ignore[operator]
    assert not any(n in g for g in after["similar"])  # type: ignore[attr-defined]
    with pytest.raises(NotFound):
        await resources.read(m, "p", f"semmem://items/{n}")
    assert await m.get("p", n) is None
    await m.close()


async def test_age_counts_from_the_last_write_never_from_recall(tmp_path: Path) -> None:
    """Under a 2 s default, recalls keep nothing alive; an update restarts the clock."""
    m = await _memory(tmp_path / "db", default_ms=2000)
    kept = (await m.remember("p", "the plant needs water on Mondays"))["n"]
    lone = (await m.remember("p", "the cat sleeps on the sofa"))["n"]
    written = (await m.get("p", lone)).updated  # type: ignore[union-attr]
    while now_ms() < written + 1200:
        assert "sofa" in (await m.recall("p", "where does the cat sleep", 4096)).text
    await m.update("p", kept, "the plant needs water on Mondays and Thursdays")
    wait_for(lambda: now_ms() > written + 2000)
    assert [it.n for it in await m.list("p")] == [kept]
    await m.close()


async def test_a_never_policy_keeps_facts_but_not_past_their_own_expiry(tmp_path: Path) -> None:
    """A partition set to never overrides a 1 s default, and a fact's own expiresAt inside it
    still ends that fact."""
    m = await _memory(tmp_path / "db", default_ms=1000)
    policy = await policies.set_policy(m, "p", "never")
    assert (policy["default"], policy["override"], policy["effective"]) == ("1s", "never", "never")
    await m.remember("p", "a lasting fact")
    ends = now_ms() + 1500
    brief = (await m.remember("p", "a fact for a moment", expires_at=iso(ends)))["n"]
    await m.remember("q", "a fact under the default")
    wait_for(lambda: now_ms() > ends)
    assert [it.text for it in await m.list("p")] == ["a lasting fact"]
    assert await m.list("q") == []  # the default applies where nothing overrides it
    assert brief not in [it.n for it in await m.list("p")]
    await m.close()


async def test_a_policy_change_applies_to_stored_facts_previewed_first(tmp_path: Path) -> None:
    """Preview counts what a policy would expire now and changes nothing; set then forgets
    exactly those (numbers never reused); inherit brings back the default."""
    m = await _memory(tmp_path / "db")
    for i in range(3):
        await m.remember("p", f"old fact number {i}")
    old_at = max(it.updated for it in await m.list("p"))
    wait_for(lambda: now_ms() >= old_at + 1100)
    fresh = (await m.remember("p", "a fresh fact"))["n"]
    seen = await policies.preview(m, "1s", "p")
    assert seen["expire"] == 3 and seen["partitions"] == [{"partition": "p", "count": 4,
                                                           "expire": 3}]
    assert len(await m.list("p")) == 4  # a preview changes nothing
    assert (await policies.preview(m, "1s"))["expire"] == 3  # as the default: p inherits
    done = await policies.set_policy(m, "p", "1s")
    assert done["expired"] == [1, 2, 3] and done["effective"] == "1s"
    assert [it.n for it in await m.list("p")] == [fresh]
    stats = await m.stats("p")
    assert stats["forgotten"] == 3 and stats["highest"] == 4
    again = await policies.set_policy(m, "p", "inherit")
    assert again["override"] == "inherit" and again["effective"] == "never"
    assert (await m.remember("p", "one more"))["n"] == 5  # numbers are never reused
    shown = await policies.show(m)
    assert shown == {"default": "never", "overrides": []}
    await m.close()


async def test_a_longer_policy_never_brings_back_what_had_expired(tmp_path: Path) -> None:
    """Facts hidden under the old policy are forgotten before the new one applies."""
    m = await _memory(tmp_path / "db")
    n = await remember_expired(m, "p", GONE)
    assert await m.list("p") == []
    assert (await policies.set_policy(m, "p", "90d"))["expired"] == [n]
    assert await m.list("p") == [] and (await m.stats("p"))["forgotten"] == 1
    await m.close()


async def test_writes_treat_an_expired_fact_as_gone(tmp_path: Path) -> None:
    """Remembering an expired fact's text stores a new, visible fact (not ``existing``), and
    its count leaves the expired one out; an update of it is not found (it would bring it
    back); the sweep forgets it."""
    m = await _memory(tmp_path / "db")
    await m.remember("p", "a fact that stays")
    ends = now_ms() + 300
    n = (await m.remember("p", GONE, expires_at=iso(ends)))["n"]
    assert is_live(await m.get("p", n), None)
    wait_for(lambda: now_ms() > ends)
    assert not is_live((await m.store.snapshot("p")).get(n), None)  # stored, and expired
    again = await m.remember("p", GONE)
    assert again["n"] == n + 1 and "existing" not in again and again["count"] == 2
    with pytest.raises(NotFound):
        await m.update("p", n, "brought back")
    with pytest.raises(NotFound):
        await m.update("p", n, attrs={"expiresAt": None})
    assert await sweep(m) == {"p": [n]}
    assert await sweep(m) == {}
    assert [it.n for it in await m.list("p")] == [1, n + 1]
    await m.close()


async def test_expires_at_is_checked_and_editable(tmp_path: Path) -> None:
    """expiresAt is stored as ISO 8601 UTC, exported, editable by the owner and clearable;
    a value that is not a timestamp is refused."""
    m = await _memory(tmp_path / "db")
    n = (await m.remember("p", "trip to Lisbon", expires_at="2999-01-02T03:04:05+01:00"))["n"]
    item = await m.get("p", n)
    assert item is not None and item.attrs["expiresAt"] == "2999-01-02T02:04:05.000Z"
    assert expires_at(item, None) == parse_iso("2999-01-02T02:04:05Z")
    assert expires_at(item, 1000) == item.updated + 1000  # the earlier of the two
    assert [r.get("expiresAt") async for r in m.export("p")] == ["2999-01-02T02:04:05.000Z"]
    with pytest.raises(InvalidArguments):
        await m.remember("p", "bad", expires_at="next friday")
    await m.update("p", n, attrs={"expiresAt": None})
    assert "expiresAt" not in (await m.get("p", n)).attrs  # type: ignore[union-attr]
    await m.close()


async def test_every_process_reads_the_same_override(tmp_path: Path) -> None:
    """The override lives in the store's registry: another process's memory reads it (within
    its refresh), and deleting the partition removes it."""
    a = await _memory(tmp_path / "db")
    b = await _memory(tmp_path / "db")
    b.retention.refresh_s = 0.0
    await a.remember("p", "a fact")
    await policies.set_policy(a, "p", "12h")
    assert (await b.retention.policy("p")).public()["effective"] == "12h"
    assert (await policies.show(b))["overrides"] == [{"partition": "p", "override": "12h"}]
    await a.delete_partition("p")
    assert (await b.retention.policy("p")).inherits
    await a.close()
    await b.close()


async def test_an_import_is_no_duplicate_of_an_expired_fact(tmp_path: Path) -> None:
    """An imported text equal to an expired fact's is stored (a live one is skipped)."""
    m = await _memory(tmp_path / "db")
    await m.remember("p", "a live fact")
    n = await remember_expired(m, "p", GONE)
    report = await m.import_("p", [{"text": GONE}, {"text": "a live fact"}])
    assert (report.imported, report.duplicates) == (1, 1)
    assert [it.text for it in await m.list("p")] == ["a live fact", GONE]
    assert [it.n for it in await m.list("p")][1] > n
    await m.close()



async def test_a_new_fact_whose_expiry_has_passed_is_refused(tmp_path: Path) -> None:
    """remember with a past expiresAt would store a fact already hidden (count 0, kept until
    a sweep): refused on every surface (they all call this core), nothing written."""
    m = await _memory(tmp_path / "db")
    with pytest.raises(InvalidArguments, match=r"expiresAt .* has passed"):
        await m.remember("p", GONE, expires_at=iso(now_ms() - 1000))
    assert await m.partitions() == []  # no table made for it
    assert (await m.remember("p", GONE, expires_at=iso(now_ms() + 60_000)))["count"] == 1
    await m.close()


@pytest.mark.parametrize("how", ["own-expiry", "policy"])
async def test_an_expired_fact_is_never_a_write_hint(tmp_path: Path, how: str) -> None:
    """A fact that expired is in no write's ``similar`` list, from a process that holds the
    partition's view (a server) or not (the CLI: hints from the table's nearest rows)."""
    root = tmp_path / "db"
    default = 1000 if how == "policy" else None
    m = await _memory(root, default)
    if how == "own-expiry":
        n = await remember_expired(m, "p", "Ann keeps her bike in the red garage")
    else:
        n = (await m.remember("p", "Ann keeps her bike in the red garage"))["n"]
        written = time.monotonic()
        wait_for(lambda: time.monotonic() - written > 1.1)
    await m.close()
    control = await _memory(root, None)  # the positive control: the same fact, live, is hinted
    near = await control.remember("q", "Ann keeps her bike in the red garage")
    hint = await control.remember("q", "Ann keeps her bike in the red garage now")
    assert [h["n"] for h in hint["similar"]] == [near["n"]]
    await control.close()
    for warm in (False, True):  # a fresh process, then one whose view is cached
        m = await _memory(root, default)
        if warm:
            await m.recall("p", None, 100)
        done = await m.remember("p", f"Ann keeps her bike in the red garage {warm}")
        assert n not in [h["n"] for h in done.get("similar", [])], done
        await m.close()


async def test_a_longer_default_after_a_restart_never_brings_back_what_had_expired(
        tmp_path: Path) -> None:
    """A server swept under a 2 s default; a fact expired under it; the restart with a longer
    default (before any sweep) still hides it, its start-up sweep forgets it, and only then
    does the longer default apply (before: the fact was back in every read)."""
    root = tmp_path / "db"
    m = await _memory(root, 2000)
    assert await sweep(m) == {}  # a start-up sweep: the 2 s default is the one applied
    n = (await m.remember("p", GONE))["n"]
    written = time.monotonic()
    assert [it.n for it in await m.list("p")] == [n]  # live for now
    wait_for(lambda: time.monotonic() - written > 2.1)
    assert await m.list("p") == []
    await m.close()
    m = await _memory(root, 3_600_000)  # restarted with an hour
    assert await m.list("p") == [] and (await m.search("p", GONE))["items"] == []
    assert (await m.recall("p", GONE, 1000)).text == ""
    assert (await policies.show(m, "p"))["effective"] == "2s"  # until a sweep applied it
    assert await sweep(m) == {"p": [n]}
    later = (await m.remember("p", "a later fact"))["n"]
    written = time.monotonic()
    assert (await policies.show(m, "p"))["effective"] == "1h"
    wait_for(lambda: time.monotonic() - written > 2.1)
    assert [it.n for it in await m.list("p")] == [later]  # the hour applies now
    await m.close()
