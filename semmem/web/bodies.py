"""Request bodies within the contract's size limit: refused past 64 KiB while they stream in
(a declared ``Content-Length`` over the limit is refused before any of the body is read).
Responses are fitted to their limit as data, by ``semmem.protocol.fitting``."""

from __future__ import annotations

from starlette.requests import ClientDisconnect, Request

from semmem.contract import MAX_BODY
from semmem.errors import InvalidInput, TooLarge


async def read_body(request: Request, limit: int = MAX_BODY) -> bytes:
    """The request body, read chunk by chunk and abandoned as soon as it passes ``limit``.

    Raises:
        TooLarge: the body (declared or received) is over ``limit`` bytes.
        InvalidInput: the client went away mid-body or sent a bad ``Content-Length``.
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise InvalidInput("Content-Length is not a number")
        if int(declared) > limit:
            raise TooLarge(f"request body is {int(declared)} bytes; the limit is {limit}",
                           {"limit": limit})
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise TooLarge(f"request body is over the limit of {limit} bytes",
                               {"limit": limit})
    except ClientDisconnect:
        raise InvalidInput("the client disconnected before sending the whole body") from None
    return bytes(body)
