"""``semmem backup create|list|verify|restore|expire``: logical backups of a store.

None of them loads the model: a backup reads the stored vectors and a restore writes them
back, so each store is opened with the model its own metadata names.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from semmem.cli.options import DataOpt, errors, settings, show
from semmem.errors import InvalidInput
from semmem.store.identity import model_of

if TYPE_CHECKING:
    from semmem.settings import Settings
    from semmem.store.copies.objects import Objects
    from semmem.store.tables import Store

T = TypeVar("T")
backup_app = typer.Typer(help="Logical backups: create, list, verify, restore, expire.",
                         no_args_is_help=True)
AtOpt = Annotated[str, typer.Option("--at", help="backup target: a directory or s3://…")]


@dataclass
class _Model:
    model_id: str
    dim: int


def _target(chosen: Settings, uri: str) -> Objects:
    from semmem.store.copies.objects import Objects

    return Objects(uri, chosen.storage_options)


async def _open(chosen: Settings, uri: str, model: _Model | None = None) -> Store:
    """The store at ``uri``: an existing one with its own model (``model`` None), or a new
    one with ``model``."""
    from semmem.store.copies.dump import is_empty
    from semmem.wiring import make_store

    here = chosen.model_copy(update={"data": uri})
    if model is None:
        if await asyncio.to_thread(is_empty, uri, chosen.storage_options):
            raise InvalidInput(f"no store at {uri}")
        probe = make_store(here, _Model("", 1))
        await probe.open(check_model=False)
        meta = await probe.meta() or {}
        await probe.close()
        model = _Model(str(model_of(meta)), int(meta.get("dim") or 1))
    store = make_store(here, model)
    await store.open()
    return store


def _run(fn: Callable[[Settings], Coroutine[Any, Any, T]], data: str | None = None) -> T:
    with errors():
        chosen = settings(data)
        return asyncio.run(fn(chosen))


@backup_app.command("create")
def create(to: Annotated[str, typer.Option("--to", help="a directory or s3://…")],
           data: DataOpt = None) -> None:
    """Back the store up (online); the last line printed is the backup as JSON."""
    from semmem.lifecycle.backup import create_backup

    async def go(chosen: Settings) -> dict[str, Any]:
        store = await _open(chosen, chosen.data)
        try:
            manifest = await create_backup(store, _target(chosen, to),
                                           default_retention_ms=chosen.retention_ms)
        finally:
            await store.close()
        return manifest.summary()

    typer.echo(json.dumps(_run(go, data), ensure_ascii=False))


@backup_app.command("list")
def list_(at: AtOpt) -> None:
    """The complete backups at a target, oldest first."""
    from semmem.lifecycle.backup import list_backups

    async def go(chosen: Settings) -> list[dict[str, Any]]:
        found = await asyncio.to_thread(list_backups, _target(chosen, at))
        return [m.summary() for m in found]

    show(_run(go))


@backup_app.command("verify")
def verify(backup_id: Annotated[str, typer.Argument(metavar="ID")], at: AtOpt) -> None:
    """Read every object of a backup back and check its SHA-256; exits 1 on a problem."""
    from semmem.lifecycle.backup import verify_backup

    async def go(chosen: Settings) -> dict[str, Any]:
        report = await asyncio.to_thread(verify_backup, _target(chosen, at), backup_id)
        return report.as_dict()

    report = _run(go)
    show(report)
    if not report["ok"]:
        raise typer.Exit(1)


@backup_app.command("restore")
def restore(
    backup_id: Annotated[str, typer.Argument(metavar="ID")],
    at: AtOpt,
    into: Annotated[str, typer.Option("--into", help="a new, empty store")],
    ledger: Annotated[str | None, typer.Option(
        "--ledger", help="the live store: withhold what was forgotten, expired, replaced or "
        "deleted since the backup, and issue no number twice")] = None,
) -> None:
    """Restore a backup into a new store (no embedding); prints what it wrote and withheld."""
    from semmem.lifecycle.backup import load_manifest
    from semmem.lifecycle.backup_restore import check_format, restore_backup
    from semmem.store.copies.dump import is_empty

    async def go(chosen: Settings) -> dict[str, Any]:
        target = _target(chosen, at)
        manifest = await asyncio.to_thread(load_manifest, target, backup_id)
        check_format(manifest)  # before the new store is made
        if not await asyncio.to_thread(is_empty, into, chosen.storage_options):
            raise InvalidInput(f"{into} is not empty: a backup is restored into a new store")
        live = await _open(chosen, ledger) if ledger is not None else None
        store = await _open(chosen, into, _Model(manifest.model, manifest.dim))
        try:
            report = await restore_backup(target, backup_id, store, live,
                                            default_retention_ms=chosen.retention_ms)
        finally:
            await store.close()
            if live is not None:
                await live.close()
        return report.as_dict() | {"model": manifest.model}

    show(_run(go))


@backup_app.command("expire")
def expire(at: AtOpt, keep: Annotated[str, typer.Option(
        "--keep", help="keep backups younger than this: 45s, 30m, 12h, 90d")]) -> None:
    """Delete the backups older than --keep and the objects only they held."""
    from semmem.lifecycle.backup import expire_backups
    from semmem.lifecycle.backup_format import parse_duration

    async def go(chosen: Settings) -> dict[str, Any]:
        return await asyncio.to_thread(expire_backups, _target(chosen, at),
                                       parse_duration(keep))

    show(_run(go))
