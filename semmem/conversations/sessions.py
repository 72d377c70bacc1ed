"""A partition's sessions for owners: listed, one opened (its messages in order), one
forgotten whole through the forget path (durably gone within the forget window)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from semmem.conversations.host import Host
from semmem.conversations.pieces import AT, MESSAGE, PART, PIECE, ROLE, SESSION
from semmem.errors import InvalidArguments, InvalidInput, NotFound
from semmem.items import Item
from semmem.items.address import Address


def _place(item: Item) -> tuple[int, int]:
    piece = item.attrs.get(PIECE)
    if not isinstance(piece, dict):
        return (-1, -1)
    message, part = piece.get(MESSAGE), piece.get(PART)
    return (message if isinstance(message, int) else -1, part if isinstance(part, int) else -1)


def messages(pieces: Sequence[Item]) -> list[dict[str, Any]]:
    """A session's pieces as its messages, in order: ``{"message", "role", "at", "items":
    [{"n", "text"}, …]}`` (a message some of whose pieces were forgotten shows the rest)."""
    out: dict[int, dict[str, Any]] = {}
    for it in sorted(pieces, key=lambda it: (*_place(it), it.n)):
        piece = it.attrs.get(PIECE)
        piece = piece if isinstance(piece, dict) else {}
        index = _place(it)[0]
        entry = out.setdefault(index, {"message": index, "role": piece.get(ROLE),
                                       "at": piece.get(AT), "items": []})
        entry["items"].append({"n": it.n, "text": it.text})
    return list(out.values())


def summary(session: Address, pieces: Sequence[Item]) -> dict[str, Any]:
    """One line of a partition's session list."""
    ats = sorted(str(p[AT]) for it in pieces
                 if isinstance(p := it.attrs.get(PIECE), dict) and p.get(AT))
    return {"sessionId": session.key, "messages": len({_place(it)[0] for it in pieces}),
            "pieces": len(pieces), "firstAt": ats[0] if ats else None,
            "lastAt": ats[-1] if ats else None}


def session_address(session_id: str) -> Address:
    """The address of a session an owner names.

    Raises:
        InvalidInput: not a valid session id (a parameter of the owner's request).
    """
    try:
        return Address.of(SESSION, session_id)
    except InvalidArguments as exc:
        raise InvalidInput(exc.message.replace("key", "session id", 1)) from None


class Sessions:
    """The sessions of a memory's partitions (owners' doors: CLI, admin API, console)."""

    def __init__(self, host: Host) -> None:
        self.keyed = host.keyed

    async def list(self, partition: str) -> list[dict[str, Any]]:
        """Every session with a live piece, the latest said first."""
        found = await self.keyed.keys(partition, SESSION)
        rows = [summary(address, pieces) for address, pieces in found.items()]
        return sorted(rows, key=lambda r: (r["lastAt"] or "", r["sessionId"]), reverse=True)

    async def open(self, partition: str, session_id: str) -> dict[str, Any]:
        """A session's messages in order.

        Raises:
            NotFound: no live piece of that session.
            InvalidInput: not a valid session id.
        """
        address = session_address(session_id)
        pieces = await self.keyed.pieces(partition, address)
        if not pieces:
            raise NotFound("no such session in this memory")
        return {**summary(address, pieces), "messages": messages(pieces)}

    async def forget(self, partition: str, session_id: str) -> dict[str, Any]:
        """Forget every piece of a session (tombstones: numbers never reused; texts purged
        within the forget window).

        Raises:
            NotFound: no live piece of that session. InvalidInput: not a valid session id.
        """
        address = session_address(session_id)
        gone = await self.keyed.forget(partition, address)
        if not gone:
            raise NotFound("no such session in this memory")
        return {"sessionId": session_id, "forgotten": sorted(gone)}
