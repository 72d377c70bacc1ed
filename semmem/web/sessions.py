"""The admin API's conversation sessions (admin tokens only): a partition's sessions listed,
one opened (its messages in order), one forgotten whole through the forget path.

The session id travels as a query parameter, like the partition, so any string names exactly
itself.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import Response

from semmem.conversations.sessions import Sessions
from semmem.memory import Memory
from semmem.web.admin import PartitionQ, RuntimeDep, _guarded, _json, require_admin

SessionQ = Annotated[str, Query(min_length=1, description="the session id, exactly")]

router = APIRouter(prefix="/admin", dependencies=[Depends(require_admin)])


@router.get("/sessions")
async def list_sessions(request: Request, rt: RuntimeDep, partition: PartitionQ) -> Response:
    """A partition's sessions, the latest said first: ``{"sessions": [{"sessionId",
    "messages", "pieces", "firstAt", "lastAt"}]}``."""

    async def work(memory: Memory) -> Response:
        return _json({"sessions": await Sessions(memory).list(partition)})

    return await _guarded(request, rt, work)


@router.get("/session")
async def open_session(request: Request, rt: RuntimeDep, partition: PartitionQ,
                       session: SessionQ) -> Response:
    """One session's messages in order, each with its pieces' numbers and texts."""

    async def work(memory: Memory) -> Response:
        return _json({"session": await Sessions(memory).open(partition, session)})

    return await _guarded(request, rt, work)


@router.delete("/session")
async def forget_session(request: Request, rt: RuntimeDep, partition: PartitionQ,
                         session: SessionQ) -> Response:
    """Forget a session whole: every piece through the forget path (numbers never reused,
    texts out of every file within the forget window)."""

    async def work(memory: Memory) -> Response:
        gone = await Sessions(memory).forget(partition, session)
        return _json({"status": "stored", **gone, "count": len(gone["forgotten"])})

    return await _guarded(request, rt, work)
