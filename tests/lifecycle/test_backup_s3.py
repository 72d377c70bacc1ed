"""The backup commands against object storage: a store, a target and a restore on S3 (moto's
server on loopback; nothing leaves the machine)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator

import pytest
from typer.testing import CliRunner

from semmem.cli.commands import app
from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from semmem.store import Store
from tests.support.moto import client, moto_s3, options

BUCKET = "semmem-backups"
SECRET = "forgotten after the backup: pin 8812"
runner = CliRunner()


@pytest.fixture(scope="module")
def s3() -> Iterator[tuple[dict[str, str], object]]:
    """moto on loopback with one bucket: the storage options, and a boto3 client."""
    with moto_s3(BUCKET) as endpoint:
        yield options(endpoint), client(endpoint)


def _on(uri: str, options: dict[str, str], work: Callable[[Memory], Awaitable[object]]
        ) -> object:
    async def go() -> object:
        emb = HashingEmbedder()
        store = Store(uri, dim=emb.dim, model_id=emb.model_id, storage_options=options)
        await store.open()
        memory = Memory(store, emb)
        try:
            return await work(memory)
        finally:
            await memory.close()

    return asyncio.run(go())


def _cli(options: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["backup", *args],
                           env={"SEMMEM_STORAGE_OPTIONS": json.dumps(options)})
    return result.exit_code, result.stdout, result.stderr


def _holding(client: object, prefix: str, needle: str) -> list[str]:
    pages = client.get_paginator("list_objects_v2").paginate(  # type: ignore[attr-defined]
        Bucket=BUCKET, Prefix=prefix)
    keys = [o["Key"] for page in pages for o in page.get("Contents", [])]
    return [k for k in keys if needle.encode() in client.get_object(  # type: ignore[attr-defined]
        Bucket=BUCKET, Key=k)["Body"].read()]


@pytest.mark.timeout(240)
def test_backup_commands_on_s3(s3: tuple[dict[str, str], object]) -> None:
    options, client = s3
    live, target = f"s3://{BUCKET}/live", f"s3://{BUCKET}/backups"

    async def facts(m: Memory) -> None:
        for name in ("a", "b"):
            await m.remember(name, f"fact of {name}")
        await m.remember("a", SECRET)

    _on(live, options, facts)
    code, out, err = _cli(options, "create", "--to", target, "--data", live)
    assert code == 0, err
    first = json.loads(out.splitlines()[-1])
    _on(live, options, lambda m: m.forget("a", 2))
    code, out, err = _cli(options, "create", "--to", target, "--data", live)
    second = json.loads(out.splitlines()[-1])
    assert code == 0 and (second["copied"], second["partitions"]) == (1, 2)  # b referenced
    code, out, _ = _cli(options, "list", "--at", target)
    assert [b["id"] for b in json.loads(out)] == [first["id"], second["id"]]
    code, out, _ = _cli(options, "verify", first["id"], "--at", target)
    assert code == 0 and json.loads(out)["ok"] is True
    assert _holding(client, "backups/", SECRET)  # the first backup holds it (the bound)
    into = f"s3://{BUCKET}/restored"
    code, out, err = _cli(options, "restore", first["id"], "--at", target, "--into", into,
                          "--ledger", live)
    assert code == 0, err
    assert json.loads(out)["withheld"]["forgottenOrExpiredSince"] == {"a": [2]}
    code, _, err = _cli(options, "restore", first["id"], "--at", target, "--into", into)
    assert code == 1 and "is not empty" in err
    items = _on(into, options, lambda m: m.list("a"))
    assert [(it.n, it.text) for it in items] == [(1, "fact of a")]  # type: ignore[attr-defined]
    assert _holding(client, "restored/", "fact of a") and not _holding(client, "restored/",
                                                                       SECRET)
    code, out, _ = _cli(options, "expire", "--at", target, "--keep", "0s")
    assert code == 0 and json.loads(out)["kept"] == []
    assert not _holding(client, "backups/", SECRET)
