"""``semmem maintain | check | reindex``: an owner's passes over the store, run now
(``semmem.lifecycle.passes``); ``commands`` registers them."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from semmem.cli.options import DataOpt, ModelOpt, run, show
from semmem.memory import Memory


def maintain(
    partition: Annotated[str | None, typer.Option("--partition", "-p")] = None,
    now: Annotated[bool, typer.Option(
        "--now", help="keep no old versions (only when no other process reads the store)"
    )] = False,
    data: DataOpt = None,
    model: ModelOpt = None,
) -> None:
    """Compact partitions, prune idempotency records and remove old versions (purges forgets);
    without --partition also the registry (purges deleted partitions' names)."""
    from datetime import timedelta

    async def go(m: Memory) -> list[dict[str, Any]]:
        reports = await m.maintain(partition, retention=timedelta(0) if now else None)
        return [{"partition": r.partition, "compacted": r.compacted, "ops_pruned": r.ops_pruned,
                 "versions_removed": r.versions_removed, "orphans_removed": r.orphans_removed}
                for r in reports]

    show(run(data, model, go))


def check(
    partition: Annotated[str | None, typer.Option("--partition", "-p")] = None,
    repair: Annotated[bool, typer.Option(
        "--repair", help="fix what is found (keeps every acknowledged, unforgotten text), "
        "then purge (a forget that won: its text leaves every file before this returns)")
    ] = False,
    data: DataOpt = None,
    model: ModelOpt = None,
) -> None:
    """Check partitions' invariants: one head, one row per key, the high-water mark above every
    number, tombstones without text, every referenced file present. Exits 1 if any is broken
    (after --repair: if any is still broken)."""
    async def go(m: Memory) -> list[dict[str, Any]]:
        names = [partition] if partition is not None else await m.owned_partitions()
        reports = []
        for name in names:
            found = await m.check(name, repair=repair)
            if found.repaired:
                # A forget that won leaves its text in the versions before the repair: purged
                # here (it waits out the version retention) and asked of the servers.
                if found.forgotten:
                    typer.echo(f"purging the texts whose forget won in {name!r} (about "
                               f"{m.version_retention.total_seconds():.0f} s)", err=True)
                    await m.purge(name)
                else:
                    await m.maintain(name)
                again = await m.check(name)
                found.problems = again.problems
            reports.append(found.as_dict() | {"ok": not found.problems})
        return reports

    reports = run(data, model, go, check_model=False)
    show(reports)
    if any(not r["ok"] for r in reports):
        raise typer.Exit(1)


def reindex(data: DataOpt = None, model: ModelOpt = None) -> None:
    """Re-embed every partition with the configured model (after changing models); prints
    how many partitions and items (facts and conversation pieces) it re-embedded, and the
    model the store now records."""
    from tqdm import tqdm

    async def go(m: Memory) -> dict[str, Any]:
        partitions = len(await m.store.partitions())
        with tqdm(unit="item", disable=None) as bar:

            def progress(done: int, total: int) -> None:
                bar.total = total
                bar.update(done - bar.n)

            items = await m.reindex(progress=progress)
        return {"partitions": partitions, "items": items, "model": m.embedder.model_id}

    show({"reindexed": run(data, model, go, check_model=False)})
