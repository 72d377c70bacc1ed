"""What every ``semmem`` command shares: options, settings, the error exit, running the core."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from semmem.errors import SemmemError
from semmem.memory import Memory

T = TypeVar("T")


DataOpt = Annotated[
    str | None,
    typer.Option("--data", envvar="SEMMEM_DATA", show_default="semmem-data",
                 help="store: a directory or LanceDB URI"),
]
ModelOpt = Annotated[
    Path | None,
    typer.Option("--model", envvar="SEMMEM_MODEL",
                 help="model folder (pinned in a manifest); default: the one `semmem model "
                      "fetch` fills, models/all-MiniLM-L6-v2 in a checkout, else "
                      "~/.local/share/semmem/models/all-MiniLM-L6-v2"),
]
PartitionOpt = Annotated[str, typer.Option("--partition", "-p", help="partition key")]


def settings(data: str | None = None, model: Path | None = None, **extra: Any) -> Any:
    """The settings, with the command line's overrides."""
    from semmem.settings import Settings

    overrides: dict[str, Any] = {k: v for k, v in extra.items() if v is not None}
    if data is not None:
        overrides["data"] = data
    if model is not None:
        overrides["model"] = model
    return Settings(**overrides)


@contextmanager
def errors() -> Iterator[None]:
    """One clear line and a non-zero exit for every domain error."""
    try:
        yield
    except SemmemError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        raise typer.Exit(1) from None
    except (OSError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None


def run(data: str | None, model: Path | None, fn: Callable[[Memory], Awaitable[T]],
        check_model: bool = True) -> T:
    """Open the memory, run ``fn`` on it, close it; domain errors exit with one line."""
    from semmem.store.modes import owner_only
    from semmem.store.upkeep.scratch import private_temp
    from semmem.wiring import open_memory

    async def go() -> T:
        memory = await open_memory(chosen, check_model=check_model)
        try:
            return await fn(memory)
        finally:
            await memory.close()

    with errors():
        chosen = settings(data, model)
        # Files for their owner only; an index build's spill files: see store/upkeep/scratch.py
        with owner_only(chosen.data, default_dir=chosen.default_data), \
                private_temp(chosen.data):
            return asyncio.run(go())


def show(value: Any) -> None:
    """Print ``value`` as indented JSON."""
    typer.echo(json.dumps(value, ensure_ascii=False, indent=2))
