"""``semmem ingest`` (a JSONL of messages into a partition's sessions, at bulk-import speed)
and ``semmem sessions list | show | forget`` (an owner's view of them)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from semmem.cli.options import DataOpt, ModelOpt, PartitionOpt, errors, run, show
from semmem.errors import InvalidArguments, InvalidInput
from semmem.memory import Memory

sessions_app = typer.Typer(help="A partition's conversation sessions: list, show, forget.",
                           no_args_is_help=True)


def read_messages(source: Path) -> list[tuple[str, list[Any]]]:
    """A JSONL of ``{"sessionId", "role", "content", "at"?}`` lines ('-': stdin), as each
    session's messages in file order (sessions in order of first appearance).

    Raises:
        InvalidInput: a line that is not such an object (named by its number).
    """
    from semmem.conversations.messages import message
    from semmem.items import now_ms
    from semmem.protocol.jsonio import jsonl_lines

    raw = sys.stdin.read() if str(source) == "-" else source.read_text(encoding="utf-8")
    now = now_ms()
    sessions: dict[str, list[Any]] = {}
    for lineno, line in jsonl_lines(raw):
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            raise InvalidInput(f"{source}:{lineno}: not JSON") from None
        if not isinstance(record, dict) or not isinstance(record.get("sessionId"), str) \
                or not record["sessionId"]:
            raise InvalidInput(f"{source}:{lineno}: expected an object with a 'sessionId'")
        fields = {k: v for k, v in record.items() if k != "sessionId"}
        try:
            parsed = message(fields, lineno, now)
        except InvalidArguments as exc:
            raise InvalidInput(f"{source}:{lineno}: "
                               f"{exc.message.replace(f'messages[{lineno}]', 'message')}"
                               ) from None
        sessions.setdefault(record["sessionId"], []).append(parsed)
    return list(sessions.items())


def ingest(
    partition: PartitionOpt,
    source: Annotated[Path, typer.Argument(
        help="JSONL: {sessionId, role, content, at?} per line ('-': stdin)")],
    data: DataOpt = None, model: ModelOpt = None,
) -> None:
    """Ingest conversations: each message stored as pieces in its session (a message a
    session already holds is not stored again)."""
    from semmem.conversations.ingest import Conversations
    from semmem.conversations.pieces import SESSION
    from semmem.items.address import Address

    with errors():
        found = read_messages(source)
        sessions = [(Address.of(SESSION, sid), msgs) for sid, msgs in found]

    async def go(m: Memory) -> list[dict[str, Any]]:
        return await Conversations(m).ingest_many(partition, sessions)

    results = run(data, model, go)
    show({"sessions": len(results), "messages": sum(len(ms) for _, ms in found),
          "pieces": len({n for r in results for ns in r["items"] for n in ns}),
          "count": results[-1]["count"] if results else 0})


@sessions_app.command("list")
def list_sessions(partition: PartitionOpt, data: DataOpt = None,
                  model: ModelOpt = None) -> None:
    """The partition's sessions, the latest said first."""
    from semmem.conversations.sessions import Sessions

    show(run(data, model, lambda m: Sessions(m).list(partition)))


@sessions_app.command("show")
def show_session(session: str, partition: PartitionOpt, data: DataOpt = None,
                 model: ModelOpt = None) -> None:
    """One session's messages in order, with their pieces' numbers."""
    from semmem.conversations.sessions import Sessions

    show(run(data, model, lambda m: Sessions(m).open(partition, session)))


@sessions_app.command("forget")
def forget_session(session: str, partition: PartitionOpt,
                   yes: Annotated[bool, typer.Option("--yes", help="confirm")] = False,
                   data: DataOpt = None, model: ModelOpt = None) -> None:
    """Forget a session whole (its texts leave every file once a server or `semmem maintain`
    purges them)."""
    from semmem.conversations.sessions import Sessions

    if not yes:
        typer.echo("error: forgetting a session cannot be undone; add --yes", err=True)
        raise typer.Exit(1)
    show(run(data, model, lambda m: Sessions(m).forget(partition, session)))
