"""The ``semmem`` command line: thin calls into the same core the server uses."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from semmem.cli.backup import backup_app
from semmem.cli.help import HelpGroup, print_version
from semmem.cli.model import model_app
from semmem.cli.options import DataOpt, ModelOpt, PartitionOpt, errors, run, settings, show
from semmem.cli.passes import check, maintain, reindex
from semmem.cli.retention import retention_app
from semmem.cli.scoped import (
    CreatedAfterOpt,
    CreatedBeforeOpt,
    MetaOpt,
    UpdatedAfterOpt,
    UpdatedBeforeOpt,
    filter_of,
    forget_matching,
    metadata,
)
from semmem.cli.sessions import ingest, sessions_app
from semmem.errors import InvalidArguments
from semmem.items import one_line
from semmem.memory import Memory
from semmem.protocol.jsonio import jsonl_line

app = typer.Typer(
    name="semmem",
    cls=HelpGroup,
    help="Semantic memory provider: numbered facts, relevant recall within a byte budget.\n\n"
         "Start with `semmem serve`: it needs a bearer token, SEMMEM_TOKENS=one,two (or "
         "SEMMEM_TOKENS_FILE, a file with one token per line), or --insecure on loopback. "
         "Every option is also an environment variable, SEMMEM_<NAME> (README, "
         "docs/operating.md).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(model_app, name="model")
app.add_typer(backup_app, name="backup")
app.add_typer(retention_app, name="retention")
app.command("forget-matching")(forget_matching)
app.command("ingest")(ingest)
app.add_typer(sessions_app, name="sessions")


@app.callback()
def _top(version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=print_version,
        help="print semmem's version and exit")] = False) -> None:
    pass


@app.command()
def serve(
    data: DataOpt = None,
    model: ModelOpt = None,
    host: Annotated[str | None, typer.Option(
        envvar="SEMMEM_HOST", show_default="127.0.0.1",
        help="address to listen on (0.0.0.0: every interface)")] = None,
    port: Annotated[int | None, typer.Option(
        envvar="SEMMEM_PORT", show_default="8080", help="port to listen on")] = None,
    path: Annotated[str | None, typer.Option(
        envvar="SEMMEM_PATH", show_default="/memory", help="endpoint path")] = None,
    ranking: Annotated[Path | None, typer.Option(
        envvar="SEMMEM_RANKING", help="JSON ranking file (README, \"Tuning ranking\")")] = None,
    insecure: Annotated[bool, typer.Option(help="no auth; loopback only")] = False,
) -> None:
    """Serve the HTTP memory provider contract.

    Needs a bearer token: SEMMEM_TOKENS=one,two (comma-separated; SEMMEM_ADMIN_TOKENS for
    the owner's calls), or SEMMEM_TOKENS_FILE (one token per line), or --insecure on
    loopback. Every setting is also SEMMEM_<NAME> (docs/operating.md)."""
    from semmem.web.server import serve as run_server

    chosen = settings(data, model, host=host, port=port, path=path, ranking=ranking,
                      insecure=insecure or None)
    with errors():
        run_server(chosen)


@app.command()
def mcp(
    partition: Annotated[str | None, typer.Option(
        "--partition", "-p", envvar="SEMMEM_MCP_PARTITION", help="default: OS user name")] = None,
    read_only: Annotated[bool, typer.Option("--read-only", help="refuse the write tools")] = False,
    data: DataOpt = None, model: ModelOpt = None,
) -> None:
    """Serve MCP on stdin/stdout for one partition (the command an MCP host runs)."""
    from semmem.mcp.server import run_stdio

    with errors():
        run_stdio(settings(data, model, mcp_partition=partition), writable=not read_only)


@app.command()
def declare(
    path: Annotated[str, typer.Option(help="endpoint path in the declaration")] = "/memory",
    max_bytes: Annotated[int, typer.Option("--max-bytes")] = 8192,
    json_only: Annotated[bool, typer.Option("--json", help="print only the tools JSON")] = False,
) -> None:
    """Print the httpMemory provider declaration (TypeScript) and the tools JSON.

    With SEMMEM_READ_CONSISTENCY_MS above zero, the write tools describe their results as
    'accepted', as the server then answers; with SEMMEM_TOOL_EXPIRY, remember takes an
    optional expires_at."""
    from semmem.protocol.declaration import render_declaration
    from semmem.settings import Settings

    with errors():
        chosen = Settings()
        typer.echo(render_declaration(path=path, max_bytes=max_bytes, json_only=json_only,
                                      accepted=chosen.read_consistency_ms > 0,
                                      expiry=chosen.tool_expiry,
                                      metadata=chosen.tool_metadata))


@app.command()
def remember(
    text: str, partition: PartitionOpt,
    expires: Annotated[str | None, typer.Option(
        "--expires", help="when the fact ends (ISO 8601, e.g. 2026-09-10T18:00:00Z)")] = None,
    meta: MetaOpt = None, data: DataOpt = None, model: ModelOpt = None,
) -> None:
    """Store a fact; prints its number."""
    with errors():
        labels = metadata(meta)
    show(run(data, model, lambda m: m.remember(partition, text, expires_at=expires,
                                               metadata=labels)))


@app.command()
def recall(
    partition: PartitionOpt,
    text: Annotated[str | None, typer.Argument(help="current input; omit for newest")] = None,
    max_bytes: Annotated[int, typer.Option("--max-bytes")] = 1024,
    data: DataOpt = None,
    model: ModelOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="the wire response")] = False,
) -> None:
    """Show what a host would receive for this input and budget."""
    result = run(data, model, lambda m: m.recall(partition, text, max_bytes))
    if as_json:
        show(result.wire())
    else:
        typer.echo(result.text)


@app.command()
def search(
    query: str,
    partition: PartitionOpt,
    limit: Annotated[int, typer.Option()] = 10,
    meta: MetaOpt = None, updated_after: UpdatedAfterOpt = None,
    updated_before: UpdatedBeforeOpt = None, created_after: CreatedAfterOpt = None,
    created_before: CreatedBeforeOpt = None,
    data: DataOpt = None,
    model: ModelOpt = None,
) -> None:
    """The items most similar to QUERY, with scores (among those the filter options cover)."""
    with errors():
        flt = filter_of(meta, updated_after, updated_before, created_after, created_before)
    show(run(data, model, lambda m: m.search(partition, query, limit, filter=flt)))


@app.command()
def update(
    n: int,
    partition: PartitionOpt,
    text: Annotated[str | None, typer.Argument()] = None,
    note: Annotated[str | None, typer.Option(help="owner note ('' clears)")] = None,
    status: Annotated[str | None, typer.Option(help="e.g. active, inactive ('' clears)")] = None,
    surfacing: Annotated[str | None, typer.Option(help="'hold' stops recall ('' clears)")] = None,
    expires: Annotated[str | None, typer.Option(
        "--expires", help="when the fact ends, ISO 8601 ('' clears)")] = None,
    meta: Annotated[list[str] | None, typer.Option(
        "--meta", help="key=value, replacing the metadata (repeat; --meta '' clears)")] = None,
    data: DataOpt = None,
    model: ModelOpt = None,
) -> None:
    """Replace item N's text and/or its record fields, keeping its number."""
    attrs: dict[str, Any] = {
        k: (v or None) for k, v in {"note": note, "status": status, "surfacing": surfacing,
                                    "expiresAt": expires}.items() if v is not None
    }
    if meta is not None:
        with errors():
            attrs["metadata"] = metadata([p for p in meta if p]) or {}
    if text is None and not attrs:
        with errors():
            raise InvalidArguments("give a new text or a record field to change")
    show(run(data, model, lambda m: m.update(partition, n, text, attrs=attrs)))


@app.command()
def merge(
    n: int,
    partition: PartitionOpt,
    into: Annotated[int, typer.Option("--into", help="the item N was merged into")],
    data: DataOpt = None,
    model: ModelOpt = None,
) -> None:
    """Mark item N as merged into item M: it stays on file but is no longer recalled."""

    show(run(data, model, lambda m: m.merge(partition, n, into)))


@app.command()
def forget(n: int, partition: PartitionOpt, data: DataOpt = None,
           model: ModelOpt = None) -> None:
    """Forget item N; its text leaves disk at the next maintenance (see `maintain`)."""
    show(run(data, model, lambda m: m.forget(partition, n)))


@app.command("list")
def list_items(
    partition: PartitionOpt,
    offset: Annotated[int, typer.Option()] = 0,
    limit: Annotated[int | None, typer.Option()] = None,
    newest: Annotated[bool, typer.Option(help="newest first")] = False,
    meta: MetaOpt = None, updated_after: UpdatedAfterOpt = None,
    updated_before: UpdatedBeforeOpt = None, created_after: CreatedAfterOpt = None,
    created_before: CreatedBeforeOpt = None,
    data: DataOpt = None,
    model: ModelOpt = None,
) -> None:
    """List items as recall renders them (those the filter options cover)."""
    with errors():
        flt = filter_of(meta, updated_after, updated_before, created_after, created_before)
    items = run(data, model, lambda m: m.list(partition, offset=offset, limit=limit,
                                               newest_first=newest, filter=flt))
    from semmem.ranking.packing import render_line

    for item in items:
        typer.echo(render_line(item))


@app.command()
def similar(
    partition: PartitionOpt,
    threshold: Annotated[float | None, typer.Option(
        min=-1, max=1, help="least cosine (default: the write hints' threshold)")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    data: DataOpt = None,
    model: ModelOpt = None,
) -> None:
    """List groups of facts that probably restate or supersede each other (closest pair's
    group first; in each, newest first with its best match and their similarity)."""
    found = run(data, model, lambda m: m.similar(partition, threshold))
    if as_json:
        show({"groups": [g.public() for g in found]})
        return
    for i, group in enumerate(found):
        if i:
            typer.echo("")
        for member in group.members:
            text = one_line(member.item.text)
            typer.echo(f"{member.item.n}. {text}  (~#{member.to} {member.score:.2f})")


@app.command()
def export(
    partition: PartitionOpt,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="file (default stdout)")] = None,
    data: DataOpt = None,
    model: ModelOpt = None,
) -> None:
    """Write every item of a partition as JSONL."""

    async def go(m: Memory) -> list[dict[str, Any]]:
        return [rec async for rec in m.export(partition)]

    records = run(data, model, go)
    lines = "".join(jsonl_line(r) for r in records)
    if out is None:
        sys.stdout.write(lines)
    else:
        out.write_text(lines, encoding="utf-8")
        typer.echo(f"exported {len(records)} items to {out}", err=True)


