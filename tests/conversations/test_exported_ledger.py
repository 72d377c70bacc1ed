"""An export carries what its store forgot (issue 60, "an import keeps the source's forgotten
messages forgotten"): ``semmem export`` of a partition ends with its ledgers and the digest
keys they are made under; an import into another store keeps both, so a whole-history re-send
into that store stores no message the source forgot — through the process that imported, a
replica that opened the store before the import, an export of the import onwards, and a
backup of it restored. The control: the same export without its ledger lines lets the re-send
store the forgotten message again."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from semmem.conversations.ingest import Conversations
from semmem.conversations.ledgers import DIGEST_KEYS, LEDGER_FIELD, is_ledger_line
from semmem.embedding.fakes import HashingEmbedder
from semmem.lifecycle.backup import create_backup
from semmem.lifecycle.backup_restore import restore_backup
from semmem.memory import Memory
from semmem.store.copies.objects import Objects
from semmem.store.tables import Store
from tests.support.chats import CHAT, S1, texts
from tests.support.memory import open_memory

Export = list[dict[str, Any]]


@pytest.fixture
async def forgot(memory: Memory) -> tuple[Export, list[list[int]]]:
    """The session ingested, its first message forgotten by the model and one piece of its
    last (of two) too; the partition's export and the session's numbers."""
    items = (await Conversations(memory).ingest("p", S1, CHAT))["items"]
    await memory.forget("p", items[0][0], owner=False)
    await memory.forget("p", items[3][0], owner=False)
    again = await Conversations(memory).ingest("p", S1, CHAT)
    assert again["items"] == [[], items[1], items[2], items[3][1:]]  # in the source: held
    return [r async for r in memory.export("p")], items


@pytest.fixture
async def other(tmp_path: Path, fake_embedder: HashingEmbedder,
                memory: Memory) -> AsyncIterator[Memory]:
    """A store of its own (its own secret)."""
    mem = await open_memory(tmp_path / "other", fake_embedder)
    assert mem.store.secret != memory.store.secret
    yield mem
    await mem.close()


async def test_the_export_ends_with_the_ledgers_and_their_keys(
        forgot: tuple[Export, list[list[int]]], memory: Memory) -> None:
    export, _ = forgot
    lines = [r for r in export if is_ledger_line(r)]
    assert export[-len(lines):] == lines and len(export) > len(lines)  # after the facts
    assert list(lines[0][DIGEST_KEYS].values()) == [memory.store.secret.hex()]
    assert len(lines) == 2 and len(lines[1]["forgotten"]) == 2  # one ledger, two messages
    assert CHAT[0].content not in json.dumps(lines)  # hashes, no text


async def test_an_import_keeps_what_the_source_forgot(
        forgot: tuple[Export, list[list[int]]], other: Memory, tmp_path: Path,
        fake_embedder: HashingEmbedder) -> None:
    export, items = forgot
    control = await open_memory(tmp_path / "control", fake_embedder)
    try:  # without the ledger lines the forgotten message comes back: what the lines prevent
        await control.import_("p", [r for r in export if not is_ledger_line(r)])
        assert CHAT[0].content not in await texts(control)
        back = await Conversations(control).ingest("p", S1, CHAT)
        assert back["items"][0] and CHAT[0].content in await texts(control)
    finally:
        await control.close()
    await other.import_("p", export)
    before = await texts(other)
    assert CHAT[1].content in before and CHAT[0].content not in before
    again = await Conversations(other).ingest("p", S1, CHAT)
    assert again["items"][:3] == [[], items[1], items[2]]
    assert await texts(other) == before  # nothing stored again, the long message included
    assert (await other.snapshot("p")).hwm == items[3][-1]


async def test_a_replica_opened_before_the_import_reads_its_ledgers(
        forgot: tuple[Export, list[list[int]]], other: Memory, tmp_path: Path,
        fake_embedder: HashingEmbedder) -> None:
    export, _ = forgot
    replica = await open_memory(tmp_path / "other", fake_embedder)
    try:
        # the replica has read the store's keys (none) before the import
        assert (await Conversations(replica).ingest("q", S1, CHAT[1:2]))["items"] == [[1]]
        assert replica.store.digest_keys_read and not replica.store.digest_keys
        await other.import_("p", export)
        before = await texts(other)
        again = await Conversations(replica).ingest("p", S1, CHAT)
        assert replica.store.digest_keys  # read again: the partition named a key it lacked
        assert again["items"][0] == [] and await texts(replica) == before
    finally:
        await replica.close()


async def test_ledgers_travel_on_through_an_export_of_the_import_and_a_backup(
        forgot: tuple[Export, list[list[int]]], other: Memory, tmp_path: Path,
        fake_embedder: HashingEmbedder) -> None:
    export, _ = forgot
    await other.import_("p", export)
    onward = [r async for r in other.export("p")]
    source_keys = next(r[DIGEST_KEYS] for r in export if DIGEST_KEYS in r)
    keys = next(r[DIGEST_KEYS] for r in onward if DIGEST_KEYS in r)
    assert source_keys.items() <= keys.items()  # the source's key goes on with its ledger
    third = await open_memory(tmp_path / "third", fake_embedder)
    try:
        await third.import_("p", onward)
        assert (await Conversations(third).ingest("p", S1, CHAT[:1]))["items"] == [[]]
    finally:
        await third.close()
    target = Objects(str(tmp_path / "backups"))
    manifest = await create_backup(other.store, target)
    assert manifest.digest_keys == source_keys  # the other store's key, beside its own secret
    fresh = Store(str(tmp_path / "restored"), dim=fake_embedder.dim,
                  model_id=fake_embedder.model_id)
    await fresh.open()
    await restore_backup(target, manifest.id, fresh, None)
    await fresh.close()
    restored = await open_memory(tmp_path / "restored", fake_embedder)
    try:
        assert CHAT[1].content in await texts(restored)  # the positive control
        assert (await Conversations(restored).ingest("p", S1, CHAT[:1]))["items"] == [[]]
        assert CHAT[0].content not in await texts(restored)
    finally:
        await restored.close()


def test_semmem_import_reads_ledger_lines_and_refuses_altered_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from semmem.cli.commands import app

    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    env = {"SEMMEM_DATA": str(tmp_path / "data")}
    secret = "ab" * 32
    from semmem.conversations.forgotten import key_id

    keys = {DIGEST_KEYS: {key_id(bytes.fromhex(secret)): secret}}
    good = {LEDGER_FIELD: "o:" + "c" * 64, "forgotten": ["d" * 32]}
    cases = {
        "ok": [{"text": "Lives in Rome"}, keys, good],
        "no keys": [{"text": "Lives in Rome"}, good],
        "a key that is not a key": [keys, {**good, LEDGER_FIELD: "o:' OR key != '"}],
        "a key id that is not the secret's": [{DIGEST_KEYS: {"00000000": secret}}, good],
        "a hash that is not one": [keys, {**good, "forgotten": ["Lives in Rome"]}],
    }
    for name, records in cases.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        result = runner.invoke(app, ["import", "-p", "alice", str(path)], env=env)
        if name == "ok":
            assert result.exit_code == 0, result.output
            exported = runner.invoke(app, ["export", "-p", "alice"], env=env).stdout
            assert [json.loads(x) for x in exported.splitlines()][-1] == good
        else:
            assert result.exit_code != 0, name
            assert "ledger" in result.output, (name, result.output)
            assert "Traceback" not in result.output
