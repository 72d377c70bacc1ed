"""A copy keeps its format (issue 60, item 5): a backup of a store of a later format — made
here by rewriting a real backup's manifest with a later format recorded (its digest made
again, as a later release writes it) — is refused on restore like opening such a store, in one
line, and the store it was to go into is not made."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from semmem.cli.commands import app
from semmem.embedding.fakes import HashingEmbedder
from semmem.lifecycle.backup import create_backup, load_manifest
from semmem.store.copies.objects import Objects
from semmem.store.formats import FORMAT
from tests.support.memory import open_memory

runner = CliRunner()


def _backup_of_a_later_format(tmp_path: Path) -> tuple[str, str]:
    async def go() -> str:
        memory = await open_memory(tmp_path / "live", HashingEmbedder())
        try:
            await memory.remember("alice", "Prefers metric units")
            return (await create_backup(memory.store, Objects(str(tmp_path / "backups")))).id
        finally:
            await memory.close()

    backup = asyncio.run(go())
    target = Objects(str(tmp_path / "backups"))
    manifest = load_manifest(target, backup)
    assert manifest.store_format == FORMAT  # a backup records its store's format
    target.put(f"manifests/{backup}.json",
               replace(manifest, store_format=FORMAT + 1).to_bytes())
    assert load_manifest(target, backup).store_format == FORMAT + 1
    return backup, str(tmp_path / "backups")


def test_a_backup_of_a_later_format_is_refused_on_restore(tmp_path: Path) -> None:
    backup, at = _backup_of_a_later_format(tmp_path)
    into = tmp_path / "restored"
    result = runner.invoke(app, ["backup", "restore", backup, "--at", at, "--into", str(into)])
    assert result.exit_code == 1, result.stdout
    assert result.stderr == (
        f"error: backup {backup} is of a store of format {FORMAT + 1}, written by a later "
        f"release; this one reads format {FORMAT} and earlier: restore it with that "
        f"release\n")
    assert not into.exists()
    # verify still reads it: its objects are intact, only its format is not this release's
    verified = runner.invoke(app, ["backup", "verify", backup, "--at", at])
    assert verified.exit_code == 0 and json.loads(verified.stdout)["ok"] is True


async def test_restore_backup_refuses_it_before_writing_anything(tmp_path: Path) -> None:
    from semmem.errors import InvalidInput
    from semmem.lifecycle.backup_restore import restore_backup
    from semmem.store import Store

    backup, at = await asyncio.to_thread(_backup_of_a_later_format, tmp_path)
    emb = HashingEmbedder()
    into = Store(str(tmp_path / "into"), dim=emb.dim, model_id=emb.model_id)
    await into.open()
    try:
        with pytest.raises(InvalidInput, match=f"format {FORMAT + 1}, written by a later"):
            await restore_backup(Objects(at), backup, into)
        assert await into.partitions() == []
    finally:
        await into.close()