@app.command("import")
def import_items(
    partition: PartitionOpt,
    source: Annotated[Path, typer.Argument(help="JSONL or slug-keyed JSON map ('-': stdin)")],
    batch_size: Annotated[int, typer.Option()] = 256,
    display_field: Annotated[str, typer.Option(help="map of records: the text field")] = "text",
    note_field: Annotated[str | None, typer.Option(help="map of records: the note field")] = None,
    data: DataOpt = None,
    model: ModelOpt = None,
) -> None:
    """Import records (JSONL, or a JSON map keyed by slug), embedding in batches."""
    from tqdm import tqdm

    from semmem.importing import read_records

    with errors():
        records = read_records(source, display_field=display_field, note_field=note_field)

    async def go(m: Memory) -> Any:
        with tqdm(total=len(records), unit="fact", disable=None) as bar:
            return await m.import_(partition, records, batch_size=batch_size,
                                   progress=bar.update)

    report = run(data, model, go)
    show({"imported": report.imported, "duplicates": report.duplicates,
            "batches": report.batches})


@app.command("delete-partition")
def delete_partition(
    partition: PartitionOpt,
    yes: Annotated[bool, typer.Option("--yes", help="confirm")] = False,
    data: DataOpt = None,
    model: ModelOpt = None,
) -> None:
    """Delete a partition and every file of it."""
    if not yes:
        typer.echo("error: deleting a partition cannot be undone; add --yes", err=True)
        raise typer.Exit(1)
    existed = run(data, model, lambda m: m.delete_partition(partition))
    show({"deleted": existed})


@app.command()
def stats(
    partition: Annotated[str | None, typer.Option("--partition", "-p")] = None,
    data: DataOpt = None,
    model: ModelOpt = None,
) -> None:
    """Counters of one partition, or the list of partitions."""

    async def go(m: Memory) -> Any:
        if partition is not None:
            return await m.stats(partition)
        names = await m.owned_partitions()
        return {"partitions": len(names), "names": names[:100]}

    show(run(data, model, go))


app.command()(maintain)
app.command()(check)
app.command()(reindex)


@app.command("eval")
def evaluate(
    dataset: Annotated[Path, typer.Option(help="labelled JSONL file or LoCoMo folder")],
    ranking: Annotated[Path | None, typer.Option(help="JSON ranking file to evaluate")] = None,
    model: ModelOpt = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Measure ranking quality on a labelled set against plain cosine and the whole list."""
    from semmem.evaluation import run_cli

    with errors():
        typer.echo(run_cli(dataset, ranking=ranking, model=model, as_json=as_json,
                           encoder=settings().encoder))
