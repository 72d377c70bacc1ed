"""``semmem retention``: the owner's retention policy (show, preview, set) and the sweep."""

from __future__ import annotations

from typing import Annotated

import typer

from semmem.cli.options import DataOpt, ModelOpt, PartitionOpt, run, show

retention_app = typer.Typer(
    help="How long facts live: the default (SEMMEM_RETENTION), per-partition overrides.",
    no_args_is_help=True,
)
MaybePartition = Annotated[str | None, typer.Option("--partition", "-p", help="partition key")]


@retention_app.command("show")
def retention_show(partition: MaybePartition = None, data: DataOpt = None,
                   model: ModelOpt = None) -> None:
    """A partition's policy (default, override, effective) and the facts due to expire; or
    the default and every partition's override."""
    from semmem.lifecycle import policies

    if partition is None:
        show(run(data, model, lambda m: policies.show(m)))
    else:
        show(run(data, model, lambda m: policies.due(m, partition)))


@retention_app.command("preview")
def retention_preview(
    policy: Annotated[str, typer.Argument(help="a duration (45s, 30m, 12h, 90d) or never")],
    partition: MaybePartition = None, data: DataOpt = None, model: ModelOpt = None,
) -> None:
    """How many facts POLICY would expire now: in one partition, or (as the default) in every
    partition without an override. Changes nothing."""
    from semmem.lifecycle import policies

    show(run(data, model, lambda m: policies.preview(m, policy, partition)))


@retention_app.command("set")
def retention_set(
    policy: Annotated[str, typer.Argument(help="a duration (45s, 30m, 12h, 90d), never or "
                                               "inherit (the default)")],
    partition: PartitionOpt, data: DataOpt = None, model: ModelOpt = None,
) -> None:
    """Set a partition's policy; the facts it expires now are forgotten at once (run
    `preview` first). Every replica reads the new policy within 2 s."""
    from semmem.lifecycle import policies

    show(run(data, model, lambda m: policies.set_policy(m, partition, policy)))


@retention_app.command("sweep")
def retention_sweep(partition: MaybePartition = None, data: DataOpt = None,
                    model: ModelOpt = None) -> None:
    """Forget the facts expired now (a server does it every SEMMEM_RETENTION_SWEEP_S);
    their texts leave disk at the next maintenance, like any forget."""
    from semmem.lifecycle.sweep import sweep

    found = run(data, model, lambda m: sweep(m, None if partition is None else [partition]))
    show({"expired": found})
