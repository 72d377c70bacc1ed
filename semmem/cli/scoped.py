"""What the commands share for metadata and filters: ``--meta k=v`` and the range options,
and ``semmem forget-matching``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from semmem.cli.options import DataOpt, ModelOpt, PartitionOpt, errors, run, show
from semmem.items import filters
from semmem.items.filters import Filter

MetaOpt = Annotated[list[str] | None, typer.Option(
    "--meta", help="key=value (repeat for more); a value that reads as a JSON number or "
    "boolean is one, else a string (quote it in JSON for the string: k='\"3\"')")]
UpdatedAfterOpt = Annotated[str | None, typer.Option(
    "--updated-after", help="only facts last changed at or after this ISO 8601 time")]
UpdatedBeforeOpt = Annotated[str | None, typer.Option(
    "--updated-before", help="only facts last changed before this ISO 8601 time")]
CreatedAfterOpt = Annotated[str | None, typer.Option(
    "--created-after", help="only facts first saved (ts) at or after this ISO 8601 time")]
CreatedBeforeOpt = Annotated[str | None, typer.Option(
    "--created-before", help="only facts first saved (ts) before this ISO 8601 time")]


def metadata(pairs: list[str] | None) -> dict[str, Any] | None:
    """``--meta`` pairs as an object (``None`` when none were given).

    Raises:
        InvalidArguments: a pair without ``=``.
    """
    return filters.pairs(pairs, "--meta") if pairs else None


def filter_of(pairs: list[str] | None, updated_after: str | None = None,
              updated_before: str | None = None, created_after: str | None = None,
              created_before: str | None = None) -> Filter:
    """The filter the options ask for (empty when none was given)."""
    raw: dict[str, Any] = {"metadata": metadata(pairs)}
    for name, lo, hi in (("updated", updated_after, updated_before),
                         ("ts", created_after, created_before)):
        bounds = {k: v for k, v in (("gte", lo), ("lt", hi)) if v is not None}
        if bounds:
            raw[name] = bounds
    return Filter.parse(raw)


def forget_matching(
    partition: PartitionOpt, meta: MetaOpt = None, updated_after: UpdatedAfterOpt = None,
    updated_before: UpdatedBeforeOpt = None, created_after: CreatedAfterOpt = None,
    created_before: CreatedBeforeOpt = None, data: DataOpt = None, model: ModelOpt = None,
) -> None:
    """Forget every fact the filter covers (at least one option); their texts leave disk at
    the next maintenance (see `maintain`), their numbers are never reused."""
    with errors():
        flt = filter_of(meta, updated_after, updated_before, created_after, created_before)
    gone = run(data, model, lambda m: m.forget_matching(partition, flt))
    show({"status": "stored", "forgotten": gone, "count": len(gone)})
